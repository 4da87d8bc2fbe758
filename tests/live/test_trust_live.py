"""Trust on the live path: foreign releases are never touched, running training is
never lost without --replace, a killed or paused run cannot corrupt the release, verbs end in time."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import bounds
import pytest
from kubernetes import client
from live_helpers import INFRA, RECIPE, cli, infra_variant, kube, spawn

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def release(playground, namespace, capsys):
    yield "small"
    from generator.live.helm.records import release_records

    if release_records(kube(playground), "small", namespace):
        subprocess.run([_helm(), "uninstall", "small", "-n", namespace, "--kubeconfig", playground.kubeconfig,
                        "--wait", "--timeout", "60s"], capture_output=True)


def _helm() -> str:
    from generator.pinned_tools import binary

    return binary("helm")


def _foreign_chart(tmp_path: Path, name: str) -> Path:
    """A chart of someone else's: a ConfigMap and a Service, no dockyard marker."""
    chart = tmp_path / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 1.2.3\n")
    (chart / "templates" / "objects.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-recipe'}\ndata: {precious: 'yes'}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: '{{ .Release.Name }}-sandbox'}\n"
        "spec: {ports: [{port: 80}], selector: {app: theirs}}\n")
    return chart


@pytest.mark.parametrize("chart_name", ["someone-else", "dockyard"])
def test_foreign_release_is_never_touched(playground, namespace, release, capsys, tmp_path, chart_name):
    """Another chart's release named like ours (even a chart called `dockyard` without our marker):
    run, rollback and uninstall refuse, and its objects stay."""
    kc = playground.kubeconfig
    chart = _foreign_chart(tmp_path, chart_name)
    done = subprocess.run([_helm(), "install", "small", str(chart), "-n", namespace, "--kubeconfig", kc],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    core = client.CoreV1Api(playground.api_client())
    for argv in (("run", RECIPE, INFRA, "-n", namespace), ("rollback", "small", "-n", namespace),
                 ("uninstall", "small", "-n", namespace), ("cluster", "up", RECIPE, INFRA, "-n", namespace)):
        rc, out, err = cli(capsys, *argv, "--kubeconfig", kc, "--timeout", 30)
        assert rc == 1, (argv, out, err)
        assert f"was made by chart {chart_name}-1.2.3, not by dockyard-k8s's chart" in err, err
        assert "nothing was changed" in err
    rc, out, err = cli(capsys, "doctor", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc)
    assert rc == 1 and f"small in {namespace} was made by chart {chart_name}-1.2.3" in out, out + err
    assert core.read_namespaced_config_map("small-recipe", namespace).data == {"precious": "yes"}
    assert core.read_namespaced_service("small-sandbox", namespace).spec.selector == {"app": "theirs"}
    listed = subprocess.run([_helm(), "history", "small", "-n", namespace, "--kubeconfig", kc, "-o", "json"],
                            capture_output=True, text=True)
    assert listed.stdout.count('"revision"') == 1, listed.stdout


def test_mode_changes_and_rollbacks_never_delete_running_training(playground, namespace, release, capsys, wait):
    """bringup -> rayjob would delete the long-lived RayCluster; rolling back to the bringup revision
    would delete the running RayJob; revision 0 is refused. Each needs --replace."""
    kc = playground.kubeconfig
    custom = client.CustomObjectsApi(playground.api_client())
    rc, out, err = cli(capsys, "cluster", "up", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1, out + err
    assert "`run` would lose running training" in err and "RayCluster small (state ready" in err
    assert "would be deleted" in err and "nothing was changed" in err and "--replace" in err
    assert custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", "small")
    assert custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs")["items"] == []

    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--replace", "--wait", "--kubeconfig", kc,
                       "--timeout", 120)
    assert rc == 0, out + err
    custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")

    rc, out, err = cli(capsys, "rollback", "small", "0", "-n", namespace, "--kubeconfig", kc)
    assert rc == 2 and "revisions start at 1" in err, err
    rc, out, err = cli(capsys, "rollback", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1, out + err
    assert "`rollback small 1` would lose running training" in err and "RayJob small (jobDeploymentStatus" in err
    assert custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "small")
    rc, out, err = cli(capsys, "rollback", "small", "9", "-n", namespace, "--kubeconfig", kc, "--timeout", 60)
    assert rc == 1 and "has no revision 9 (it has 1, 2)" in err, err

    rc, out, err = cli(capsys, "rollback", "small", "-n", namespace, "--replace", "--kubeconfig", kc, "--timeout", 120)
    assert rc == 0, out + err
    wait(lambda: not custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs")["items"], 60,
         "the RayJob to be gone after the rollback to the bringup revision")


def test_recipe_change_under_a_running_job_is_announced(playground, namespace, release, capsys):
    kc = playground.kubeconfig
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--wait", "--kubeconfig", kc, "--timeout", 120)[0] == 0
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "grpo.max_num_steps=7", "-n", namespace, "--kubeconfig", kc,
                       "--timeout", 60)
    assert rc == 0, out + err
    assert "the recipe changes under running RayJob small" in out + err
    assert "a running driver keeps the config it read at start" in out + err


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _pending_run(playground, namespace, tmp_path, *extra, **kw) -> tuple[subprocess.Popen, int]:
    """A `run` whose sandbox never fits, stopped in helm's wait; (the process, its helm child's pid)."""
    from generator.live.helm.records import release_records

    huge = infra_variant(tmp_path, "huge.yaml", lambda d: d["sandbox"]["resources"].update(cpu="500"))
    proc = spawn("run", RECIPE, huge, "-n", namespace, "--kubeconfig", playground.kubeconfig, "-q", *extra, **kw)
    k = kube(playground)
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        recs = release_records(k, "small", namespace)
        if recs and recs[-1]["metadata"]["labels"].get("status", "").startswith("pending-"):
            helm = [c for c in _children(proc.pid) if "helm" in Path(f"/proc/{c}/cmdline").read_text()]
            if helm:
                return proc, helm[0]
        time.sleep(0.3)
    proc.kill()
    pytest.fail("the run never reached a pending release with a helm child")


def _to_a_helper_thread(pid: int, sig: int) -> None:
    """Deliver `sig` to one of the process's non-main threads (the kernel may pick any of them)."""
    import ctypes

    tid = max(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
    assert ctypes.CDLL(None, use_errno=True).tgkill(pid, tid, sig) == 0, f"tgkill {pid} {tid}"


@pytest.mark.parametrize("sig, to_thread", [(signal.SIGTERM, False), (signal.SIGHUP, False), (signal.SIGTERM, True)],
                         ids=["sigterm", "sighup", "sigterm-to-a-helper-thread"])
def test_sigterm_and_sighup_stop_helm_like_ctrl_c(playground, namespace, release, capsys, tmp_path, sig, to_thread):
    """Also when the signal lands on a helper thread: the run ends now, not at helm's --timeout (~95 s)."""
    from generator.live.helm.records import release_records

    proc, helm = _pending_run(playground, namespace, tmp_path, "--timeout", 120)
    _to_a_helper_thread(proc.pid, sig) if to_thread else proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert not _alive(helm), "helm outlived the run"
    leases = client.CoordinationV1Api(playground.api_client()).list_namespaced_lease(namespace).items
    assert leases == []
    statuses = [r["metadata"]["labels"]["status"] for r in release_records(kube(playground), "small", namespace)]
    assert statuses.count("deployed") <= 1 and not any(s.startswith("pending") for s in statuses), statuses
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", playground.kubeconfig,
                       "--timeout", 120)
    assert rc == 0, out + err


def test_helm_dies_with_a_killed_run(playground, namespace, release, tmp_path):
    """SIGKILL gives the run no chance to clean up: its helm child still ends (parent-death signal)."""
    proc, helm = _pending_run(playground, namespace, tmp_path, "--timeout", 120)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    deadline = time.monotonic() + 15
    while _alive(helm) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(helm), "helm outlived the killed run"


def test_a_paused_run_keeps_its_lock(playground, namespace, release, capsys, tmp_path):
    """A stopped (SIGSTOP) run stops renewing its lease, but its helm may still work: no takeover."""
    from generator.live.helm.run_lock import LEASE_SECONDS

    timeout, t0 = 120, time.monotonic()
    proc, helm = _pending_run(playground, namespace, tmp_path, "--timeout", timeout)
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(LEASE_SECONDS + 2)
        rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", playground.kubeconfig,
                           "--timeout", 30)
        assert rc == 1 and "busy" in err and f"its process {proc.pid} is still alive (paused?)" in err, err
        assert "nothing was changed" in err
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.send_signal(signal.SIGTERM)
        bounds.ended(proc, t0 + bounds.verb(timeout) - time.monotonic(), f"the paused run --timeout {timeout}")


def test_run_ends_within_its_timeout_while_the_apiserver_is_paused(playground, namespace, release, capsys, tmp_path):
    """The apiserver stops answering during helm's upgrade: `run --timeout 20` still ends within the
    timeout plus the documented grace, counted from the run's start, in one voice, and reports what Helm left."""
    from generator.live.helm.runner import GRACE

    kc = playground.kubeconfig
    timeout = 20
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    t0 = time.monotonic()  # the run's start (its clock starts later: the interpreter's ~0.5 s is counted here)
    proc, _ = _pending_run(playground, namespace, tmp_path, "--timeout", timeout)
    api = playground.pids()["kube-apiserver"]
    os.kill(api, signal.SIGSTOP)
    try:
        _, err = bounds.ended(proc, t0 + bounds.verb(timeout) - time.monotonic(), f"run --timeout {timeout}")
        took = time.monotonic() - t0
    finally:
        os.kill(api, signal.SIGCONT)
    assert proc.returncode == 1, err
    assert took <= timeout + GRACE, f"took {took:.1f} s from its start: over --timeout {timeout} + GRACE {GRACE:.0f}"
    assert "Traceback" not in err and not any(ln[:1] in "IWEF" and ln[1:5].isdigit() for ln in err.splitlines()), err
    assert "helm's end state:" in err, err


def _lock_holder(playground, namespace: str) -> subprocess.Popen:
    """A process that takes the run lock of `small` as `uninstall` does and keeps it, renewed, until killed."""
    import sys

    code = ("import sys, time\nfrom generator.live.client.kube import Kube\n"
            "from generator.live.helm.run_lock import RunLock\n"
            f"RunLock(Kube({playground.kubeconfig!r}), {namespace!r}, 'small', 'uninstall').acquire()\n"
            "print('held', flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_removing_a_release_already_gone_clears_a_lock_whose_holder_is_dead(playground, namespace, release, capsys):
    """An `uninstall` killed after its helm had finished leaves the release gone and its run lock behind: the
    re-run clears the lock (its holder's process is gone) and says so; a live holder's lock stays."""
    kc = playground.kubeconfig
    leases = client.CoordinationV1Api(playground.api_client())
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    holder = _lock_holder(playground, namespace)
    try:
        done = subprocess.run([_helm(), "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--wait"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        # the negative control: the holder lives, so the lock is not the re-run's to clear
        rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 30)
        assert rc == 1 and f"its process {holder.pid} is still alive" in err, out + err
        assert [x.metadata.name for x in leases.list_namespaced_lease(namespace).items] == ["small.dockyard-run"]
    finally:
        holder.kill()
        holder.wait()
    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 30)
    assert rc == 0, out + err
    assert (f"release small is already uninstalled; removed its run lock {namespace}/small.dockyard-run, left "
            f"behind by {os.uname().nodename}/{holder.pid}/uninstall/") in out, out
    assert "whose process is gone" in out, out
    assert leases.list_namespaced_lease(namespace).items == []
    rc, out, err = cli(capsys, "uninstall", "small", "-n", namespace, "--kubeconfig", kc, "--timeout", 30)
    assert rc == 1 and f"release small not found in namespace {namespace}" in err, out + err  # nothing left to clear


def test_a_recovery_that_times_out_names_what_held_it(playground, namespace, release, capsys, tmp_path):
    """`run` after an interrupted upgrade rolls the release back; when that rollback cannot finish (the
    sandbox's new pods are never scheduled: kube-scheduler is stopped), the run ends at its --timeout naming
    the recovery, Helm's end state and what the pods waited on — not Helm's bare "context deadline exceeded".
    The control: with the scheduler back, the same `run` recovers and installs."""
    kc = playground.kubeconfig
    core = client.CoreV1Api(playground.api_client())
    assert cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 60)[0] == 0
    proc, helm = _pending_run(playground, namespace, tmp_path, "--timeout", 120)
    os.kill(helm, signal.SIGKILL)  # helm dies in its wait: no --atomic rollback, the release stays pending-upgrade
    proc.communicate(timeout=60)
    scheduler = playground.pids()["kube-scheduler"]
    os.kill(scheduler, signal.SIGSTOP)
    try:
        core.delete_collection_namespaced_pod(namespace, label_selector="app.kubernetes.io/component=sandbox",
                                              grace_period_seconds=0)
        rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 25)
    finally:
        os.kill(scheduler, signal.SIGCONT)
    assert rc == 1, out + err
    assert "was left pending-upgrade by an interrupted run: rolling back to revision 1" in out, out
    assert "recovering release small failed: helm rollback small" in err, err
    assert "helm's end state: revision" in err and "while it ran:" in err, err
    assert "sandbox" in err.split("while it ran:")[1], err
    rc, out, err = cli(capsys, "run", RECIPE, INFRA, "-n", namespace, "--kubeconfig", kc, "--timeout", 90)
    assert rc == 0, out + err
