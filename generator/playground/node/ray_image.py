"""The playground's Ray image, built without a registry: `dockyard.local/playground-ray:<ray version>`.

A STAND-IN for the chart's `ubuntu-swe` image on the playground (the chart's defaults do not
change): Debian's `python3` (from the apt sources this machine already uses, via mmdebstrap) plus
`ray[default]` at RAY_VERSION (tools/versions.env) from PyPI, and the probe's only needs (Python
and Ray). Steps, each in the version-keyed cache entry `ray-image-<version>` (hack/tools.sh):

1. `pip download` the wheels for CPython 3.11 / manylinux x86_64 into `wheels/` (binary only), exactly
   the set the lock file `tools/ray-image/ray-<version>.lock` pins, each by version and sha256;
2. mmdebstrap a minbase root filesystem with python3 + pip, installs the locked wheels offline inside it
   (`--no-index --no-deps --require-hashes`), drops pip's caches;
3. writes the OCI image layout `oci/playground-ray.tar` (one uncompressed layer, streamed to disk,
   paths sorted, mtimes clamped, owners kept) with this module's own code.

Run as a script (stdlib only, so hack/tools.sh needs no virtualenv):
    python3 generator/playground/node/ray_image.py build OUT_DIR RAY_VERSION
    python3 generator/playground/node/ray_image.py lock RAY_VERSION   # (re)write the lock file
The Debian packages come from the machine's apt sources as they are that day: only the Python set is locked.
The real node imports the layout at `playground up --real-node` when the entry exists.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LOCKS = REPO / "tools" / "ray-image"
REGISTRY = "dockyard.local"
NAME = "playground-ray"
LAYOUT = "oci/playground-ray.tar"
# files created while building get this mtime (2026-01-01); files from .debs keep theirs (older),
# so the interpreter's byte-code caches stay valid
CLAMP_MTIME = 1767225600
PY = ("3.11", "cp311")  # bookworm's python3
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "linux_x86_64"]
# procps: `ps` for ray's own checks; wget: KubeRay's liveness/readiness probes call it
PACKAGES = ["python3", "python3-pip", "ca-certificates", "procps", "wget"]
SKIP_DIRS = {"proc", "sys", "dev", "run", "tmp"}  # recreated empty in the layer
USER = "ray"  # UID 1000, HOME /home/ray: what ray images use


def ref(version: str) -> str:
    return f"{REGISTRY}/{NAME}:{version}"


def config(version: str) -> dict:
    return {
        "Env": ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/home/ray", "LANG=C.UTF-8",
                "PYTHONDONTWRITEBYTECODE=1", f"DOCKYARD_RAY_VERSION={version}",
                # the network rule: Ray's usage-stats reporter would look up a public host
                "RAY_USAGE_STATS_ENABLED=0"],
        "WorkingDir": "/home/ray",
        "Cmd": ["/bin/bash"],
        "Labels": {"dev.dockyard.playground.stand-in-for": "ubuntu-swe"},
    }


def _say(msg: str) -> None:
    print(f"[ray-image] {msg}", file=sys.stderr, flush=True)


def _run(argv: list[str], **kw) -> None:
    proc = subprocess.run(argv, **kw)
    if proc.returncode != 0:
        raise SystemExit(f"[ray-image] `{' '.join(argv[:6])} …` failed (exit {proc.returncode})")


def debian_sources() -> tuple[str, Path]:
    """(suite, sources file) of the Debian archive this machine's apt already uses."""
    codename = ""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            codename = line.split("=", 1)[1].strip('"')
    candidates = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.sources")),
                  *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]
    for path in candidates:
        text = path.read_text() if path.is_file() else ""
        if "debian-archive-keyring" in text or (path.suffix == ".list" and f"/debian {codename} main" in text):
            return codename, path
    raise SystemExit("[ray-image] no Debian apt source found under /etc/apt (expected one signed by "
                     "debian-archive-keyring); the image's root filesystem is built from it")


def lock_file(version: str) -> Path:
    return LOCKS / f"ray-{version}.lock"


def _pip_download(dest: Path, *what: str) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", *what, "--only-binary=:all:",
            "--python-version", PY[0], "--implementation", "cp", "--abi", PY[1], "-d", str(dest), "-q"]
    for p in PLATFORMS:
        argv += ["--platform", p]
    _run(argv)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_lock(version: str, scratch: Path) -> Path:
    """Resolve ray[default]==version for the image's platform and pin every wheel by version and hash."""
    _pip_download(scratch, f"ray[default]=={version}")
    lines = []
    for wheel in sorted(scratch.glob("*.whl"), key=lambda w: w.name.lower()):
        name, ver = wheel.name.split("-")[:2]
        lines.append(f"{name.lower()}=={ver} --hash=sha256:{_sha256(wheel)}")
    if not any(line.startswith(f"ray=={version} ") for line in lines):
        raise SystemExit(f"[ray-image] resolving ray[default]=={version} gave no ray {version} wheel")
    path = lock_file(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# ray[default]=={version} for CPython {PY[0]} manylinux x86_64: every wheel of the "
                    f"playground's Ray image.\n# Written by `python3 generator/playground/node/ray_image.py lock "
                    f"{version}`; hack/tools.sh keys the image on it.\n" + "\n".join(lines) + "\n")
    return path


def download_wheels(dest: Path, version: str) -> None:
    lock = lock_file(version)
    if not lock.is_file():
        raise SystemExit(f"[ray-image] no lock file for ray {version} ({lock}): run "
                         f"`python3 generator/playground/node/ray_image.py lock {version}`")
    _pip_download(dest, "--no-deps", "--require-hashes", "-r", str(lock))
    shutil.copy(lock, dest / "requirements.lock")


def build_rootfs(rootfs: Path, wheels: Path, version: str) -> None:
    suite, sources = debian_sources()
    install = ('chroot "$1" python3 -m pip install --break-system-packages --no-index --no-cache-dir '
               '--no-deps --require-hashes --find-links /tmp/wheels -r /tmp/wheels/requirements.lock')
    hooks = [
        f'mkdir -p "$1/tmp/wheels" && cp -a {wheels}/. "$1/tmp/wheels/"',
        install,
        f'chroot "$1" useradd --uid 1000 --user-group --create-home --shell /bin/bash {USER}',
        'rm -rf "$1/tmp/wheels" "$1/var/cache/apt" "$1/var/lib/apt/lists" "$1/root/.cache"',
        'mkdir -p "$1/var/cache/apt/archives/partial" "$1/var/lib/apt/lists/partial"',
    ]
    argv = ["mmdebstrap", "--mode=root", "--variant=minbase", "--quiet", f"--include={','.join(PACKAGES)}"]
    for h in hooks:
        argv.append(f"--customize-hook={h}")
    argv += [suite, str(rootfs), str(sources)]
    _run(argv, env={**os.environ, "SOURCE_DATE_EPOCH": str(CLAMP_MTIME)})


def _normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime = min(int(info.mtime), CLAMP_MTIME)
    info.uname = info.gname = ""
    return info


def write_layer(rootfs: Path, out) -> None:
    """The root filesystem as one tar stream: sorted paths, clamped mtimes, numeric owners."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(rootfs):
            here = Path(dirpath)
            rel = here.relative_to(rootfs)
            if rel.parts and rel.parts[0] in SKIP_DIRS:
                dirnames[:] = []
                continue
            dirnames.sort()
            for name in sorted([*dirnames, *filenames]):
                path = here / name
                arc = str(rel / name) if rel.parts else name
                st = path.lstat()
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    continue  # device nodes and sockets: the runtime provides /dev
                info = tar.gettarinfo(str(path), arc)
                if info.isdir() and arc in SKIP_DIRS:
                    info.mode = 0o1777 if arc == "tmp" else 0o755
                if info.isreg():
                    with open(path, "rb") as fh:
                        tar.addfile(_normalize(info), fh)
                else:
                    tar.addfile(_normalize(info))


class _Hashing(io.RawIOBase):
    """A write-only file that hashes and counts what passes through to `fh`."""

    def __init__(self, fh) -> None:
        self.fh, self.sha, self.size = fh, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.fh.write(b)
        self.sha.update(b)
        self.size += len(b)
        return len(b)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def write_layout(rootfs: Path, dest: Path, version: str) -> tuple[str, int]:
    """Write the OCI image layout tarball; returns (manifest digest, layer size)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    layer_tmp = dest.with_suffix(".layer")
    with open(layer_tmp, "wb") as fh:
        h = _Hashing(fh)
        write_layer(rootfs, h)
    layer_digest, layer_size = "sha256:" + h.sha.hexdigest(), h.size
    cfg = json.dumps({
        "architecture": "amd64", "os": "linux", "config": config(version),
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created_by": f"dockyard-k8s ray_image.py: mmdebstrap {' '.join(PACKAGES)} "
                                   f"+ ray[default]=={version}"}],
    }, sort_keys=True).encode()
    cfg_digest = "sha256:" + hashlib.sha256(cfg).hexdigest()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg_digest, "size": len(cfg)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": layer_size}],
    }, sort_keys=True).encode()
    man_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": man_digest, "size": len(manifest),
        "platform": {"architecture": "amd64", "os": "linux"},
        "annotations": {"io.containerd.image.name": ref(version), "org.opencontainers.image.ref.name": version},
    }]}, sort_keys=True).encode()
    tmp = dest.with_suffix(".tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as out:
        _add_bytes(out, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        _add_bytes(out, "index.json", index)
        for digest, data in ((cfg_digest, cfg), (man_digest, manifest)):
            _add_bytes(out, f"blobs/sha256/{digest[7:]}", data)
        info = tarfile.TarInfo(f"blobs/sha256/{layer_digest[7:]}")
        info.size, info.mode = layer_size, 0o644
        with open(layer_tmp, "rb") as fh:
            out.addfile(info, fh)
    layer_tmp.unlink()
    tmp.replace(dest)
    return man_digest, layer_size


def build(out: Path, version: str) -> None:
    t0 = time.monotonic()
    if not shutil.which("mmdebstrap"):
        raise SystemExit("[ray-image] mmdebstrap is missing (Debian package mmdebstrap; run `bash hack/node-deps.sh`)")
    _say(f"pip download ray[default]=={version} as locked in {lock_file(version).relative_to(REPO)} "
         f"(CPython {PY[0]}, manylinux x86_64)")
    download_wheels(out / "wheels", version)
    t1 = time.monotonic()
    rootfs = out / "rootfs"
    _say(f"mmdebstrap {' '.join(PACKAGES)} + the wheels -> {rootfs}")
    build_rootfs(rootfs, out / "wheels", version)
    t2 = time.monotonic()
    digest, size = write_layout(rootfs, out / LAYOUT, version)
    shutil.rmtree(rootfs)
    shutil.rmtree(out / "wheels")
    t3 = time.monotonic()
    facts = {"ref": ref(version), "manifest": digest, "layer_bytes": size, "seconds": {
        "wheels": round(t1 - t0, 1), "rootfs": round(t2 - t1, 1), "layout": round(t3 - t2, 1)}}
    (out / "image.json").write_text(json.dumps(facts, indent=2) + "\n")
    _say(f"{ref(version)}: layer {size / 2**20:.0f} MiB, {t3 - t0:.0f} s "
         f"(wheels {t1 - t0:.0f} s, rootfs {t2 - t1:.0f} s, layout {t3 - t2:.0f} s)")


def layout(cache_entry: Path) -> tuple[str, Path] | None:
    """(ref, tarball) of a built image in its cache entry, or None when it is not built."""
    facts = cache_entry / "image.json"
    if not (cache_entry / ".complete").is_file() or not facts.is_file():
        return None
    return json.loads(facts.read_text())["ref"], cache_entry / LAYOUT


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "build":
        build(Path(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "lock":
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            print(write_lock(sys.argv[2], Path(tmp)))
    else:
        raise SystemExit("usage: ray_image.py build OUT_DIR RAY_VERSION | ray_image.py lock RAY_VERSION")
