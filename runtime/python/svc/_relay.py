"""The platform's address inside a worker's own network namespace (docs/platform.md, "Threat model").

A sandboxed worker reaches the platform only through the Unix socket bound into it (SVC_PLATFORM_SOCKET);
the runtime's own requests go there directly (./_http.py). The user's code may use the platform's URL
with clients of its own (boto3 on the volume's S3 API, urllib on PLATFORM_API_URL): this relay listens
on that address's port inside the namespace and copies each connection to the socket, so the same URL
works in and out of the sandbox. Under `svc run` the dev server's port comes the same way, through a
socket of the worker's own that the platform connects to it. SVC_PLATFORM_RELAY lists them:
`host:port=socket`, separated by `;`.
"""
import contextlib
import os
import socket
import threading
from typing import Mapping

from ._log import logger

_CHUNK = 256 * 1024


def start(environ: Mapping[str, str] = os.environ) -> None:
    for relay in filter(None, environ.get("SVC_PLATFORM_RELAY", "").split(";")):
        address, _, path = relay.partition("=")
        host, _, port = address.rpartition(":")
        try:
            listener = socket.create_server((host, int(port)), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        except (OSError, ValueError) as err:
            logger.warning("%s is not relayed in this sandbox (%s): only svc's own calls reach the platform", address, err)
            continue
        threading.Thread(target=_accept, args=(listener, path), name="svc-platform-relay", daemon=True).start()


def _accept(listener: socket.socket, path: str) -> None:
    while True:
        conn, _ = listener.accept()
        try:
            threading.Thread(target=_relay, args=(conn, path), name="svc-platform-relay-conn", daemon=True).start()
        except RuntimeError:  # no thread to be had (the worker's process limit): this connection only is refused
            conn.close()


def _relay(conn: socket.socket, path: str) -> None:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        up.close()
        return
    back = threading.Thread(target=_copy, args=(up, conn), name="svc-platform-relay-back", daemon=True)
    try:
        back.start()
    except RuntimeError:  # no thread to be had (the worker's process limit): this connection only ends
        conn.close()
        up.close()
        return
    _copy(conn, up)
    back.join()
    conn.close()
    up.close()


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(_CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
