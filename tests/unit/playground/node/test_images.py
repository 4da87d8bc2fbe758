"""The real node's OCI image layouts, written by the project's own code: complete, content-addressed,
reproducible byte for byte and cached."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from generator.playground.node import images


def _fake_bins(tmp: Path) -> Path:
    for name in ("pause", "executor", "busybox", "bash"):
        (tmp / name).write_bytes(f"#!{name}\n".encode() * 10)
    return tmp


def _members(tar_path: Path) -> dict[str, bytes]:
    with tarfile.open(tar_path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_oci_layouts_are_complete_and_content_addressed(tmp_path):
    out = images.ensure_layouts(_fake_bins(tmp_path), "7")
    assert out["pause"][0] == "dockyard.local/pause:7"
    assert out["executor"][0] == "dockyard.local/playground-executor:7"
    files = _members(out["executor"][1])
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(files["index.json"])
    desc = index["manifests"][0]
    assert desc["annotations"]["io.containerd.image.name"] == "dockyard.local/playground-executor:7"
    manifest = json.loads(files["blobs/sha256/" + desc["digest"].split(":")[1]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    layer = files["blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]]
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    assert config["config"]["Entrypoint"] == ["/executor"]
    with tarfile.open(fileobj=io.BytesIO(layer)) as rootfs:
        entries = {m.name: m for m in rootfs.getmembers()}
    assert entries["bin/sh"].issym() and entries["bin/sh"].linkname == "busybox"
    assert entries["bin/bash"].isfile() and entries["executor"].mode & 0o111
    assert entries["tmp"].mode == 0o1777
    assert all(m.mtime == 0 and m.uid == 0 for m in entries.values())


def test_oci_layouts_are_reproducible_and_cached(tmp_path):
    bins = _fake_bins(tmp_path)
    first = images.ensure_layouts(bins, "1")["executor"][1]
    data = first.read_bytes()
    first.unlink()
    assert images.ensure_layouts(bins, "1")["executor"][1].read_bytes() == data
    first.write_bytes(b"kept")  # an existing tarball is reused, not rewritten
    assert images.ensure_layouts(bins, "1")["executor"][1].read_bytes() == b"kept"

