"""A load-balanced worker's server on a Unix socket (SVC_LB_SOCKET): in the sandbox the worker has a
network namespace of its own, and the platform's proxy reaches it through this socket, which lies in a
folder of the platform's that no other worker sees (docs/platform.md, "Threat model"). The same
server as on a port (./_lb_server.py); only the listening socket differs."""
import contextlib
import os
import socket
import socketserver
from typing import Any

from ._lb_server import LBApp, LBServer, UnavailableApp


class UnixLBServer(LBServer):
    address_family = socket.AF_UNIX

    def __init__(self, app: "LBApp | UnavailableApp", path: str) -> None:
        self.unix_path = path
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a previous worker's, in a folder only this worker has
        super().__init__(app, 0)

    def server_bind(self) -> None:  # HTTPServer's reads a host and port from the address
        self.server_address = self.unix_path
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "localhost", 0

    def finish_request(self, request: Any, client_address: Any) -> None:
        # A Unix peer has no address; the handler's log lines name one.
        super().finish_request(request, ("platform", 0))


def make_unix_server(app: "LBApp | UnavailableApp", path: str) -> UnixLBServer:
    return UnixLBServer(app, path)
