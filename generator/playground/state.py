"""The playground's state: typed records of what `up` started, kept as `state.json` in the state folder.

The JSON layout is the one every earlier version wrote (same keys, optional keys left out while
unset), so a playground started by an older version is still read, reported on and stopped:

    {"version": 1, "state_dir", "created", "shape": {...}, "ports": {...}, "server", "service_cidr",
     "pod_cidr", "kubeconfig", "kube_version", "components": {name: {name, pid, start_time, exe, log}},
     "pki": {...}, "tokens": {identity: token}, "failed"?, "ready_seconds"?, "real_node"?: {...}, "kueue"?: true}
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from generator.playground.errors import PlaygroundError
from generator.playground.nodes import Shape

STATE_FILE = "state.json"
VERSION = 1


@dataclass
class Process:
    """One started process. `start_time` (clock ticks since boot) tells it from a recycled PID."""

    name: str
    pid: int
    start_time: int
    exe: str
    log: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Process:
        return cls(str(d["name"]), int(d["pid"]), int(d["start_time"]), str(d["exe"]), str(d["log"]))


@dataclass
class Ports:
    """The loopback ports picked free at `up`."""

    etcd: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int
    kuberay_probe: int
    kueue_probe: int = 0  # `up --kueue` (older state files have neither)
    kueue_webhook: int = 0
    agent_sandbox_probe: int = 0  # `up --agent-sandbox`
    provisioner_probe: int = 0  # the volume provisioner (older state files have none)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def to_dict(self) -> dict[str, int]:
        """As saved: the optional ports only when set (an older file reads and writes back as it was)."""
        optional = ("kueue_", "agent_sandbox_", "provisioner_")
        return {k: v for k, v in asdict(self).items() if v or not k.startswith(optional)}


@dataclass
class Pki:
    """Paths of the playground's certificates and keys (generator/playground/pki.py)."""

    ca_crt: str
    ca_key: str
    serving_crt: str
    serving_key: str
    sa_key: str
    sa_pub: str
    front_proxy_crt: str
    front_proxy_key: str


@dataclass
class RealNodeState:
    """What `up --real-node` made (generator/playground/node); addresses and names for the record."""

    name: str
    node_ip: str
    pod_cidr: str
    service_cidr: str
    dns_ip: str
    netns: str
    mntns: str
    cgroup_root: str
    host_link: str
    label: str
    stand_ins: dict[str, str]
    serving: tuple[str, str]  # the kubelet's serving certificate and key
    gpus: int = 0
    components: dict[str, Process] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)
    ready_seconds: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RealNodeState:
        plain = {k: d[k] for k in ("name", "node_ip", "pod_cidr", "service_cidr", "dns_ip", "netns", "mntns",
                                   "cgroup_root", "host_link", "label")}
        crt, key = d["serving"]
        return cls(**plain, stand_ins=dict(d["stand_ins"]), serving=(crt, key), gpus=int(d.get("gpus") or 0),
                   components={n: Process.from_dict(r) for n, r in (d.get("components") or {}).items()},
                   images=dict(d.get("images") or {}), ready_seconds=d.get("ready_seconds"))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["serving"] = list(self.serving)
        if self.ready_seconds is None:
            del out["ready_seconds"]
        return out


@dataclass
class PlaygroundState:
    state_dir: str
    created: str
    shape: Shape
    ports: Ports
    server: str
    service_cidr: str
    pod_cidr: str
    kubeconfig: str
    kube_version: str
    components: dict[str, Process] = field(default_factory=dict)
    pki: Pki | None = None  # None until the PKI is written (a start-up that failed before it)
    tokens: dict[str, str] = field(default_factory=dict)
    real_node: RealNodeState | None = None
    kueue: bool = False  # `up --kueue` (generator/playground/kueue.py)
    agent_sandbox: bool = False  # `up --agent-sandbox` (lifecycle.py: _start_agent_sandbox)
    failed: bool = False
    ready_seconds: float | None = None
    version: int = VERSION

    @property
    def pki_files(self) -> Pki:
        if self.pki is None:
            raise PlaygroundError(f"{self.state_dir}: the playground's PKI was never written")
        return self.pki

    @property
    def ca_file(self) -> str:
        return self.pki_files.ca_crt

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PlaygroundState:
        return cls(
            state_dir=d["state_dir"], created=d["created"], shape=Shape(**d["shape"]), ports=Ports(**d["ports"]),
            server=d["server"], service_cidr=d["service_cidr"], pod_cidr=d["pod_cidr"],
            kubeconfig=d["kubeconfig"], kube_version=d["kube_version"],
            components={n: Process.from_dict(r) for n, r in (d.get("components") or {}).items()},
            pki=Pki(**d["pki"]) if d.get("pki") else None,
            tokens=dict(d.get("tokens") or {}),
            real_node=RealNodeState.from_dict(d["real_node"]) if d.get("real_node") else None,
            kueue=bool(d.get("kueue")), agent_sandbox=bool(d.get("agent_sandbox")),
            failed=bool(d.get("failed")), ready_seconds=d.get("ready_seconds"), version=int(d.get("version", VERSION)),
        )

    def _shape(self) -> dict[str, Any]:
        """As saved: gpu_node_devices and topology only when set (an older file reads and writes back as it was)."""
        return {k: v for k, v in asdict(self.shape).items() if v or k not in ("gpu_node_devices", "topology")}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": self.version, "state_dir": self.state_dir, "created": self.created,
            "shape": self._shape(), "ports": self.ports.to_dict(), "server": self.server,
            "service_cidr": self.service_cidr, "pod_cidr": self.pod_cidr, "kubeconfig": self.kubeconfig,
            "kube_version": self.kube_version, "components": {n: asdict(r) for n, r in self.components.items()},
        }
        if self.pki is not None:
            out["pki"] = asdict(self.pki)
        if self.tokens:
            out["tokens"] = dict(self.tokens)
        if self.real_node is not None:
            out["real_node"] = self.real_node.to_dict()
        if self.kueue:
            out["kueue"] = True
        if self.agent_sandbox:
            out["agent_sandbox"] = True
        if self.failed:
            out["failed"] = True
        if self.ready_seconds is not None:
            out["ready_seconds"] = self.ready_seconds
        return out

    @classmethod
    def load(cls, state_dir: Path) -> PlaygroundState | None:
        """The state in `state_dir`, or None when there is none (or only the `{}` marker of a start)."""
        raw = read_json(state_dir)
        if not raw:
            return None
        try:
            return cls.from_dict(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise PlaygroundError(f"{state_dir / STATE_FILE} is not a playground state file "
                                  f"(missing or bad key: {exc})") from None

    def save(self, state_dir: Path) -> None:
        tmp = state_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True))
        tmp.replace(state_dir / STATE_FILE)


def read_json(state_dir: Path) -> dict[str, Any] | None:
    """The state file as plain JSON (None when missing or unreadable)."""
    try:
        data = json.loads((state_dir / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def mark(state_dir: Path) -> None:
    """Mark a new folder as a playground's before anything else is written into it."""
    (state_dir / STATE_FILE).write_text("{}")


def removable(state_dir: Path) -> bool:
    """Only a folder we made (it has state.json) or an empty one is ever deleted."""
    return (state_dir / STATE_FILE).exists() or not any(state_dir.iterdir())


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """Serialise up/down on one state folder (the lock file sits beside it, so `down` can remove it)."""
    state_dir.parent.mkdir(parents=True, exist_ok=True)
    lock = state_dir.parent / f".{state_dir.name}.lock"
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
