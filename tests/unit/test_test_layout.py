"""Tests mirror the code: a module's tests are at the matching path under tests/unit.

The rule, for every module under generator/ (a `.py` file; `__init__.py` and `__main__.py` aside):

- generator/P/M.py is tested in tests/unit/P/test_M.py, or split by aspect in tests/unit/P/test_M_<aspect>.py:
  generator/live/state/snapshot.py in tests/unit/live/state/test_snapshot.py, generator/live/verbs/smoke.py in
  tests/unit/live/verbs/test_smoke.py and test_smoke_kueue.py, generator/cli.py at tests/unit's top.
- Every folder under tests/unit mirrors a package of generator/ and is a package itself (an `__init__.py`), so that
  two folders may each hold a test_cli.py; a test file in it names a module of that package. At tests/unit's top, a
  file names a top-level module or tests a behaviour across the package (test_bad_inputs.py: every refusal exits 2
  with the key path) or a rule of the repository (this file, test_module_map.py, test_doc_links.py, ...).
- tests/chart (the chart rendered by the real helm) and tests/live (a playground) are suites by what they need:
  their files test behaviours of the chart and the product, and name no module.

No Python module of the repository's code or tests (generator/, bench/, hack/, tests/: unit, chart, live, support) is
over MAX_LINES lines: a longer one is split by topic.

TESTED_THROUGH lists the modules that have no tests at their path, each with where they are tested and why that
is enough. It may only shrink: a new module needs its tests at its path, and a listed module that gains them fails
until it is taken off the list.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "tests" / "unit"
NOT_PACKAGES = {"recorded", "data", "__pycache__"}  # tests/unit's data folders

MODELS = ("a model: its refusals are tests/unit/test_bad_inputs.py's and tests/unit/inputs/test_api_rules.py's tables "
          "and the properties of tests/chart (every key rendered, none injected); its schema twin "
          "tests/chart/test_helm_schema.py")
PLAYGROUND = ("a piece of the playground's control plane or real node: it runs for real under every live test (the "
              "session playground, tests/live/test_playground*.py, tests/live/test_real_node*.py); a stand-in would "
              "test nothing the playground does not")
VERB = "a verb's wiring over library modules tested at their paths; the verb itself runs end to end in tests/live"

# module -> where it is tested, and why that is enough
TESTED_THROUGH = {
    "generator/cli.py": "the command line: every verb's test drives it (main([...])), "
                        "tests/unit/test_bad_inputs.py its refusals, tests/unit/inputs/test_reading_cli.py its "
                        "reader's",
    "generator/inputs/explain.py": "turns a model's ValidationError into the user's line: "
                                   "tests/unit/test_bad_inputs.py asserts that line for every refusal",
    "generator/inputs/rules.py": "rules needing more than one field: tests/unit/test_bad_inputs.py's table, and "
                                 "tests/chart/test_chart_refusals.py for their twins in the chart",
    "generator/inputs/storage_rules.py": "infra.storage's rules: tests/chart/test_storage.py renders and refuses each",
    **{f"generator/inputs/models/{m}.py": MODELS for m in (
        "autoscaling", "common", "env", "infra", "kuberay", "launch", "namespace", "network", "placement", "recipe",
        "sandbox", "scheduling", "security", "storage", "values")},
    "generator/live/client/pod_requests.py": "a pod's requests as the scheduler counts them: "
                                             "tests/unit/live/doctor/test_kueue_rows.py checks the count",
    "generator/live/client/selectors.py": "node and label selection: tests/unit/live/doctor/test_placement.py's "
                                          "table of selectors against nodes",
    "generator/live/doctor/rows.py": "the Row every doctor row is made of: each row's tests under "
                                     "tests/unit/live/doctor/",
    "generator/live/helm/holders.py": "the run lock's holder evidence: tests/unit/live/helm/test_run_lock.py",
    "generator/live/helm/ownership.py": "whose release it is: tests/unit/live/changes/test_guard.py refuses another "
                                        "chart's release through it",
    "generator/live/helm/records.py": "Helm's release records decoded: tests/unit/live/state/test_snapshot.py and "
                                      "tests/unit/live/changes/test_guard_gate.py on recorded Secrets",
    "generator/live/kueue/api.py": "Kueue's names and API: tests/unit/live/doctor/test_kueue_rows.py and "
                                   "tests/unit/live/verbs/test_smoke_kueue.py",
    "generator/live/kueue/gang.py": "the gang Kueue is asked quota for: tests/unit/live/doctor/test_kueue_rows.py",
    "generator/live/kueue/quota.py": "a ClusterQueue's quota, flavors and borrowing: "
                                     "tests/unit/live/doctor/test_kueue_rows.py's cases",
    "generator/live/verbs/dev.py": VERB,
    "generator/live/verbs/doctor.py": VERB + " (doctor's rows: tests/unit/live/doctor/)",
    "generator/live/verbs/run.py": VERB + " (tests/unit/live/state/ for its wait)",
    "generator/live/verbs/uninstall.py": "one call into changes/teardown.py, tested in "
                                         "tests/unit/live/changes/test_teardown.py",
    "generator/maint/record_cluster.py": "`make record`: its output is what tests/unit/maint/test_recording.py "
                                         "and every recorded-cluster test replay",
    "generator/maint/validate_examples.py": "`make validate`: tests/unit/render/test_kubeconform.py runs it over "
                                            "every example",
    **{f"generator/playground/{m}.py": PLAYGROUND for m in (
        "crds", "errors", "health", "kubeapi", "kueue", "lifecycle", "pki", "processes", "restarts",
        "startup", "volumes", "node/certs", "node/relay")},
    "generator/render/procs.py": "a failed tool's one line: tests/unit/render/test_check_tool_failures.py makes "
                                 "each tool fail",
}


MAX_LINES = 450
LINE_LIMITED = ("generator", "bench", "hack", "tests")


def long_modules(root: Path = REPO) -> dict[str, int]:
    """The Python modules under LINE_LIMITED over MAX_LINES lines: path -> lines."""
    found = {p.relative_to(root).as_posix(): len(p.read_text().splitlines())
             for folder in LINE_LIMITED for p in (root / folder).rglob("*.py")}
    return {path: n for path, n in sorted(found.items()) if n > MAX_LINES}


def modules() -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in (REPO / "generator").rglob("*.py")
                  if p.name not in ("__init__.py", "__main__.py"))


def unit_folders(root: Path = UNIT) -> list[Path]:
    return sorted(d for d in root.rglob("*") if d.is_dir() and not NOT_PACKAGES & set(d.relative_to(root).parts))


def files_at_path(module: str, root: Path = REPO) -> list[str]:
    """The test files at `module`'s path: tests/unit/P/test_M.py and test_M_<aspect>.py for generator/P/M.py."""
    rel = Path(module).relative_to("generator")
    folder = root / "tests" / "unit" / rel.parent
    if not folder.is_dir():
        return []
    stem = rel.stem
    return sorted(f.relative_to(root).as_posix() for f in folder.glob("test_*.py")
                  if f.stem == f"test_{stem}" or f.stem.startswith(f"test_{stem}_"))


def module_of(test_file: Path, root: Path = REPO) -> str | None:
    """The module a test file under tests/unit names: the longest module name of its folder's package that is the
    file's stem or starts it followed by `_`; None for none."""
    rel = test_file.relative_to(root / "tests" / "unit")
    package = root / "generator" / rel.parent
    stem = test_file.stem.removeprefix("test_")
    names = sorted((p.stem for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")), key=len,
                   reverse=True)
    found = next((n for n in names if stem == n or stem.startswith(n + "_")), None)
    return None if found is None else (Path("generator") / rel.parent / f"{found}.py").as_posix()


def test_the_rule_on_examples(tmp_path):
    """On a made-up package: a module's tests at its path, an aspect, the longest name, and a file that names none."""
    for f in ("generator/live/doctor/volumes.py", "generator/live/doctor/volumes_rows.py", "generator/cli.py"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    unit = tmp_path / "tests" / "unit" / "live" / "doctor"
    unit.mkdir(parents=True)
    for name in ("test_volumes.py", "test_volumes_rows_access.py", "test_caches.py"):
        (unit / name).write_text("")
    assert files_at_path("generator/live/doctor/volumes.py", tmp_path) == ["tests/unit/live/doctor/test_volumes.py",
                                                                         "tests/unit/live/doctor/test_volumes_rows_access.py"]
    assert module_of(unit / "test_volumes_rows_access.py", tmp_path) == "generator/live/doctor/volumes_rows.py"
    assert module_of(unit / "test_volumes.py", tmp_path) == "generator/live/doctor/volumes.py"
    assert module_of(unit / "test_caches.py", tmp_path) is None
    assert files_at_path("generator/cli.py", tmp_path) == []


def test_every_module_has_tests_at_its_path():
    missing = [f"{m}: no tests at its path; they go in tests/unit/{Path(m).relative_to('generator').parent}/"
               f"test_{Path(m).stem}.py (or test_{Path(m).stem}_<aspect>.py)"
               for m in modules() if not files_at_path(m) and m not in TESTED_THROUGH]
    assert not missing, "\n".join(missing)


def test_the_list_names_modules_that_exist_and_shrinks():
    all_modules = set(modules())
    assert sorted(set(TESTED_THROUGH) - all_modules) == [], "listed modules that do not exist"
    gained = sorted(m for m in TESTED_THROUGH if files_at_path(m))
    assert not gained, f"tested at their path now, take them off TESTED_THROUGH: {gained}"


def test_every_test_file_in_a_folder_names_a_module_of_its_package():
    stray = [f.relative_to(REPO).as_posix() for d in unit_folders() for f in sorted(d.glob("test_*.py"))
             if module_of(f) is None]
    assert not stray, f"test files that name no module of their folder's package (rename or move them): {stray}"


def test_every_folder_mirrors_a_package_and_is_one():
    wrong = [d.relative_to(REPO).as_posix() for d in unit_folders()
             if not (REPO / "generator" / d.relative_to(UNIT) / "__init__.py").is_file()]
    assert not wrong, f"folders under tests/unit with no package of generator/ at the same path: {wrong}"
    loose = [d.relative_to(REPO).as_posix() for d in [UNIT, *unit_folders()] if not (d / "__init__.py").is_file()]
    assert not loose, f"folders under tests/unit without an __init__.py (two test_cli.py would collide): {loose}"


def test_the_chart_and_live_suites_stay_flat():
    """Their files test behaviours, not modules: nothing of the package's layout is mirrored there."""
    nested = [p.relative_to(REPO).as_posix() for suite in ("chart", "live")
              for p in (REPO / "tests" / suite).rglob("test_*.py") if p.parent != REPO / "tests" / suite]
    assert nested == []


def test_no_module_is_over_the_line_limit():
    assert long_modules() == {}, f"split these by topic (at most {MAX_LINES} lines a module)"


def test_the_line_limit_on_examples(tmp_path):
    """The negative control: a module one line over the limit is named, in any of the folders, tests/live included."""
    for folder, lines in (("generator/a", MAX_LINES), ("tests/live", MAX_LINES + 1), ("hack", 3)):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.py").write_text("x = 1\n" * lines)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "long.py").write_text("x = 1\n" * 999)  # not the code's or the tests'
    assert long_modules(tmp_path) == {"tests/live/m.py": MAX_LINES + 1}
