"""The apiserver's own validation, offline: `kube-validate` (tools/kube-validate) over the rendered stream.

kubeconform checks shapes; the apiserver also refuses objects that have the right shape (a label value
over 63 characters, an env var name with `=`, a duplicate mount path, `minDomains` with
`ScheduleAnyway`, a LimitRange default above its max, a ConfigMap over 1 MiB). kube-validate is linked
against the pinned Kubernetes' registry strategies and runs what the apiserver runs on create
(defaulting, PrepareForCreate, Validate, ObjectMeta checks) on every object, and on every pod template
embedded in a RayJob/RayCluster, which KubeRay turns into pods the apiserver would refuse. RayJob and
RayCluster themselves go through the apiextensions-apiserver's custom resource strategy with the
pinned KubeRay CRDs (schema, defaults, and the CRDs' CEL rules, which kubeconform does not run).
An object of a kind it has neither a strategy nor a CRD for is left out and listed as skipped: `check`
names it and fails the row. `kinds` lists what it validates (a test holds that against the templates).

The Helm release Secret is not in the stream: `release_size` estimates it (see there).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections import namedtuple
from pathlib import Path

from generator.pinned_tools import CHART_DIR, ToolMissing, binary, cache_dir, kuberay_version, tool_dir
from generator.render import procs

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

# core.MaxSecretSize: the apiserver's limit on the data of one Secret (and of one ConfigMap).
SECRET_LIMIT = 1024 * 1024


class Finding(namedtuple("Finding", "kind name field message template", defaults=("",))):
    """kind, name, field; message: the apiserver's text, field path first; template: an embedded pod
    template's path in its object, when the finding is inside one."""

    __slots__ = ()


class Report(namedtuple("Report", "kubernetes objects pod_templates findings warnings skipped")):
    """kubernetes: str, objects: int (validated), pod_templates: int, findings and warnings: list[Finding];
    skipped: list[str], the kinds of the objects it did not validate (`Kind.group`: no strategy of its own
    and no CRD given), which `check` must name rather than count as valid."""

    __slots__ = ()


class Kind(namedtuple("Kind", "api_version kind by")):
    """One apiVersion and kind kube-validate validates; by: "registry strategy" or "CRD"."""

    __slots__ = ()


def _finding(f: dict[str, Any]) -> Finding:
    return Finding(f.get("kind", "?"), f.get("name", "?"), f.get("field", ""), f.get("message", ""),
                   f.get("template", ""))


# The CRDs of the kinds the chart renders, at the version it renders (kube-validate loads <Kind>.json
# when an object of that kind arrives).
# The CRDs of the kinds the chart renders: (the tool holding them, file, the version the chart writes).
CHART_CRDS = (("kuberay-crds", "ray.io_rayjobs.yaml", "v1"), ("kuberay-crds", "ray.io_rayclusters.yaml", "v1"),
              ("agent-sandbox-crds", "extensions.agents.x-k8s.io_sandboxtemplates.yaml", "v1beta1"),
              ("agent-sandbox-crds", "extensions.agents.x-k8s.io_sandboxwarmpools.yaml", "v1beta1"))


def _is_pod_template(schema: Any) -> bool:
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    return {"metadata", "spec"} <= set(props) and "containers" in props["spec"].get("properties", {})


def _has_cel(node: Any) -> bool:
    if isinstance(node, dict):
        return "x-kubernetes-validations" in node or any(_has_cel(v) for v in node.values())
    return isinstance(node, list) and any(_has_cel(v) for v in node)


def _open_pod_templates(node: Any) -> None:
    """Replace each embedded PodTemplateSpec schema with an open object: kube-validate validates the
    templates with Kubernetes' own PodTemplate validation (typed decoding and every rule, a superset of
    the CRD's copy of the OpenAPI schema), and without them a CRD is 20 KB instead of 440 KB, which
    kube-validate loads in ~15 ms instead of ~200 ms. A template schema holding a CEL rule is kept
    (none in KubeRay v1.6.1), so no rule of the CRD is lost."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if _is_pod_template(sub) and not _has_cel(sub):
                    props[key] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        for value in node.values():
            _open_pod_templates(value)
    elif isinstance(node, list):
        for value in node:
            _open_pod_templates(value)


def crd_json() -> Path:
    """The pinned KubeRay and agent-sandbox CRDs for kube-validate, once per pair of versions: JSON, the rendered
    version only, pod templates opened (see `_open_pod_templates`)."""
    from generator.render.kubeconform import _atomic_dir, not_a_crd

    srcs = {tool: tool_dir(tool) for tool in ("kuberay-crds", "agent-sandbox-crds")}
    for src in srcs.values():
        if not src.is_dir():
            raise ToolMissing(f"the CRDs of the chart's custom kinds are not fetched; run `make tools` "
                              f"(expected {src})")

    def build(out: Path) -> None:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        for tool, name, version in CHART_CRDS:
            src = srcs[tool]
            try:
                crd = yaml.load((src / name).read_text(), Loader=loader)
                crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] == version]
                kind = crd["spec"]["names"]["kind"]
            except (yaml.YAMLError, LookupError, TypeError) as exc:
                raise not_a_crd(src / name, exc) from None
            _open_pod_templates(crd)
            (out / f"{kind}.json").write_text(json.dumps(crd))

    folder = f"kuberay-{kuberay_version()}-{srcs['agent-sandbox-crds'].name}-kube-validate-v3"
    return _atomic_dir(cache_dir() / "schemas" / folder, build)


class Run:
    """One kube-validate process, started early; `feed` hands it the stream without waiting, so it
    runs beside kubeconform; `finish` collects the report. Its failure (it cannot start, crashes,
    ends with a code other than 0, prints what is not its report) is a CheckFailed."""

    def __init__(self) -> None:
        from generator.render.kubeconform import schema_failure

        # A run lives ~30 ms: Go's collector off below 128 MiB, from start-up (package init allocates
        # most) — ~20% less CPU, on two cores shared with helm, kubeconform and this process.
        env = {**os.environ, "GOGC": "off", "GOMEMLIMIT": "128MiB"}
        self.path = binary("kube-validate")
        try:
            crds = crd_json()
        except OSError as exc:
            raise schema_failure(exc) from None
        try:
            self.proc = subprocess.Popen([self.path, "-crds", str(crds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace", env=env)
        except OSError as exc:
            raise procs.cannot_start("kube-validate", self.path, exc) from None
        self._thread: threading.Thread | None = None
        self._output: tuple[str, str] = ("", "")

    def feed(self, manifests: str) -> None:
        def talk() -> None:
            self._output = self.proc.communicate(manifests)

        self._thread = threading.Thread(target=talk, daemon=True)
        self._thread.start()

    def finish(self, manifests: str | None = None) -> Report:
        if self._thread is None:
            self.feed(manifests or "")
        assert self._thread is not None
        self._thread.join()
        stdout, stderr = self._output
        if self.proc.returncode != 0:  # it exits 2 on a failure, 0 with a report
            raise procs.failed("kube-validate", self.path, self.proc.returncode, stderr, stdout)
        try:
            data = json.loads(stdout)
            return Report(data["kubernetes"], data["objects"], data["podTemplates"],
                          [_finding(f) for f in data["findings"]], [_finding(f) for f in data["warnings"]],
                          [str(k) for k in data["skipped"]])
        except (ValueError, LookupError, TypeError, AttributeError):
            raise procs.failed("kube-validate", self.path, self.proc.returncode, stdout, stderr,
                               what="answered with what is not its JSON report") from None

    def cancel(self) -> None:
        """Stop kube-validate and reap it (nothing is left running)."""
        self.proc.kill()
        if self._thread is not None:
            self._thread.join()
        else:
            self.proc.communicate()


def validate(manifests: str) -> Report:
    """kube-validate over a multi-document YAML stream."""
    return Run().finish(manifests)


def kinds() -> list[Kind]:
    """What kube-validate validates (`kube-validate -kinds`): its registry strategies' kinds at every
    version the scheme decodes, and the served versions of the chart's CRDs."""
    from generator.render.kubeconform import schema_failure

    path = binary("kube-validate")
    try:
        crds = crd_json()
    except OSError as exc:
        raise schema_failure(exc) from None
    try:
        done = subprocess.run([path, "-kinds", "-crds", str(crds)], capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=60)
    except OSError as exc:
        raise procs.cannot_start("kube-validate", path, exc) from None
    if done.returncode != 0:
        raise procs.failed("kube-validate", path, done.returncode, done.stderr, done.stdout)
    try:
        return [Kind(k["apiVersion"], k["kind"], k["by"]) for k in json.loads(done.stdout)]
    except (ValueError, LookupError, TypeError):
        raise procs.failed("kube-validate", path, done.returncode, done.stdout, done.stderr,
                           what="answered -kinds with what is not its list") from None


def _chart_files(chart: Path) -> list[dict[str, str]]:
    import base64

    out = []
    for path in sorted(p for p in chart.rglob("*") if p.is_file()):
        out.append({"name": str(path.relative_to(chart)), "data": base64.b64encode(path.read_bytes()).decode()})
    return out


def release_size(values: dict[str, Any], manifests: str, chart: Path = CHART_DIR) -> tuple[int, bool]:
    """Estimated bytes of the Helm release Secret, and whether that is exact-ish (gzipped) or a bound.

    Helm (3 and 4, Secret storage driver) stores every revision as one Secret whose `release` key is
    base64(gzip(JSON of the release)): the chart with every file (base64 in the JSON), the user values,
    the rendered manifest and hooks. The apiserver refuses a Secret whose data is over 1 MiB, so
    `helm install` fails. When base64 of the uncompressed JSON already fits, that bound is returned
    (gzip never grows text by more than a few bytes per 32 KiB block) and nothing is compressed."""
    release = {
        "chart": {"files": _chart_files(chart)},
        "config": values,
        "manifest": manifests,
    }
    raw = json.dumps(release, separators=(",", ":")).encode()
    bound = (len(raw) + len(raw) // 1000 + 64 + 2) // 3 * 4
    if bound <= SECRET_LIMIT:
        return bound, False
    import base64
    import gzip

    packed = gzip.compress(raw, compresslevel=9, mtime=0)
    return len(base64.b64encode(packed)), True
