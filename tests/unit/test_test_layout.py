"""Tests mirror the code: a reader looking for the tests of a module finds them by its name.

The rule, for every module under generator/ (a `.py` file; `__init__.py`, `__main__.py` and EXEMPT aside):

- A module's *names* are the trailing parts of its dotted path, "generator" included, joined with `_`: for
  generator/live/state/follow.py `follow`, `state_follow`, `live_state_follow`, `generator_live_state_follow`. A
  name that two modules share names neither (generator/cli.py, live/cli.py and playground/cli.py share `cli`, so
  their names are `generator_cli`, `live_cli` and `playground_cli`).
- A test file `tests/<suite>/test_<stem>.py` (unit, chart or live) names the module with the longest name that
  is its whole stem or the start of it followed by `_` and an aspect: test_snapshot.py and test_guard_gate.py
  name state/snapshot.py and changes/guard.py; test_smoke_kueue.py names verbs/smoke.py. A test file names one
  module at most; one named after no module (test_bad_inputs.py, a behaviour across the CLI) is allowed.
- Every module is named by at least one test file. A failure names the module and the file its tests go in.

WITHOUT_NAMED_TESTS lists the modules that have no test file named after them yet (their code is exercised by the
tests of the modules and verbs that use them, under other names). It may only shrink: a module added to the
package needs its own test file, and a listed module that gains one fails until it is taken off the list.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# module -> why no test file is named after it (a module nobody should look for tests of)
EXEMPT = {
    "generator/live/verbs/uninstall.py": "one call into changes/teardown.py, whose tests are test_teardown.py",
}

# the modules no test file is named after yet, by package: the backlog, which may only shrink (see the docstring)
WITHOUT_NAMED_TESTS = {
    "generator/cli.py",
    "generator/inputs/credentials.py", "generator/inputs/explain.py",
    "generator/inputs/models/autoscaling.py", "generator/inputs/models/common.py", "generator/inputs/models/env.py",
    "generator/inputs/models/infra.py", "generator/inputs/models/kuberay.py", "generator/inputs/models/launch.py",
    "generator/inputs/models/namespace.py", "generator/inputs/models/placement.py",
    "generator/inputs/models/recipe.py", "generator/inputs/models/scheduling.py",
    "generator/inputs/models/security.py", "generator/inputs/models/values.py",
    "generator/inputs/rules.py", "generator/inputs/storage_rules.py",
    "generator/live/changes/install.py", "generator/live/changes/plan.py",
    "generator/live/client/pod_requests.py", "generator/live/client/selectors.py",
    "generator/live/doctor/rows.py",
    "generator/live/helm/holders.py", "generator/live/helm/ownership.py", "generator/live/helm/records.py",
    "generator/live/kueue/api.py", "generator/live/kueue/gang.py", "generator/live/kueue/quota.py",
    "generator/in_image/smoke_probe.py",
    "generator/live/verbs/dev.py", "generator/live/verbs/doctor.py", "generator/live/verbs/run.py",
    "generator/maint/record_cluster.py", "generator/maint/validate_examples.py",
    "generator/playground/cli.py", "generator/playground/lifecycle.py", "generator/playground/control_plane.py",
    "generator/playground/crds.py", "generator/playground/errors.py", "generator/playground/health.py",
    "generator/playground/kubeapi.py", "generator/playground/launch.py",
    "generator/playground/node/certs.py", "generator/playground/node/host.py", "generator/playground/node/relay.py",
    "generator/playground/node/spec.py",
    "generator/playground/nodes.py", "generator/playground/pki.py", "generator/playground/processes.py",
    "generator/playground/restarts.py", "generator/playground/volumes.py",
    "generator/quantity.py",
    "generator/render/procs.py",
}


def modules() -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in (REPO / "generator").rglob("*.py")
                  if p.name not in ("__init__.py", "__main__.py"))


def names_of(all_modules: list[str]) -> dict[str, list[str]]:
    """Each module's names, shortest first, without the names it shares with another module."""
    trailing = {}
    for m in all_modules:
        parts = m.removesuffix(".py").split("/")
        trailing[m] = ["_".join(parts[i:]) for i in range(len(parts) - 1, -1, -1)]
    owners: dict[str, set[str]] = {}
    for m, names in trailing.items():
        for n in names:
            owners.setdefault(n, set()).add(m)
    return {m: [n for n in names if len(owners[n]) == 1] for m, names in trailing.items()}


def named_module(stem: str, names: dict[str, list[str]]) -> str | None:
    """The module a test file's stem (after `test_`) names: the longest name that is the stem or starts it."""
    best = None
    for m, ms in names.items():
        for n in ms:
            if (stem == n or stem.startswith(n + "_")) and (best is None or len(n) > len(best[1])):
                best = (m, n)
    return best[0] if best else None


def all_test_files() -> list[Path]:
    return sorted(p for suite in ("unit", "chart", "live") for p in (REPO / "tests" / suite).glob("test_*.py"))


def coverage() -> dict[str, list[str]]:
    """module -> the test files named after it."""
    all_modules = modules()
    names = names_of(all_modules)
    out: dict[str, list[str]] = {m: [] for m in all_modules}
    for f in all_test_files():
        m = named_module(f.stem.removeprefix("test_"), names)
        if m is not None:
            out[m].append(f.relative_to(REPO).as_posix())
    return out


def test_the_rule_on_examples():
    """On made-up modules: two `caches.py` in different packages, named by more of their path."""
    names = names_of(["generator/cli.py", "generator/live/cli.py", "generator/live/state/follow.py",
                      "generator/live/verbs/doctor.py", "generator/live/doctor/caches.py",
                      "generator/playground/node/caches.py"])
    assert names["generator/live/state/follow.py"][0] == "follow"
    assert names["generator/cli.py"] == ["generator_cli"] and names["generator/live/cli.py"][0] == "live_cli"
    assert named_module("follow", names) == named_module("follow_retries", names) == "generator/live/state/follow.py"
    assert named_module("doctor_caches", names) == "generator/live/doctor/caches.py"  # the longest name wins
    assert named_module("doctor", names) == "generator/live/verbs/doctor.py"
    assert named_module("node_caches", names) == "generator/playground/node/caches.py"
    assert named_module("caches", names) is None and named_module("followers", names) is None
    assert named_module("cli", names) is None


def test_every_module_has_a_test_file_named_after_it():
    found = coverage()
    names = names_of(modules())
    missing = [f"{m}: no test file is named after it; its tests go in tests/unit/test_{names[m][0]}.py "
               f"(tests/live/ for a live test; or test_{names[m][0]}_<aspect>.py)"
               for m, files in found.items() if not files and m not in EXEMPT and m not in WITHOUT_NAMED_TESTS]
    assert not missing, "\n".join(missing)


def test_the_lists_name_modules_that_exist_and_shrink():
    found = coverage()
    assert not set(EXEMPT) - set(found), "EXEMPT lists a module that does not exist"
    assert not WITHOUT_NAMED_TESTS - set(found), "WITHOUT_NAMED_TESTS lists a module that does not exist"
    tested = sorted(m for m in WITHOUT_NAMED_TESTS | set(EXEMPT) if found[m])
    assert not tested, f"named by a test file now, take it off the list: {tested}"
