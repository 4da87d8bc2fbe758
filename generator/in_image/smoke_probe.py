"""`dockyard-k8s smoke`'s probe: the Ray job's entrypoint in place of the recipe's (needs Python + Ray only).

Shipped in the recipe ConfigMap as probe.py and run on the Ray head as
    python3 <mount>/probe.py --expect JSON --config <mount>/recipe.yaml [overrides the chart appends]
It checks the cluster the chart made and prints one line per row, `DOCKYARD-SMOKE {"ok", "row", "detail"}`,
then exits 0 when every row holds, 1 otherwise. `smoke` reads these lines from the driver's log.
Standard library and `ray` only: it runs in the user's image.
"""

import argparse
import hashlib
import json
import os
import sys
import time
import urllib.error
import urllib.request

MARK = "DOCKYARD-SMOKE"  # the one definition: the `smoke` verb imports it from here to read these lines
ROLES = ("trainer", "inference")


def emit(ok, row, detail):
    print(f"{MARK} " + json.dumps({"ok": bool(ok), "row": row, "detail": detail}), flush=True)
    return bool(ok)


def fleets_of(ray):
    """{role: {"nodes": n, "fleet": amount, "gpus": gpus}} summed over the alive Ray nodes."""
    out = {r: {"nodes": 0, "fleet": 0.0, "gpus": 0.0} for r in ROLES}
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        res = node.get("Resources") or {}
        for r in ROLES:
            amount = res.get(f"dockyard_fleet_{r}", 0)
            if amount:
                out[r]["nodes"] += 1
                out[r]["fleet"] += amount
                out[r]["gpus"] += res.get("GPU", 0)
    return out


def check_resources(ray, expect, wait):
    deadline = time.monotonic() + wait
    while True:
        seen = fleets_of(ray)
        good = all(seen[r]["fleet"] == expect[r]["nodes"] and seen[r]["gpus"] == expect[r]["nodes"] * expect[r]["gpus"]
                   for r in ROLES)
        if good or time.monotonic() > deadline:
            break
        time.sleep(1)
    ok = True
    for r in ROLES:
        want_fleet, want_gpus = expect[r]["nodes"], expect[r]["nodes"] * expect[r]["gpus"]
        got = seen[r]
        ok &= emit(got["fleet"] == want_fleet, f"fleet resource dockyard_fleet_{r}",
                   f"{got['fleet']:g} in the cluster, the recipe implies {want_fleet} (one per {r} node)")
        ok &= emit(got["gpus"] == want_gpus, f"GPUs of the {r} fleet",
                   f"{got['gpus']:g} on the nodes holding dockyard_fleet_{r}, the recipe implies {want_gpus} "
                   f"({want_fleet} x {expect[r]['gpus']})")
    return ok


def check_tasks(ray, expect, timeout):
    ok = True

    @ray.remote(num_cpus=0)
    def env():
        names = ("DOCKYARD_FLEET_ROLE", "RAY_ENABLE_UV_RUN_RUNTIME_ENV", "DOCKYARD_SANDBOX_URLS")
        return {k: os.environ.get(k) for k in names}

    for r in ROLES:
        tag = f"dockyard_fleet_{r}"
        try:
            got = ray.get(env.options(resources={tag: 0.001}).remote(), timeout=timeout)
        except Exception as exc:
            ok &= emit(False, f"task pinned to {tag}", f"did not run: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        ok &= emit(got["DOCKYARD_FLEET_ROLE"] == r, f"DOCKYARD_FLEET_ROLE in a {r} task",
                   f"{got['DOCKYARD_FLEET_ROLE']!r} (expected {r!r})")
        ok &= emit(got["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0", f"RAY_ENABLE_UV_RUN_RUNTIME_ENV in a {r} task",
                   f"{got['RAY_ENABLE_UV_RUN_RUNTIME_ENV']!r} (expected '0')")
        if expect.get("sandbox_urls"):
            ok &= emit(got["DOCKYARD_SANDBOX_URLS"] == expect["sandbox_urls"], f"DOCKYARD_SANDBOX_URLS in a {r} task",
                       f"{got['DOCKYARD_SANDBOX_URLS']!r}")
    return ok


def check_placement_groups(ray, expect, timeout):
    from ray.util.placement_group import placement_group, remove_placement_group

    ok = True
    for r in ROLES:
        n, g = expect[r]["nodes"], expect[r]["gpus"]
        bundle = {f"dockyard_fleet_{r}": 1}
        if g:
            bundle["GPU"] = g
        pg = placement_group([dict(bundle) for _ in range(n)], strategy="STRICT_SPREAD")
        try:
            ready = bool(ray.get(pg.ready(), timeout=timeout))
            detail = f"{n} bundle(s) of {bundle}, STRICT_SPREAD: ready"
        except Exception as exc:
            ready, detail = False, f"{n} bundle(s) of {bundle}: not ready after {timeout:g}s ({type(exc).__name__})"
        finally:
            remove_placement_group(pg)
        ok &= emit(ready, f"placement group on the {r} fleet", detail)
    return ok


def check_recipe(path, want):
    try:
        data = open(path, "rb").read()
    except OSError as exc:
        return emit(False, "recipe at its mount path", f"{path}: {exc.strerror}")
    got = hashlib.sha256(data).hexdigest()
    return emit(got == want, "recipe at its mount path", f"{path}: sha256 {got[:12]} "
                + ("= what render shipped" if got == want else f"!= what render shipped ({want[:12]})"))


def check_sandbox(urls, timeout):
    if not urls:
        return emit(False, "sandbox POST /task/submit", "DOCKYARD_SANDBOX_URLS is not set on the head")
    ok = True
    for url in [u for u in (urls or "").split(",") if u]:
        req = urllib.request.Request(url.rstrip("/") + "/task/submit", method="POST",
                                     data=json.dumps({"command": "echo dockyard-smoke"}).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                code = resp.status
        except urllib.error.HTTPError as exc:
            code = exc.code
        except Exception as exc:
            why = str(getattr(exc, "reason", exc))[:160]
            ok &= emit(False, "sandbox POST /task/submit", f"{url}: {type(exc).__name__}: {why}")
            continue
        ok &= emit(code < 500, "sandbox POST /task/submit", f"{url}: HTTP {code}")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect", required=True, help="JSON: fleets, recipe sha256, sandbox URLs, waits")
    ap.add_argument("--config", required=True, help="the recipe's mount path (the chart appends it)")
    args, _rest = ap.parse_known_args(argv)
    expect = json.loads(args.expect)
    import ray

    ray.init(log_to_driver=False)
    wait = float(expect.get("wait", 120))
    ok = check_resources(ray, expect, wait)
    ok &= check_tasks(ray, expect, wait)
    ok &= check_placement_groups(ray, expect, min(wait, 30))
    ok &= check_recipe(args.config, expect["recipe_sha256"])
    if expect.get("sandbox_urls") is not None:
        ok &= check_sandbox(os.environ.get("DOCKYARD_SANDBOX_URLS", ""), 10)
    print(f"{MARK}-END " + json.dumps({"ok": bool(ok)}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
