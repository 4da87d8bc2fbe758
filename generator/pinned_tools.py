"""Where things live outside the repo: the pinned tools, ${XDG_CACHE_HOME:-~/.cache}/dockyard-k8s/<tool>-<version>/,
and the local playground's state (its kubeconfig is the live verbs' last default)."""

from __future__ import annotations

import contextlib
import os
from contextvars import ContextVar
from pathlib import Path

from generator import tool_table
from generator.bundled import chart_dir, clone, needs_clone
from generator.errors import ToolMissing  # raised here; defined with the CLI's other errors (a light import)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


def __getattr__(name: str) -> Path:
    """`REPO`: the root of the clone this package runs from (generator/maint, the tests and the tool builds write
    into it or read it); NeedsClone from an installed package, which has none and never reads outside its files."""
    if name == "REPO":
        return needs_clone("reading the repository's own files (generator.pinned_tools.REPO)", "make help")
    raise AttributeError(f"module 'generator.pinned_tools' has no attribute {name!r}")


TOOLS_TABLE = tool_table.TABLE  # the pins, and every tool's cache entry (shipped inside the package)
CHART_DIR = chart_dir()  # the clone's charts/dockyard, or an installed package's own copy (generator/bundled.py)


PLAYGROUND_DIR_ENV = "DOCKYARD_PLAYGROUND_DIR"


def playground_state_dir() -> Path:
    """`$DOCKYARD_PLAYGROUND_DIR`, else `${XDG_STATE_HOME:-~/.local/state}/dockyard-k8s/playground`. Here and
    not in generator.playground: the product reads the playground's kubeconfig without depending on the dev
    cluster's package (which imports this)."""
    env = os.environ.get(PLAYGROUND_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return state_dir() / "playground"


def state_dir() -> Path:
    """`${XDG_STATE_HOME:-~/.local/state}/dockyard-k8s`: what the CLI keeps between runs."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "dockyard-k8s"


def versions() -> dict[str, str]:
    """Every pin by name (KUBERNETES_VERSION, HELM_VERSION, ...) with its version, from the table of tools."""
    return tool_table.load().pins


def cache_dir() -> Path:
    env = os.environ.get("DOCKYARD_TOOLS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dockyard-k8s"


def tool_dir(tool: str) -> Path:
    """The cache folder of a tool (a target of the table: helm, kubeconform, kuberay-crds, kube-validate, ...).
    kuberay-crds follows `kuberay_version()` (`check --kuberay-version`), kuberay and kubernetes the playground's
    choice (`$DOCKYARD_PLAYGROUND_KUBERAY`, `$DOCKYARD_PLAYGROUND_KUBERNETES`)."""
    if tool == "kuberay-crds":
        return cache_dir() / f"{tool}-{kuberay_version()}"
    if tool == "kuberay" and os.environ.get(PLAYGROUND_KUBERAY_ENV):
        return cache_dir() / f"{tool}-{playground_kuberay()}"
    if tool == "kubernetes" and os.environ.get(PLAYGROUND_KUBERNETES_ENV):
        return cache_dir() / f"{tool}-{playground_kubernetes()}"
    return cache_dir() / tool_table.load().tools[tool].folder


# --- the versions users run: KubeRay minors with their own CRDs, Kubernetes minors ---

_kuberay: ContextVar[str | None] = ContextVar("dockyard_kuberay", default=None)
_kube: ContextVar[str | None] = ContextVar("dockyard_kube", default=None)


class VersionUnsupported(ValueError):
    """A --kuberay-version / --kube-version outside the supported range (the CLI's exit 2)."""


def kuberay_range() -> str:
    return f"v{next(iter(KUBERAY_PINS))}-v{list(KUBERAY_PINS)[-1]}"


def kube_range() -> str:
    return f"v1.{KUBE_MINORS[0]}-v1.{KUBE_MINORS[-1]}"


def _minor_of(text: str) -> str:
    """`1.4` for 1.4, v1.4, v1.4.2, 1.4.2; '' when it is not such a version."""
    import re

    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", text.strip())
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else ""


def _by_minor(entry: str) -> dict[str, str]:
    """Minor (1.4) -> pin name of every version the table builds the cache entry `entry` at, oldest first."""
    found = {_minor_of(version): pin for pin, version in tool_table.load().versions_of(entry).items()}
    return dict(sorted(found.items(), key=lambda kv: tuple(map(int, kv[0].split(".")))))


# KubeRay minor -> its pin: each minor whose CRDs the table fetches (`check --kuberay-version`).
KUBERAY_PINS = _by_minor("kuberay-crds")
# Kubernetes minor -> its pin: each minor the table builds a control plane of (`$DOCKYARD_PLAYGROUND_KUBERNETES`).
PLAYGROUND_KUBE_PINS = _by_minor("kubernetes")
# The Kubernetes minors claimed: from the oldest pinned control plane to the newest (both run live), every minor
# between them offline: kubeconform's strict schemas (kubernetes-validate ships 1.25-1.37) and Helm's
# capabilities per minor; the apiserver validation is kube-validate's pinned minor (the newest).
_kube_pinned = [int(minor.split(".")[1]) for minor in PLAYGROUND_KUBE_PINS]
KUBE_MINORS = tuple(range(_kube_pinned[0], _kube_pinned[-1] + 1))


def kuberay_pin(text: str) -> str:
    """The pinned KubeRay version (v1.4.N) of the minor `text` names; VersionUnsupported otherwise.
    A patch other than the pinned one is refused too: its CRDs are not the ones fetched."""
    minor, given = _minor_of(text), text.strip().lstrip("v")
    pinned = versions().get(KUBERAY_PINS.get(minor, ""), "")
    offered = ", ".join(versions()[KUBERAY_PINS[m]] for m in sorted(KUBERAY_PINS))
    if not pinned:
        raise VersionUnsupported(f"dockyard-k8s supports KubeRay {kuberay_range()} (CRDs pinned: {offered})")
    if given.count(".") == 2 and given != pinned.lstrip("v"):
        raise VersionUnsupported(f"the CRDs pinned for KubeRay {minor} are {pinned}'s (pinned: {offered}); "
                                 f"give the minor, {minor}")
    return pinned


def kube_minor_pin(text: str) -> str:
    """`v1.34.0` for 1.34 / v1.34 / v1.34.2 when that minor is claimed; VersionUnsupported otherwise."""
    minor = _minor_of(text)
    if not minor or minor.split(".")[0] != "1" or int(minor.split(".")[1]) not in KUBE_MINORS:
        raise VersionUnsupported(f"dockyard-k8s supports Kubernetes {kube_range()}")
    return f"v{minor}.0"


def kuberay_version() -> str:
    """The KubeRay version whose CRDs `check` validates against: `--kuberay-version`, else the pin."""
    return _kuberay.get() or versions()["KUBERAY_VERSION"]


def kube_version() -> str:
    """The Kubernetes version `check` targets (kubeconform's schemas, Helm's capabilities):
    `--kube-version`'s minor as v1.X.0, else the pinned KUBERNETES_VERSION."""
    return _kube.get() or versions()["KUBERNETES_VERSION"]


def build_hint(target: str = "") -> str:
    """The command that builds the tool `target` (hack/tools.sh's name; empty: every default tool) into the cache.
    From an installed package (no hack/tools.sh) it names the clone that builds into the same cache."""
    command = f"bash hack/tools.sh {target}" if target else "make tools"
    if clone() is not None:
        return f"run `{command}`"
    return (f"build it from a clone of the dockyard-k8s repository with `{command}` (into {cache_dir()}, "
            "where this install finds it)")


def tools_script(what: str = "`playground up`", make: str = "make playground") -> Path:
    """hack/tools.sh, the clone's builder of the pinned tools (the playground's builds run it); NeedsClone (exit 1,
    one sentence naming `make`) when `what` runs from an installed package."""
    return needs_clone(what, make) / "hack" / "tools.sh"


def fetch_crds_hint() -> str:
    """How to fetch the chosen KubeRay version's CRDs (hack/tools.sh's tool name for it)."""
    chosen = kuberay_version()
    if chosen == versions()["KUBERAY_VERSION"]:
        return build_hint()
    minor = next(m for m, pin in KUBERAY_PINS.items() if versions().get(pin) == chosen)
    return build_hint(f"kuberay-crds-{minor}")


# The KubeRay minor the playground runs (operator and CRDs: `hack/tools.sh kuberay-1.4`); `make test-matrix`.
PLAYGROUND_KUBERAY_ENV = "DOCKYARD_PLAYGROUND_KUBERAY"


def playground_kuberay() -> str:
    """The pinned KubeRay version of `$DOCKYARD_PLAYGROUND_KUBERAY` (a minor), else KUBERAY_VERSION; a minor
    outside the range is ToolMissing (exit 1) naming the variable."""
    given = os.environ.get(PLAYGROUND_KUBERAY_ENV)
    if not given:
        return versions()["KUBERAY_VERSION"]
    try:
        return kuberay_pin(given)
    except VersionUnsupported as exc:
        raise ToolMissing(f"{PLAYGROUND_KUBERAY_ENV}={given}: {exc}") from None


# The Kubernetes minor the playground's control plane runs (`hack/tools.sh kubernetes-1.33`); `make test-matrix`.
# Only minors with a control-plane pin (PLAYGROUND_KUBE_PINS); the real node's kubelet stays KUBERNETES_VERSION.
PLAYGROUND_KUBERNETES_ENV = "DOCKYARD_PLAYGROUND_KUBERNETES"


def playground_kubernetes() -> str:
    """The pinned Kubernetes version of `$DOCKYARD_PLAYGROUND_KUBERNETES` (a minor), else KUBERNETES_VERSION;
    a minor without a control-plane pin is ToolMissing (exit 1) naming the variable and the pinned minors."""
    given = os.environ.get(PLAYGROUND_KUBERNETES_ENV)
    if not given:
        return versions()["KUBERNETES_VERSION"]
    minor = _minor_of(given)
    pinned = versions().get(PLAYGROUND_KUBE_PINS.get(minor, ""), "")
    exact = given.strip().lstrip("v").count(".") < 2 or given.strip().lstrip("v") == pinned.lstrip("v")
    if not pinned or not exact:
        offered = " and ".join(f"{m} ({versions()[k]})" for m, k in sorted(PLAYGROUND_KUBE_PINS.items()))
        raise ToolMissing(f"{PLAYGROUND_KUBERNETES_ENV}={given}: the playground's control plane is pinned for "
                          f"Kubernetes {offered} only (dockyard-k8s supports Kubernetes {kube_range()}); "
                          "give one of those minors")
    return pinned


def playground_targets(tools: tuple[str, ...]) -> list[str]:
    """hack/tools.sh's names of the cache entries tool_dir() picks for `tools` (kubernetes-1.33, kuberay-1.4)."""
    chosen = {"kubernetes": (playground_kubernetes, PLAYGROUND_KUBE_PINS),
              "kuberay": (playground_kuberay, KUBERAY_PINS)}
    out = []
    for t in tools:
        pick, pins = chosen.get(t, (None, {}))
        version = pick() if pick else ""
        own = f"{t.upper()}_VERSION"  # the default pin's target is the bare tool name
        minor = next((m for m, k in pins.items() if k != own and versions()[k] == version), "")
        out.append(f"{t}-{minor}" if minor else t)
    return out


@contextlib.contextmanager
def targeting(kuberay: str | None = None, kube: str | None = None) -> Iterator[None]:
    """Run the enclosed code against KubeRay `kuberay` and Kubernetes `kube` (resolved pins; None: the pins)."""
    tokens = _kuberay.set(kuberay), _kube.set(kube)
    try:
        yield
    finally:
        _kuberay.reset(tokens[0])
        _kube.reset(tokens[1])


# The upstream tools a user can install by hand (the others are built from this repository's tools/ or patched).
UPSTREAM = ("helm", "kubeconform")


def binary(name: str, tool: str | None = None) -> str:
    """Path of a pinned binary: the cache's, else the one on PATH, else ToolMissing naming the command that
    builds it (and, for helm and kubeconform, the pinned version to put on PATH)."""
    path = tool_dir(tool or name) / name
    if path.is_file():
        return str(path)
    import shutil

    found = shutil.which(name)
    if found:
        return found
    on_path = ""
    if name in UPSTREAM and (tool or name) in tool_table.load().tools:
        on_path = f", or put {name} {tool_table.load().tools[tool or name].version} on PATH"
    raise ToolMissing(f"{name} is neither in the tool cache ({path}) nor on PATH; {build_hint()}{on_path}")
