"""A loopback relay into the node's network namespace: 127.0.0.1:PORT there -> 127.0.0.1:PORT here.

The node's components (kubelet, kube-proxy, kube-router, CoreDNS) run inside the node's network
namespace, whose loopback is its own; they reach the apiserver on the host's loopback through this
relay, with the same URL and TLS certificate as every other client. With ADDR it also listens on
ADDR:PORT there (the node's own address), which is what the `kubernetes` Service's endpoint names: the
in-cluster API path of the pods on the node (a Ray pod claiming a sandbox with its token). The listening
sockets are made inside the namespace, then the process returns to the host's namespace, so every
connection it opens goes to the host's 127.0.0.1 and nowhere else.

    python -m generator.playground.node.relay NETNS_FILE PORT [ADDR]
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000
LOOPBACK = "127.0.0.1"


def setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def listen_in(netns_file: str, port: int, addr: str = LOOPBACK) -> socket.socket:
    """A listening socket on `addr`:`port` inside `netns_file`; the caller's thread returns home."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(netns_file, os.O_RDONLY)
    try:
        setns(target)
        try:
            sock = socket.create_server((addr, port), backlog=128)
        finally:
            setns(home)
    finally:
        os.close(home)
        os.close(target)
    return sock


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _serve_one(client: socket.socket, port: int) -> None:
    try:
        upstream = socket.create_connection((LOOPBACK, port), timeout=10)
        upstream.settimeout(None)
    except OSError:
        client.close()
        return
    threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
    _pipe(upstream, client)
    client.close()
    upstream.close()


def _accept(server: socket.socket, port: int) -> None:
    while True:
        client, _ = server.accept()
        threading.Thread(target=_serve_one, args=(client, port), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or not argv[1].isdigit():
        print("usage: python -m generator.playground.node.relay NETNS_FILE PORT [ADDR]", file=sys.stderr)
        return 2
    port = int(argv[1])
    servers = [listen_in(argv[0], port, addr) for addr in (LOOPBACK, *argv[2:])]
    for server in servers:
        print(f"relay: {server.getsockname()[0]}:{port} in {argv[0]} -> 127.0.0.1:{port} on the host", flush=True)
    for server in servers[1:]:
        threading.Thread(target=_accept, args=(server, port), daemon=True).start()
    _accept(servers[0], port)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
