"""Helm releases through pyhelm3 over the pinned helm binary, and the per-release run lock."""

from __future__ import annotations

import asyncio
import math
import os
import re
import signal
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

from generator.errors import CheckFailed
from generator.live import holders
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
        env: dict[str, str] | None = None  # helm's environment (kubeconfig.helm_env)

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
                *argv, env=self.env, stdin=asyncio.subprocess.PIPE if input is not None else None,
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
        self.cmd.env = kube.tool_args()[1]  # the kubeconfig files kubectl would read, no targeting HELM_*

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
HOLDER_PID = "dockyard.dev/holder-pid"  # "<host>/<pid>" of the holder
HOLDER_PROCESS = "dockyard.dev/holder-process"  # "<boot id>/<pid namespace>/<start time>": holders.process
HOLDER_HELM_SECONDS = "dockyard.dev/holder-helm-seconds"  # the longest its helm may still work, as of this write


def lease_name(release: str) -> str:
    return f"{release}.dockyard-run"


class RunLock:
    """Held for the whole of a mutating verb; renewed every LEASE_SECONDS / 3.

    A taken lease is judged without comparing clocks (client-go's leader election does the same):
    - its holder runs on this host (same hostname, boot and pid namespace): a live holder is refused at
      once; one whose process is gone (or whose pid now names another process) is taken over at once;
    - otherwise the lease is watched on this host's monotonic clock from when this host first saw its
      record: a change (a renewal) is refused at once; a record unchanged for its leaseDurationSeconds is
      stale, and is taken over unless its holder's helm may still work (the holder publishes the seconds
      its helm may still work as of each write, counted here from that first sight).
    The takeover is a PUT with the resourceVersion read (a racing taker gets 409). Renewal and release
    check that the lease is still ours; a holder whose lease was taken over sees `lost`."""

    clock = staticmethod(time.monotonic)  # the observer's clock (tests inject one)
    sleep = staticmethod(time.sleep)

    def __init__(self, kube: Kube, namespace: str, release: str, verb: str, deadline: float | None = None):
        """deadline (time.monotonic()): when this verb's helm is stopped; None: no bound published."""
        import uuid

        self.kube, self.namespace, self.release, self.verb = kube, namespace, release, verb
        self.identity = f"{socket.gethostname()}/{os.getpid()}/{verb}/{uuid.uuid4().hex[:8]}"
        self.deadline = deadline
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned: str | None = None
        self.took_over_stale = False
        self.lost: str | None = None

    def _path(self, name: str = "") -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases" + (f"/{name}" if name else "")

    def _notes(self) -> dict[str, str]:
        notes = {HOLDER_PID: f"{socket.gethostname()}/{os.getpid()}"}
        me = holders.process(os.getpid())
        if me:
            notes[HOLDER_PROCESS] = me
        if self.deadline is not None:  # a duration, not an instant: no reader needs our clock
            notes[HOLDER_HELM_SECONDS] = str(max(0, math.ceil(self.deadline + GRACE - self.clock())))
        return notes

    def _body(self, resource_version: str | None = None) -> dict[str, Any]:
        now = _micro_time(datetime.now(UTC))
        metadata: dict[str, Any] = {"name": lease_name(self.release), "annotations": self._notes(),
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

    @staticmethod
    def _here(lease: dict[str, Any]) -> tuple[int, str | None] | None:
        """(pid, this host's name for the holder's process now) when the holder ran on this host; None
        when its pid means nothing here."""
        notes = (lease.get("metadata") or {}).get("annotations") or {}
        host, _, pid = (notes.get(HOLDER_PID) or "").rpartition("/")
        recorded = notes.get(HOLDER_PROCESS) or ""
        where = holders.machine()
        if host != socket.gethostname() or not pid.isdigit() or not where or not recorded.startswith(f"{where}/"):
            return None
        return int(pid), holders.process(int(pid))

    def acquire(self) -> None:
        from kubernetes.client.exceptions import ApiException

        for _ in range(3):  # a lease released between our POST and GET: create it again
            try:
                self.kube.request("POST", self._path(), body=self._body())
                break
            except ApiException as exc:
                if exc.status != 409:
                    raise
            current = self._read()
            if current is not None and self._judge(current):
                break
        else:
            raise self._busy("its run lock was taken and released three times while this run tried to take it")
        self._thread = threading.Thread(target=self._renew, name="dockyard-lease", daemon=True)
        self._thread.start()

    def _read(self) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return dict(self.kube.request("GET", self._path(lease_name(self.release))))
        except ApiException as exc:
            if exc.status != 404:
                raise
            return None

    def _judge(self, current: dict[str, Any]) -> bool:
        """Take over a lease whose holder is gone (True), raise busy while it may work, False when the
        lease vanished while watched."""
        spec = current.get("spec") or {}
        holder = spec.get("holderIdentity") or "?"
        verb = holder.split("/")[2] if holder.count("/") >= 2 else "run"
        here = self._here(current)
        if here is not None:
            pid, now_named = here
            recorded = current["metadata"]["annotations"][HOLDER_PROCESS]
            if now_named == recorded or (now_named is None and holders.hidden(pid)):
                paused = " (paused?)" if holders.stopped(pid) else ""
                raise self._busy(f"another `{verb}` (holder {holder}) is in flight: its process {pid} is still "
                                 f"alive{paused}")
            return self._take_over(current)  # gone, or its pid names another process now
        return self._watch(current, holder, verb)

    def _watch(self, current: dict[str, Any], holder: str, verb: str) -> bool:
        """A holder on another host: stale once its record is unchanged for its lease duration on our clock."""
        spec, notes = current.get("spec") or {}, (current.get("metadata") or {}).get("annotations") or {}
        host = (notes.get(HOLDER_PID) or "?").rpartition("/")[0] or "?"
        duration = _number(spec.get("leaseDurationSeconds"), LEASE_SECONDS, low=1)
        helm_seconds = _number(notes.get(HOLDER_HELM_SECONDS), 0)
        record = _record(current)
        key = f"{getattr(self.kube, 'server', '')} {self.namespace}/{lease_name(self.release)}"
        seen = holders.first_seen(key, record, self.clock())
        stale_at, helm_done_at = seen + duration, seen + helm_seconds
        if helm_done_at > max(stale_at, self.clock()):  # refused even if it stays silent: say so now
            raise self._busy(f"another `{verb}` (holder {holder} on host {host}) holds the lock, and its helm may "
                             f"still work for up to {math.ceil(helm_done_at - self.clock())} s")
        left = stale_at - self.clock()
        if self.deadline is not None and stale_at > self.deadline:
            raise self._busy(f"another `{verb}` (holder {holder} on host {host}) holds the lock; telling whether "
                             f"it still renews takes {math.ceil(left)} s, more than this run's --timeout leaves")
        if left > 0:
            print(f"waiting up to {math.ceil(left)} s to see whether holder {holder} renews its lock",
                  file=sys.stderr, flush=True)
        while (left := stale_at - self.clock()) > 0:
            self.sleep(min(1.0, duration / 10, left))
            latest = self._read()
            if latest is None:
                return False
            if _record(latest) != record:
                raise self._busy(f"another `{verb}` (holder {holder} on host {host}) renewed its lock while this "
                                 "run watched: it is in flight")
        return self._take_over(current)

    def _take_over(self, current: dict[str, Any]) -> bool:
        from kubernetes.client.exceptions import ApiException

        try:
            self.kube.request("PUT", self._path(lease_name(self.release)),
                              body=self._body(current["metadata"]["resourceVersion"]))
        except ApiException as exc:
            if exc.status == 409:
                raise self._busy("another run took the lock just now") from None
            raise
        self.took_over_stale = True
        return True

    def _mine(self) -> dict[str, Any] | None:
        """The lease when we still hold it; None (and `lost` set) when another holder has it."""
        lease = self._read() or {}
        holder = (lease.get("spec") or {}).get("holderIdentity")
        if holder != self.identity:
            self.lost = f"the run lock is now held by {holder}" if holder else "the run lock was deleted"
            return None
        return lease

    def _trouble(self, doing: str, exc: Exception, then: str = "") -> None:
        """One stderr line per new failure of the lock's own requests (a renewal may recover)."""
        from generator.live.kube import describe_error

        text = (f"could not {doing} the run lock of release {self.release} in namespace {self.namespace}: "
                f"{describe_error(exc, getattr(self.kube, 'server', None)) or f'{type(exc).__name__}: {exc}'}{then}")
        if text != self._warned:
            self._warned = text
            print(f"warning: {text}", file=sys.stderr, flush=True)

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_SECONDS / 3):
            try:
                lease = self._mine()
                if lease is None:
                    return
                lease["spec"]["renewTime"] = _micro_time(datetime.now(UTC))
                lease["metadata"]["annotations"] = {**(lease["metadata"].get("annotations") or {}), **self._notes()}
                self.kube.request("PUT", self._path(lease_name(self.release)), body=lease)
            except Exception as exc:  # the next renewal may succeed; the lease lasts LEASE_SECONDS
                self._trouble("renew", exc)

    def release_lock(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        try:
            lease = self._mine()
            if lease is not None:  # delete only our own lease, and only the version we read
                self.kube.request("DELETE", self._path(lease_name(self.release)),
                                  body={"preconditions": {"resourceVersion": lease["metadata"]["resourceVersion"]}})
        except Exception as exc:  # the verb's own outcome stands; the lease is left to go stale
            self._trouble("release", exc, f"; it goes stale: the next run on this host takes it at once, one "
                                          f"elsewhere after watching it for {LEASE_SECONDS} s")

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release_lock()


def _record(lease: dict[str, Any]) -> list[Any]:
    """What changes when a holder writes its lease: a change seen is a renewal, whatever its clocks say."""
    meta, spec = lease.get("metadata") or {}, lease.get("spec") or {}
    return [meta.get("uid"), meta.get("resourceVersion"), spec.get("holderIdentity"), spec.get("renewTime")]


def _number(value: Any, default: float, low: float = 0) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return max(low, number) if math.isfinite(number) else default


def _micro_time(t: datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def wait_until(predicate: Any, timeout: float, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
