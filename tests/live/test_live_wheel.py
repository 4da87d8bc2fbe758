"""`run` from the installed wheel: the wheel built from the sdist and installed outside the checkout
(tests/wheel_venv.py, built once for this module) installs the small example on the session playground, waits for
its RayJob, reports it with `status` and uninstalls it, reading nothing of the checkout (the audit hook's log)."""

from __future__ import annotations

import json
import shutil

import pytest
from live_helpers import INFRA, RECIPE
from wheel_venv import Installed, install

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Installed:
    installed = install(tmp_path_factory.mktemp("wheel"))
    for path in (RECIPE, INFRA):
        shutil.copy(path, installed.root / "work" / path.name)
    return installed


def test_run_wait_status_uninstall_from_the_wheel(wheel, playground, namespace):
    kc = ("--kubeconfig", playground.kubeconfig)
    run = wheel.run("run", RECIPE.name, INFRA.name, "-n", namespace, "--wait", *kc, "--timeout", 120)
    try:
        assert run.returncode == 0, run.stdout + run.stderr
        assert "RayJob running on a ready RayCluster" in run.stdout, run.stdout
        status = wheel.run("status", "small", "-n", namespace, "-o", "json", *kc)
        assert status.returncode == 0, status.stderr
        st = json.loads(status.stdout)
        assert st["ready"] and st["revision"] == 1 and st["release_status"] == "deployed"
        assert st["rayjob"]["deploymentStatus"] == "Running" and st["raycluster"]["state"] == "ready"
    finally:
        gone = wheel.run("uninstall", "small", "-n", namespace, *kc, "--timeout", 60)
    assert gone.returncode == 0 and "nothing left" in gone.stdout, gone.stdout + gone.stderr
    assert wheel.reached() == []
