"""The helm binary: which one runs (the pinned Helm 3, `--helm` or $DOCKYARD_HELM), its version, and
offline rendering (`helm template`)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections import namedtuple
from contextvars import ContextVar
from functools import cache

from generator.errors import CheckFailed, InputError, Problem
from generator.inputs.rules import TOYAML_CHARS
from generator.pinned_tools import CHART_DIR, binary, kube_version
from generator.render import procs

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

HELM_ENV = "DOCKYARD_HELM"
# Helm 3 from 3.8 (OCI charts without the experimental flag) and Helm 4; both majors are tested.
SUPPORTED = "Helm 3 (>= v3.8.0) or Helm 4"

# `--helm PATH` and `--chart REF [--chart-version X]` of the running CLI verb (one invocation).
_chosen: ContextVar[str | None] = ContextVar("dockyard_helm", default=None)
_chart: ContextVar[tuple[str, str | None] | None] = ContextVar("dockyard_chart", default=None)


@contextlib.contextmanager
def using(path: str | None, chart: str | None = None, chart_version: str | None = None) -> Iterator[None]:
    """Run the enclosed code with `path` as the helm binary (None: $DOCKYARD_HELM or the pinned one)
    and `chart` as the chart the live verbs install (None: the chart in this repository)."""
    tokens = _chosen.set(path), _chart.set((chart, chart_version) if chart else None)
    try:
        if path:
            helm_binary()  # a bad --helm is a usage error before anything else runs
        yield
    finally:
        _chosen.reset(tokens[0])
        _chart.reset(tokens[1])


def chart_ref() -> tuple[str, str | None]:
    """(chart reference, version) the live verbs install: `--chart`/`--chart-version`, else this repo's chart.
    A reference is whatever `helm install` takes: a folder, a .tgz, or oci://host/path/name."""
    return _chart.get() or (str(CHART_DIR), None)


def helm_binary() -> str:
    """`--helm`, else $DOCKYARD_HELM, else the pinned Helm 3. A name without '/' is looked up on PATH."""
    chosen, source = _chosen.get(), "--helm"
    if not chosen:
        chosen, source = os.environ.get(HELM_ENV) or None, HELM_ENV
    if not chosen:
        return binary("helm")
    import shutil

    if "/" not in chosen:
        found = shutil.which(chosen)
    else:
        found = chosen if os.access(chosen, os.X_OK) and os.path.isfile(chosen) else None
    if not found:
        flag = f"--helm {chosen}" if source == "--helm" else f"{HELM_ENV}={chosen}"
        raise InputError([Problem("<command line>" if source == "--helm" else "<environment>", None, "",
                                  f"{flag}: no such executable",
                                  expected="the path of a helm binary (Helm 3 >= v3.8.0 or Helm 4)")])
    return found


# Characters Go's YAML reader refuses raw in its input; JSON's \\uXXXX escape is read fine for these.
# what values_json escapes for helm's YAML reader: the characters toYaml drops, and the byte-order mark
_GO_YAML_RAW = re.compile(f"[{TOYAML_CHARS}\ufeff]")


def values_json(values: Any) -> str:
    """Values as JSON for `--values -`: UTF-8 as is (Go's YAML reader refuses the surrogate-pair escapes
    json.dumps writes for characters beyond the BMP, e.g. an emoji), the few raw characters it refuses escaped."""
    return _GO_YAML_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(values, ensure_ascii=False))


class HelmVersion(namedtuple("HelmVersion", "path version major minor")):
    """path: str, version: str (e.g. v4.3.2), major: int, minor: int."""

    __slots__ = ()

    @property
    def supported(self) -> bool:
        return (self.major == 3 and self.minor >= 8) or self.major == 4


@cache
def helm_version(path: str) -> HelmVersion:
    """`helm version` of the binary at `path`; CheckFailed when it does not answer like helm."""
    try:
        proc = subprocess.run([path, "version", "--template", "{{.Version}}"], capture_output=True, text=True,
                              timeout=30)
    except OSError as exc:
        raise CheckFailed(f"helm {path}: cannot run it: {exc.strerror or exc}") from None
    m = re.match(r"^v?(\d+)\.(\d+)\.\d+\S*$", proc.stdout.strip())
    if proc.returncode != 0 or not m:
        said = (proc.stdout + proc.stderr).strip().splitlines()[:1]
        raise CheckFailed(f"helm {path}: `helm version` did not answer with a version "
                          f"({said[0] if said else 'no output'})")
    version = proc.stdout.strip()
    return HelmVersion(path, version if version.startswith("v") else "v" + version, int(m.group(1)), int(m.group(2)))


def supported_helm() -> HelmVersion:
    """The chosen helm's version; CheckFailed (exit 1) naming the binary when the major is not supported."""
    v = helm_version(helm_binary())
    if not v.supported:
        raise CheckFailed(f"helm {v.path} is {v.version}: dockyard-k8s supports {SUPPORTED} "
                          f"(the pinned one: `make tools`, or pass --helm / set {HELM_ENV})")
    return v


class Template:
    """One `helm template` process, started at once; `result()` sends the values and waits for it.
    Helm enforces values.schema.json too. The values may come later (`values=None`, then
    `result(values)`): helm's start-up (~40 ms of Go package init before it reads its values) then
    overlaps the launcher's own."""

    def __init__(self, values: dict[str, Any] | None, release: str, namespace: str, *, tests: bool = False,
                 helm: str | None = None):
        self.release, self.namespace, self.tests = release, namespace, tests
        self.values = values
        self.path = helm or helm_binary()
        cmd = [
            self.path, "template", release, str(CHART_DIR),
            "--namespace", namespace, "--values", "-",  # on stdin (Helm 3 and 4): no temporary file
            "--kube-version", kube_version(),  # the pin, or `check --kube-version`'s minor
        ]
        if not tests:
            cmd.append("--skip-tests")
        # A render lives ~50 ms: Go's collector off below 128 MiB (as for kube-validate) takes ~20% off
        # its wall time on two cores shared with this process; a GOGC the user set is kept.
        env = {"GOGC": "off", "GOMEMLIMIT": "128MiB", **os.environ} if "GOGC" not in os.environ else None
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, encoding="utf-8", errors="replace", env=env)
        except OSError as exc:
            raise procs.cannot_start("helm", self.path, exc) from None

    def result(self, values: dict[str, Any] | None = None) -> str:
        values = self.values if values is None else values
        assert values is not None
        # JSON is YAML that no parser reads differently (Helm's YAML 1.1 reads a bare `y` as true).
        stdout, stderr = self.proc.communicate(values_json(values))
        if self.proc.returncode == 1:  # helm's refusal (the schema, the chart's `fail`): its text
            raise CheckFailed(f"helm template refused the values:\n{stderr.strip()}")
        if self.proc.returncode != 0:  # a crash (a Go panic exits 2) or a signal: one line
            raise procs.failed("helm template", self.path, self.proc.returncode, stderr, stdout)
        return stdout

    def cancel(self) -> None:
        self.proc.kill()
        self.proc.communicate()


_prestarted: list[Template] = []  # by `prestart`, before the command line was parsed


def prestart(release: str, namespace: str, *, tests: bool) -> None:
    """Start helm for `started` to hand out (the CLI calls this before it builds its parser)."""
    early = started(release, namespace, tests=tests)
    if early is not None:
        _prestarted.append(early)


def discard_prestarted() -> None:
    """Stop a prestarted helm nobody took (the command failed before rendering)."""
    while _prestarted:
        _prestarted.pop().cancel()


def started(release: str | None, namespace: str | None, *, tests: bool = False) -> Template | None:
    """`helm template` started before the values are known, for the release and namespace the inputs
    most likely give (`reading.release_guess`); None when there is no guess or helm cannot start
    (`render` then starts helm and reports why). A prestarted one for the same is handed out."""
    if _prestarted:
        early = _prestarted.pop()
        if (early.release, early.namespace, early.tests) == (release, namespace, tests):
            return early
        early.cancel()
    if not release or not namespace:
        return None
    try:
        return Template(None, release, namespace, tests=tests)
    except Exception:
        return None


def render(early: Template | None, values: dict[str, Any], release: str, namespace: str, *, tests: bool = False) -> str:
    """The manifests: from the early helm when it was started for this release and namespace,
    else from a new one (the early one is stopped)."""
    if early is not None and (early.release, early.namespace, early.tests) == (release, namespace, tests):
        return early.result(values)
    if early is not None:
        early.cancel()
    return template(values, release, namespace, tests=tests)


def template(values: dict[str, Any], release: str, namespace: str, *, tests: bool = False,
             helm: str | None = None) -> str:
    """Render the chart with one `helm template` process (`helm`: that binary instead of the chosen one)."""
    return Template(values, release, namespace, tests=tests, helm=helm).result()
