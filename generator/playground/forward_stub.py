"""What a port-forward to a simulated pod reaches: kwok runs this per connection, wired to its
stdin/stdout (ClusterPortForward `command`), so no socket is opened anywhere. It answers one HTTP
request with a line naming the simulated service, then exits.

usage: forward_stub.py NAME
"""

import sys


def main() -> int:
    name = sys.argv[1] if len(sys.argv) > 1 else "service"
    request = sys.stdin.buffer.readline().decode("latin-1").strip()
    while sys.stdin.buffer.readline() not in (b"\r\n", b"\n", b""):
        pass  # headers
    body = (f"[dockyard-k8s playground] simulated {name}: no process runs in a kwok pod; "
            f"this answer comes through a real port-forward ({request or 'no request line'})\n").encode()
    sys.stdout.buffer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                            + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
