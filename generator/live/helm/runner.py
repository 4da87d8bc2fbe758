"""Helm releases through pyhelm3 over the chosen helm binary: helm as a direct child, stopped at the verb's
deadline, its failures in one line. The run lock that guards a change is in run_lock.py."""

from __future__ import annotations

import asyncio
import re
import signal
import threading
import time
from typing import Any

from generator.errors import CheckFailed
from generator.live.client.kube import Kube

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
    hook = _WEBHOOK.search(text)
    if hook:
        return (f"{text[:2000]}\n  the admission webhook {hook.group(1)} did not answer: the server it names (a "
                "Service's pods or a URL, in its Validating/MutatingWebhookConfiguration) is down or unreachable, "
                "so nothing its rules match can be created or changed until it answers (is the controller that "
                "serves it running?)")
    return text[:2000]


_WEBHOOK = re.compile(r'failed calling webhook "([^"]+)"')


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
