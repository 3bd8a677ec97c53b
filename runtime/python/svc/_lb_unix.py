"""A load-balanced worker's server on a Unix socket (SVC_LB_SOCKET): in the sandbox the worker has a
network namespace of its own, and the platform's proxy reaches it through this socket, which lies in a
folder of the platform's that no other worker sees (docs/platform.md, "Threat model"). The same
server as on a port (./_lb_server.py); only the listening socket differs."""
from ._lb_server import LBApp, LBServer, UnavailableApp, limits_from_env
from ._lb_transport import unix_listener


def make_unix_server(app: "LBApp | UnavailableApp", path: str) -> LBServer:
    return LBServer(app, unix_listener(path), **limits_from_env())
