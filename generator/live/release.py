"""Helm releases through pyhelm3 over the pinned helm binary, and the per-release run lock."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import threading
import time
from datetime import UTC, datetime
from typing import Any

from generator.errors import CheckFailed
from generator.live.kube import INSTANCE, Kube

PENDING = ("pending-install", "pending-upgrade", "pending-rollback")
_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")  # client-go's log lines on helm's stderr: noise here
GRACE = 15.0  # seconds a verb may run past its --timeout: stopping helm (5 s) and reading its end state


def _helm_message(exc: Any) -> str:
    """The useful part of helm's stderr: drop the 'Error: ' prefixes, keep it short."""
    text = exc.stderr.decode(errors="replace") if isinstance(getattr(exc, "stderr", None), bytes) else str(exc)
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not ln.startswith("WARNING") and not _KLOG.match(ln)]
    text = " ".join(lines)
    text = re.sub(r"^Error: ", "", text)
    if "Kubernetes cluster unreachable" in text or "connection refused" in text:
        m = re.search(r'Get "(https?://[^/"]+)', text)
        at = f" at {m.group(1)}" if m else ""
        return f"cannot reach the Kubernetes API{at}: connection refused (check --kubeconfig / --context)"
    return text[:2000]


def seconds(timeout: float) -> str:
    return f"{int(max(1, timeout))}s"


def _exec_command_class() -> Any:
    """pyhelm3's Command, running helm without a shell in between.

    pyhelm3 starts `/bin/sh -c "helm ..."`; on Ctrl-C it terminates the shell, which (dash) leaves helm
    running as an orphan that holds the output pipe until its own --timeout. Here helm is our direct
    child: on cancellation it gets SIGTERM, cancels, lets --atomic roll back, and exits. It cannot outlive
    us (setpriv --pdeathsig: SIGTERM when this process dies, even by SIGKILL), and it is stopped at
    `deadline` (time.monotonic()) when one is set, so a verb ends within its --timeout.
    """
    import shutil

    from pyhelm3 import Command, errors

    setpriv = shutil.which("setpriv")

    class ExecCommand(Command):
        deadline: float | None = None

        async def _stop(self, proc: Any, grace: float) -> None:
            try:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), max(1.0, grace))
            except ProcessLookupError:
                pass
            except (TimeoutError, asyncio.CancelledError):
                proc.kill()
                await proc.wait()

        async def run(self, command: list[Any], input: bytes | None = None) -> bytes:
            argv = [self._executable, *(str(part) for part in command)]
            if self._kubeconfig:
                argv += ["--kubeconfig", str(self._kubeconfig)]
            if self._kubecontext:
                argv += ["--kube-context", self._kubecontext]
            if setpriv:
                argv = [setpriv, "--pdeathsig", "TERM", "--", *argv]
            if input is not None:  # pyhelm3's values JSON, re-encoded the way helm's YAML reader takes it
                import json

                from generator.render.helm import values_json

                input = values_json(json.loads(input)).encode()
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE if input is not None else None,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            left = None if self.deadline is None else self.deadline - time.monotonic()
            try:
                stdout, stderr = await asyncio.wait_for(proc.communicate(input), left)
            except TimeoutError:
                await self._stop(proc, 5.0)
                raise HelmTimedOut() from None
            except asyncio.CancelledError:
                await self._stop(proc, GRACE if self.deadline is None else self.deadline + GRACE - time.monotonic())
                raise
            if proc.returncode != 0:
                raise errors.Error(proc.returncode, stdout, stderr)
            return stdout

    return ExecCommand


class HelmTimedOut(Exception):
    """helm was stopped at the verb's deadline."""


def run_interruptible(coro: Any) -> Any:
    """asyncio.run(coro), where Ctrl-C, SIGTERM or SIGHUP cancel it (helm gets SIGTERM and its grace;
    a second signal kills helm) and end in KeyboardInterrupt, as Ctrl-C does elsewhere.

    Python runs signal handlers in the main thread only, and the kernel may hand a signal to any of
    our threads: a plain handler then waits until the event loop wakes (helm's --timeout, minutes).
    The loop's own signal handlers wake it through its self-pipe, whichever thread got the signal.
    """
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(coro)
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {sig: signal.getsignal(sig) for sig in sigs}
    signalled: list[int] = []

    async def main() -> Any:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None

        def stop(sig: int) -> None:
            signalled.append(sig)
            task.cancel()

        for sig in sigs:
            loop.add_signal_handler(sig, stop, sig)
        return await coro

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if signalled:
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig, handler in before.items():
            if handler is not None:  # None: set outside Python, nothing of ours to restore
                signal.signal(sig, handler)


class Helm:
    """The release verbs over the chosen helm (the pinned Helm 3, `--helm` or $DOCKYARD_HELM), Helm 3 or 4.

    One code path for both majors: pyhelm3 builds the same argv, with two differences for Helm 4: the
    roll-back-on-failure flag is `--rollback-on-failure` (Helm 3 only knows `--atomic`, which Helm 4
    deprecates), passed as pyhelm3's `atomic_arg`; and `--server-side=false`, Helm 3's client-side
    three-way merge: with Helm 4's default server-side apply the KubeRay operator co-owns
    `.spec.rayClusterSpec.workerGroupSpecs` of the RayJob, so an upgrade and its roll-back fail on a
    field-manager conflict (found by the live tests). `--wait` alone is Helm 4's default `watcher`
    strategy and Helm 3's readiness checks; the JSON of upgrade/history/list is the same in both.
    """

    def __init__(self, kube: Kube, deadline: float | None = None):
        """deadline (time.monotonic()): every helm process is stopped then, so the verb ends in time."""
        from generator.render.helm import chart_ref, supported_helm

        self.kube = kube
        self.version = supported_helm()
        self.chart, self.chart_version = chart_ref()
        self.atomic_arg = "--atomic" if self.version.major == 3 else "--rollback-on-failure"
        self.server_side = None if self.version.major == 3 else "false"  # rollback's "auto" follows it
        self.cmd = _exec_command_class()(executable=self.version.path, kubeconfig=kube.kubeconfig,
                                         kubecontext=kube.context, default_timeout="600s", history_max_revisions=10)
        self.cmd.deadline = deadline

    def _run(self, coro: Any, what: str) -> Any:
        from pyhelm3 import errors

        try:
            return run_interruptible(coro)
        except errors.Error as exc:
            raise CheckFailed(f"{what}: {_helm_message(exc)}") from None
        except HelmTimedOut:
            raise CheckFailed(f"{what}: stopped at the --timeout (helm was still working)") from None

    def upgrade(self, release: str, namespace: str, values: dict[str, Any], *, timeout: float,
                description: str | None = None) -> dict[str, Any]:
        """`helm upgrade --install --atomic --wait`: a failed install leaves nothing, a failed upgrade
        rolls back to the previous revision."""
        return self._run(self.cmd.install_or_upgrade(
            release, self.chart, values, atomic=True, atomic_arg=self.atomic_arg, create_namespace=False,
            namespace=namespace, timeout=seconds(timeout), wait=True, description=description,
            version=self.chart_version, server_side=self.server_side,
        ), f"helm upgrade --install {release}")

    def rollback(self, release: str, namespace: str, revision: int | None, *, timeout: float) -> None:
        self._run(self.cmd.rollback(release, revision, namespace=namespace, timeout=seconds(timeout), wait=True,
                                    cleanup_on_fail=True), f"helm rollback {release}")

    def uninstall(self, release: str, namespace: str, *, timeout: float) -> None:
        self._run(self.cmd.uninstall(release, namespace=namespace, timeout=seconds(timeout), wait=True),
                  f"helm uninstall {release}")

    def history(self, release: str, namespace: str) -> list[dict[str, Any]]:
        return list(self._run(self.cmd.history(release, namespace=namespace, max_revisions=256),
                              f"helm history {release}"))

    def list(self, namespace: str | None) -> list[dict[str, Any]]:
        return list(self._run(self.cmd.list(all=True, all_namespaces=namespace is None, namespace=namespace,
                                            include_failed=True, include_pending=True),
                              "helm list"))


# The run lock: a Lease per release, renewed while a mutating verb is in flight ----------------------

LEASE_SECONDS = 15
HOLDER_UNTIL = "dockyard.dev/holder-until"  # when the holder's helm is stopped at the latest (RFC 3339)
HOLDER_PID = "dockyard.dev/holder-pid"  # "<host>/<pid>" of the holder


def lease_name(release: str) -> str:
    return f"{release}.dockyard-run"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """Held for the whole of a mutating verb. A second holder is refused while the lease is fresh. A
    stale lease (not renewed for LEASE_SECONDS) is taken over only on evidence that its holder is gone:
    its process is dead (same host), or the time its helm is stopped at (`until`) has passed. Renewal
    and release check that the lease is still ours; a holder whose lease was taken over sees `lost`."""

    def __init__(self, kube: Kube, namespace: str, release: str, verb: str, until: float | None = None):
        import uuid

        self.kube, self.namespace, self.release, self.verb = kube, namespace, release, verb
        self.identity = f"{socket.gethostname()}/{os.getpid()}/{verb}/{uuid.uuid4().hex[:8]}"
        # wall-clock end of this verb's helm work; unknown (None) means the lease must be renewed to count
        self.until = None if until is None else time.time() + (until - time.monotonic()) + GRACE
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.took_over_stale = False
        self.lost: str | None = None

    def _path(self, name: str = "") -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases" + (f"/{name}" if name else "")

    def _body(self, resource_version: str | None = None) -> dict[str, Any]:
        now = _micro_time(datetime.now(UTC))
        notes = {HOLDER_PID: f"{socket.gethostname()}/{os.getpid()}"}
        if self.until is not None:
            notes[HOLDER_UNTIL] = _micro_time(datetime.fromtimestamp(self.until, UTC))
        metadata: dict[str, Any] = {"name": lease_name(self.release), "annotations": notes,
                                    "labels": {INSTANCE: self.release,
                                               "app.kubernetes.io/managed-by": "dockyard-k8s"}}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": LEASE_SECONDS,
                         "acquireTime": now, "renewTime": now}}

    def _busy(self, why: str) -> CheckFailed:
        return CheckFailed(f"release {self.release} in namespace {self.namespace} is busy: {why}; nothing was "
                           "changed. Wait for it to finish, or stop it (Ctrl-C) and run again")

    def _holder_alive(self, lease: dict[str, Any]) -> str | None:
        """Why a stale lease's holder may still be working, or None when it is shown to be gone."""
        notes = (lease.get("metadata") or {}).get("annotations") or {}
        host, _, pid = (notes.get(HOLDER_PID) or "").rpartition("/")
        if host == socket.gethostname() and pid.isdigit():
            return f"its process {pid} is still alive (paused?)" if pid_alive(int(pid)) else None
        until = notes.get(HOLDER_UNTIL)
        if until and datetime.now(UTC) < _parse_time(until):
            return f"its helm may work until {until} (holder on host {host or '?'})"
        return None

    def acquire(self) -> None:
        from kubernetes.client.exceptions import ApiException

        name = lease_name(self.release)
        try:
            self.kube.request("POST", self._path(), body=self._body())
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = self.kube.request("GET", self._path(name))
            spec = current.get("spec") or {}
            renew = spec.get("renewTime") or spec.get("acquireTime")
            age = (datetime.now(UTC) - _parse_time(renew)).total_seconds() if renew else 1e9
            holder = spec.get("holderIdentity") or "?"
            verb = holder.split("/")[2] if holder.count("/") >= 2 else "run"
            if age < (spec.get("leaseDurationSeconds") or LEASE_SECONDS):
                raise self._busy(f"another `{verb}` (holder {holder}, renewed {age:.0f}s ago) is in flight") from None
            alive = self._holder_alive(current)
            if alive:
                raise self._busy(f"another `{verb}` (holder {holder}) stopped renewing its lock {age:.0f}s ago, "
                                 f"but {alive}") from None
            try:
                self.kube.request("PUT", self._path(name), body=self._body(current["metadata"]["resourceVersion"]))
            except ApiException as exc2:
                if exc2.status == 409:
                    raise self._busy("another run took the lock just now") from None
                raise
            self.took_over_stale = True
        self._thread = threading.Thread(target=self._renew, name="dockyard-lease", daemon=True)
        self._thread.start()

    def _mine(self) -> dict[str, Any] | None:
        """The lease when we still hold it; None (and `lost` set) when another holder has it."""
        from kubernetes.client.exceptions import ApiException

        try:
            lease = self.kube.request("GET", self._path(lease_name(self.release)))
        except ApiException as exc:
            if exc.status != 404:
                raise
            lease = {}
        holder = (lease.get("spec") or {}).get("holderIdentity")
        if holder != self.identity:
            self.lost = f"the run lock is now held by {holder}" if holder else "the run lock was deleted"
            return None
        return lease

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_SECONDS / 3):
            try:
                lease = self._mine()
                if lease is None:
                    return
                lease["spec"]["renewTime"] = _micro_time(datetime.now(UTC))
                self.kube.request("PUT", self._path(lease_name(self.release)), body=lease)
            except Exception:
                pass

    def release_lock(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        try:
            lease = self._mine()
            if lease is not None:  # delete only our own lease, and only the version we read
                self.kube.request("DELETE", self._path(lease_name(self.release)),
                                  body={"preconditions": {"resourceVersion": lease["metadata"]["resourceVersion"]}})
        except Exception:
            pass

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release_lock()


def _micro_time(t: datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def wait_until(predicate: Any, timeout: float, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
