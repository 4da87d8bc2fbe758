"""playground/forward_stub.py: what a port-forward to a simulated (kwok) pod reaches. kwok runs it per connection
on the connection's stdin/stdout; it reads one HTTP request (line and headers) and answers one complete HTTP
response naming the simulated service and the request, then exits. Run here as kwok runs it."""

from __future__ import annotations

import subprocess
import sys

from generator.playground import forward_stub


def test_one_request_gets_one_complete_answer_naming_the_service():
    request = b"GET /task/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n"
    done = subprocess.run([sys.executable, forward_stub.__file__, "small-sandbox"], input=request,
                          capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    head, body = done.stdout.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK" and "Connection: close" in lines
    assert f"Content-Length: {len(body)}" in lines
    assert body.decode().startswith("[dockyard-k8s playground] simulated small-sandbox: no process runs")
    assert "(GET /task/status HTTP/1.1)" in body.decode()


def test_a_connection_closed_without_a_request_still_gets_an_answer():
    done = subprocess.run([sys.executable, forward_stub.__file__], input=b"", capture_output=True, timeout=30)
    assert done.returncode == 0 and b"simulated service" in done.stdout and b"(no request line)" in done.stdout
