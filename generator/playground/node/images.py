"""OCI image layouts written by the project itself: no registry, nothing pulled.

Two images, built from the `node-images` tool entry (hack/tools.sh: the pause and executor
binaries from tools/node-images, busybox-static and bash-static from Debian):

- `dockyard.local/pause:<v>`: the pod sandbox image (containerd's pinned sandbox image).
- `dockyard.local/playground-executor:<v>`: a STAND-IN for the sandbox's `ubuntu-swe` executor
  image. It serves the executor API on $DOCKYARD_EXECUTOR_PORT (POST /task/submit, GET /health),
  runs as any UID, needs nothing writable but its work dir, and carries bash and busybox tools.

Each layout is one uncompressed layer, written deterministically (mtime 0, root-owned), and cached
as `<tool dir>/oci/<image>-<recipe hash>.tar` beside the binaries it was made from.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REGISTRY = "dockyard.local"
# busybox applets linked into the executor image's /bin
APPLETS = [
    "sh", "cat", "echo", "ls", "id", "env", "sleep", "kill", "ps", "mount", "touch", "mkdir", "rm",
    "nc", "nslookup", "grep", "head", "tail", "wc", "printf", "true", "false", "test", "chroot",
    "hostname", "uname", "whoami", "dd", "stat", "readlink", "sed", "tr", "cut", "awk", "find",
]
PASSWD = ("root:x:0:0:root:/root:/bin/sh\nexecutor:x:10001:10001:executor:/workspace:/bin/sh\n"
          "nobody:x:65534:65534:nobody:/:/bin/false\n")
GROUP = "root:x:0:\nexecutor:x:10001:\nnobody:x:65534:\n"


def refs(version: str) -> dict[str, str]:
    return {
        "pause": f"{REGISTRY}/pause:{version}",
        "executor": f"{REGISTRY}/playground-executor:{version}",
    }


def _add(tar: tarfile.TarFile, name: str, *, data: bytes | None = None, mode: int = 0o644,
         kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
    info.type, info.mode, info.linkname = kind, mode, link
    if data is not None:
        info.size = len(data)
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def _layer(files: list[tuple]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in files:
            name, kw = entry[0], entry[1]
            _add(tar, name, **kw)
    return buf.getvalue()


def pause_layer(bins: Path) -> bytes:
    return _layer([("pause", {"data": (bins / "pause").read_bytes(), "mode": 0o755})])


def executor_layer(bins: Path) -> bytes:
    files: list[tuple] = [
        ("bin", {"kind": tarfile.DIRTYPE, "mode": 0o755}),
        ("bin/busybox", {"data": (bins / "busybox").read_bytes(), "mode": 0o755}),
        ("bin/bash", {"data": (bins / "bash").read_bytes(), "mode": 0o755}),
        ("executor", {"data": (bins / "executor").read_bytes(), "mode": 0o755}),
        ("etc", {"kind": tarfile.DIRTYPE, "mode": 0o755}),
        ("etc/passwd", {"data": PASSWD.encode()}),
        ("etc/group", {"data": GROUP.encode()}),
        ("etc/nsswitch.conf", {"data": b"passwd: files\ngroup: files\nhosts: files dns\n"}),
        ("tmp", {"kind": tarfile.DIRTYPE, "mode": 0o1777}),
        ("root", {"kind": tarfile.DIRTYPE, "mode": 0o700}),
        ("workspace", {"kind": tarfile.DIRTYPE, "mode": 0o1777}),
    ]
    files += [(f"bin/{a}", {"kind": tarfile.SYMTYPE, "mode": 0o777, "link": "busybox"}) for a in APPLETS]
    return _layer(files)


def _blob(out: tarfile.TarFile, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    _add(out, f"blobs/sha256/{digest}", data=data)
    return f"sha256:{digest}"


def write_layout(path: Path, ref: str, layer: bytes, config: dict) -> None:
    """Write an OCI image layout tarball holding one image named `ref` (atomically)."""
    config_doc = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
        "history": [{"created_by": "dockyard-k8s generator/playground/node/images.py"}],
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as out:
        _add(out, "blobs", kind=tarfile.DIRTYPE, mode=0o755)
        _add(out, "blobs/sha256", kind=tarfile.DIRTYPE, mode=0o755)
        layer_digest = _blob(out, layer)
        config_bytes = json.dumps(config_doc, sort_keys=True).encode()
        config_digest = _blob(out, config_bytes)
        manifest = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                       "size": len(config_bytes)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest,
                        "size": len(layer)}],
        }, sort_keys=True).encode()
        manifest_digest = _blob(out, manifest)
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": len(manifest),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"io.containerd.image.name": ref,
                                "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1]},
            }],
        }
        _add(out, "oci-layout", data=b'{"imageLayoutVersion": "1.0.0"}')
        _add(out, "index.json", data=json.dumps(index, sort_keys=True).encode())
    tmp = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(buf.getvalue())
    tmp.replace(path)


def _recipe() -> str:
    """A hash of this file: a changed image recipe writes new tarballs."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def ensure_layouts(bins: Path, version: str) -> dict[str, tuple[str, Path]]:
    """{image: (ref, tarball)}, writing the tarballs under `bins`/oci when missing."""
    r = refs(version)
    out = {}
    specs: dict[str, tuple[Callable[[Path], bytes], dict[str, Any]]] = {
        "pause": (pause_layer, {"Entrypoint": ["/pause"]}),
        "executor": (executor_layer, {
            "Entrypoint": ["/executor"],
            "Cmd": ["serve"],
            "Env": ["PATH=/bin", "HOME=/tmp", "DOCKYARD_EXECUTOR_PORT=9090"],
            "WorkingDir": "/",
            "ExposedPorts": {"9090/tcp": {}},
        }),
    }
    for name, (layer_fn, config) in specs.items():
        path = bins / "oci" / f"{name}-{_recipe()}.tar"
        if not path.is_file():
            write_layout(path, r[name], layer_fn(bins), config)
        out[name] = (r[name], path)
    return out
