"""What a Ray pod of the release does with the reference claim client (generator/in_image/sandbox_client.py), in steps a
test or the bench can drive one `kubectl exec` at a time. Shipped beside sandbox_client.py in a ConfigMap and run
in a pod of the Ray image as the release's Ray account, with the env the chart gives the GPU pods:

    python3 /episode/episode_job.py claim              -> {"claim", "url", "bound_s"}   (held: no release)
    python3 /episode/episode_job.py task URL COMMAND   -> the executor's answer
    python3 /episode/episode_job.py release NAME       -> {"released"}
    python3 /episode/episode_job.py timed N            -> N episodes one after another: claim -> first task answered
    python3 /episode/episode_job.py ahead N PAUSE      -> N episodes of PAUSE s, each claimed during the one before
    python3 /episode/episode_job.py pool URL N         -> N task round trips through the pool's Service URL

Standard library only, like the client (the Ray image's python3 runs it). Every line printed is one JSON object.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request

sys.path.insert(0, "/episode")
from sandbox_client import Ahead, Claims, Executor


def task(url: str, command: str) -> dict:
    return Executor("", url).submit({"command": command, "timeout": 60}, timeout=90)


def post(url: str) -> float:
    """One task round trip to `url` (the pool's Service), in seconds."""
    t0 = time.monotonic()
    req = urllib.request.Request(url + "/task/submit", data=json.dumps({"command": "true"}).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        json.loads(resp.read())
    return time.monotonic() - t0


def main(argv: list[str]) -> int:
    verb, args = argv[0], argv[1:]
    if verb == "claim":
        claims = Claims.from_env()
        t0 = time.monotonic()
        name = claims.claim()
        executor = claims.wait_bound(name, 180)
        print(json.dumps({"claim": name, "url": executor.url, "bound_s": round(time.monotonic() - t0, 3)}))
    elif verb == "task":
        print(json.dumps(task(args[0], args[1])))
    elif verb == "release":
        Claims.from_env().release(args[0])
        print(json.dumps({"released": args[0]}))
    elif verb == "timed":
        claims = Claims.from_env()
        for _ in range(int(args[0])):
            t0 = time.monotonic()
            name = claims.claim()
            try:
                executor = claims.wait_bound(name, 180)
                bound = time.monotonic() - t0
                answer = executor.submit({"command": "true"})
                first = time.monotonic() - t0
            finally:
                claims.release(name)
            print(json.dumps({"claim": name, "bound_s": bound, "first_task_s": first,
                              "exit_code": answer.get("exit_code")}), flush=True)
    elif verb == "ahead":
        pause = float(args[1])  # each episode's own work, during which the next claim binds
        with Ahead(Claims.from_env()) as ahead:
            time.sleep(pause)  # the first claim binds as it would during an earlier episode
            for _ in range(int(args[0])):
                t0 = time.monotonic()
                name, executor = ahead.take()
                try:
                    answer = executor.submit({"command": "true"})
                    first = time.monotonic() - t0
                    time.sleep(pause)
                finally:
                    ahead.claims.release(name)
                print(json.dumps({"claim": name, "first_task_s": first, "exit_code": answer.get("exit_code")}),
                      flush=True)
    elif verb == "pool":
        for _ in range(int(args[1])):
            print(json.dumps({"round_trip_s": post(args[0])}), flush=True)
    else:
        print(f"unknown step {verb!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
