"""kubeconform over rendered manifests, with every schema kept offline.

Core kinds come from the strict schemas that the `kubernetes-validate` package ships for the pinned
Kubernetes minor; they are bundled into standalone files (kubeconform cannot follow their absolute
`$ref`s). RayJob and RayCluster schemas are converted from the pinned KubeRay CRDs. Both sets are
built once into the tool cache, keyed by version.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import namedtuple
from pathlib import Path

from generator.errors import CheckFailed
from generator.pinned_tools import (
    ToolMissing,
    binary,
    cache_dir,
    fetch_crds_hint,
    kube_version,
    kuberay_version,
    tool_dir,
)
from generator.render import procs

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def kube_minor() -> str:
    """`v1.36.0` for a pinned v1.36.3 (or `check --kube-version 1.36`): the schema sets are per minor."""
    major, minor, _ = kube_version().lstrip("v").split(".")
    return f"v{major}.{minor}.0"


def _atomic_dir(dest: Path, build: Callable[[Path], object]) -> Path:
    if (dest / ".complete").exists():
        return dest
    import shutil
    import tempfile

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        build(tmp)
        (tmp / ".complete").touch()
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _bundle(node: Any, defs: dict[str, Any], need: dict[str, Any]) -> None:
    """Point `$ref`s at a local `definitions` section holding every definition reached."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and "#/$defs/" in ref:
            name = ref.split("#/$defs/", 1)[1]
            node["$ref"] = "#/definitions/" + name
            if name not in need:
                need[name] = sub = json.loads(json.dumps(defs[name]))
                _bundle(sub, defs, need)
        for value in node.values():
            _bundle(value, defs, need)
    elif isinstance(node, list):
        for value in node:
            _bundle(value, defs, need)


def _kubernetes_validate_version() -> str:
    """The installed kubernetes-validate's version, from its dist-info folder's name (importlib.metadata
    costs ~40 ms of imports, on `check`'s critical path)."""
    import importlib.util

    spec = importlib.util.find_spec("kubernetes_validate")
    if spec and spec.submodule_search_locations:
        found = sorted(Path(spec.submodule_search_locations[0]).parent.glob("kubernetes_validate-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix("kubernetes_validate-").removesuffix(".dist-info")
    from importlib.metadata import version

    return version("kubernetes-validate")


def core_schemas() -> Path:
    dest = cache_dir() / "schemas" / f"kubernetes-{kube_minor()}-strict-kv{_kubernetes_validate_version()}"

    def build(out: Path) -> None:
        import importlib.util

        # The package's data only: importing kubernetes_validate itself costs ~0.1 s.
        spec = importlib.util.find_spec("kubernetes_validate")
        if not spec or not spec.submodule_search_locations:
            raise ToolMissing("the kubernetes-validate package (kubeconform's core schemas) is not installed: "
                              "`pip install -e .`")
        src = Path(spec.submodule_search_locations[0]) / "kubernetes-json-schema" / f"{kube_minor()}-local-strict"
        defs = json.loads((src / "_definitions.json").read_text())["$defs"]
        for path in src.glob("*.json"):
            if path.name.startswith("_") or path.name.endswith("list-v1.json"):
                continue
            schema = json.loads(path.read_text())
            if "kind" not in schema.get("properties", {}) or "apiVersion" not in schema.get("properties", {}):
                continue
            need: dict[str, Any] = {}
            _bundle(schema, defs, need)
            schema["definitions"] = need
            (out / path.name).write_text(json.dumps(schema))

    return _atomic_dir(dest, build)


def _strict(node: Any) -> Any:
    """openAPIV3Schema -> kubeconform's strict JSON Schema (as its openapi2jsonschema does)."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if out.pop("x-kubernetes-int-or-string", False):
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        preserve = out.pop("x-kubernetes-preserve-unknown-fields", False)
        if "properties" in out and "additionalProperties" not in out and not preserve:
            out["additionalProperties"] = False
        for key in list(out):
            if key.startswith("x-kubernetes-"):
                del out[key]
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def crd_schemas() -> Path:
    """The CRDs' schemas for kubeconform: KubeRay's (the chosen version) and agent-sandbox's (the pinned one, the
    kinds of sandbox.backend agent-sandbox), in one folder per pair of versions."""
    src = tool_dir("kuberay-crds")
    if not src.is_dir():
        raise ToolMissing(f"the KubeRay {kuberay_version()} CRDs are not fetched; {fetch_crds_hint()} (expected {src})")
    sandbox = tool_dir("agent-sandbox-crds")
    if not sandbox.is_dir():
        raise ToolMissing(f"the agent-sandbox CRDs are not fetched; run `bash hack/tools.sh agent-sandbox-crds` "
                          f"(expected {sandbox})")

    def build(out: Path) -> None:
        import yaml

        for path in sorted(src.glob("*.yaml")) + sorted(sandbox.glob("*.yaml")):
            try:
                crd = yaml.safe_load(path.read_text())
                spec = crd["spec"]
                kind = spec["names"]["kind"].lower()
                schemas = {v["name"]: _strict(v["schema"]["openAPIV3Schema"]) for v in spec["versions"]}
            except (yaml.YAMLError, LookupError, TypeError) as exc:
                raise not_a_crd(path, exc) from None
            for version, schema in schemas.items():
                schema["properties"]["apiVersion"] = {"type": "string", "enum": [f"{spec['group']}/{version}"]}
                schema["properties"]["kind"] = {"type": "string", "enum": [spec["names"]["kind"]]}
                (out / f"{kind}-{spec['group']}-{version}.json").write_text(json.dumps(schema))

    return _atomic_dir(cache_dir() / "schemas" / f"kuberay-{kuberay_version()}-{sandbox.name}-v2", build)


def not_a_crd(path: Path, exc: Exception) -> CheckFailed:
    return CheckFailed(f"{path}: not a CRD with the fields expected ({type(exc).__name__}: "
                       f"{procs.first_line(str(exc))}); fetch the CRDs again: `make tools`")


def schema_failure(exc: OSError) -> CheckFailed:
    """A schema folder that cannot be read or written (the tool cache, the installed packages)."""
    return CheckFailed(f"the schemas for kubeconform and kube-validate: {exc.filename or ''}: {exc.strerror or exc} "
                       "(the tool cache: $DOCKYARD_TOOLS_CACHE, else ~/.cache/dockyard-k8s)")


class Result(namedtuple("Result", "kind name status message", defaults=("",))):
    """kind, name, status (valid, invalid, error, skipped), message: str."""

    __slots__ = ()


# kubeconform exits 0 when every object is valid, 1 when one is not; any other end is its failure.
EXPECTED_EXITS = (0, 1)


class Run:
    """One kubeconform -strict process, started early so its start-up overlaps other work. Its failure
    (it cannot start, crashes, ends with another code, prints what is not its report) is a CheckFailed."""

    def __init__(self) -> None:
        try:
            core, crds = core_schemas(), crd_schemas()
        except OSError as exc:
            raise schema_failure(exc) from None
        self.path = binary("kubeconform")
        cmd = [
            self.path, "-strict", "-output", "json", "-verbose",
            "-kubernetes-version", kube_minor().lstrip("v"),
            "-schema-location", f"{core}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
            "-schema-location", f"{crds}/{{{{ .ResourceKind }}}}-{{{{ .Group }}}}-{{{{ .ResourceAPIVersion }}}}.json",
            "-",
        ]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, encoding="utf-8", errors="replace")
        except OSError as exc:
            raise procs.cannot_start("kubeconform", self.path, exc) from None

    _output: tuple[str, str] | None = None

    def feed(self, manifests: str) -> None:
        """Send the stream and collect kubeconform's answer (for `finish` to read)."""
        self._output = self.proc.communicate(manifests)

    def finish(self, manifests: str | None = None) -> list[Result]:
        """The results; `manifests` is sent unless `feed` already sent the stream."""
        if self._output is None:
            self.feed(manifests or "")
        assert self._output is not None
        stdout, stderr = self._output
        code = self.proc.returncode
        if code not in EXPECTED_EXITS:
            raise procs.failed("kubeconform", self.path, code, stderr, stdout)
        try:
            report = json.loads(stdout)
            resources = report["resources"] or []  # null when the stream holds no object
            return [
                Result(str(r.get("kind", "?")), str(r.get("name", "?")),
                       str(r.get("status", "?")).removeprefix("status").lower(), _short(str(r.get("msg", ""))))
                for r in resources
            ]
        except (ValueError, LookupError, TypeError, AttributeError):
            raise procs.failed("kubeconform", self.path, code, stdout, stderr,
                               what="answered with what is not its JSON report") from None

    def cancel(self) -> None:
        """Stop kubeconform and reap it (nothing is left running)."""
        self.proc.kill()
        if self._output is None:
            self._output = self.proc.communicate()


def validate(manifests: str) -> list[Result]:
    """kubeconform -strict over a multi-document YAML stream."""
    return Run().finish(manifests)


def _short(message: str) -> str:
    """Drop kubeconform's boilerplate and the schema file URL; keep where and what."""
    boilerplate = r"^problem validating schema\. Check JSON formatting: jsonschema validation failed with '[^']*' - "
    return re.sub(boilerplate, "", message)


_KIND = re.compile(r"^kind: *(\S+)", re.M)
_NAME = re.compile(r"^metadata:\n(?:  .*\n)*?  name: *[\"']?([^\"'\n]+)", re.M)


def in_stream_order(results: list[Result], manifests: str) -> list[Result]:
    """kubeconform reports in goroutine order; put results back in the stream's (helm's) order."""
    order: dict[tuple[str, str], int] = {}
    for doc in re.split(r"^---", manifests, flags=re.M):
        kind, name = _KIND.search(doc), _NAME.search(doc)
        if kind and name:
            order.setdefault((kind.group(1), name.group(1).strip()), len(order))
    return sorted(results, key=lambda r: order.get((r.kind, r.name), len(order)))
