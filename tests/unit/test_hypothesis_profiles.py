"""The property tests follow the hypothesis profile (tests/conftest.py): derandomized under `make test`,
a fresh seed under `make test-random` (--hypothesis-profile=random), since none pins derandomize."""

from __future__ import annotations

import importlib
import subprocess
import sys

from hypothesis import settings

from generator.pinned_tools import REPO

PROPERTY_MODULES = ["tests.unit.inputs.test_schema_check", "tests.chart.test_properties",
                    "tests.chart.test_no_injection"]


def _settings_of(module) -> list[settings]:
    """The settings objects a module holds and those its tests were decorated with."""
    found = [v for v in vars(module).values() if isinstance(v, settings)]
    found += [s for v in vars(module).values() if isinstance(s := getattr(v, "_hypothesis_internal_use_settings",
                                                                         None), settings)]
    return found


# probe_*: collected only by the pytest the tests below start (-o python_functions=probe_*)
def probe_property_settings_follow_the_profile():
    expected = settings.get_current_profile_name() != "random"
    held = {name: [s.derandomize for s in _settings_of(importlib.import_module(name))] for name in PROPERTY_MODULES}
    assert all(held.values()) and all(d == expected for ds in held.values() for d in ds), held
    print(f"\nprofile {settings.get_current_profile_name()}: derandomize={expected} in", sum(map(len, held.values())))


def _probe(*argv: str) -> subprocess.CompletedProcess:
    args = ["-q", "-s", "-p", "no:cacheprovider", "-o", "python_functions=probe_*", *argv,
            f"{__file__}::probe_property_settings_follow_the_profile"]
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_make_test_is_derandomized():
    done = _probe()
    assert done.returncode == 0 and "profile derandomized: derandomize=True in" in done.stdout, done.stdout


def test_the_random_profile_reaches_every_property_test():
    done = _probe("--hypothesis-profile=random", "--hypothesis-seed=1")
    assert done.returncode == 0 and "profile random: derandomize=False in" in done.stdout, done.stdout
    assert settings.get_profile("random").print_blob and settings.get_profile("random").database is None
