"""playground/node/ray_image.py: the real node's Ray image without a node: its OCI layout (layers sorted, times
clamped, scratch folders left out), the Debian source it is built from, the locked Python set it installs."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile

import pytest

from generator.playground.node import ray_image


def _rootfs(tmp_path):
    root = tmp_path / "rootfs"
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "python3").write_bytes(b"#!fake\n")
    (root / "usr" / "bin" / "python3").chmod(0o755)
    (root / "usr" / "bin" / "python").symlink_to("python3")
    (root / "etc").mkdir()
    (root / "etc" / "hosts").write_text("x\n")
    os.link(root / "etc" / "hosts", root / "etc" / "hosts2")
    for d in ("proc", "tmp", "dev"):
        (root / d).mkdir()
    (root / "tmp" / "leftover").write_text("build scratch\n")
    os.utime(root / "etc" / "hosts", (2_000_000_000, 2_000_000_000))  # after the clamp
    return root


def test_layer_is_sorted_clamped_and_skips_scratch_folders(tmp_path):
    root = _rootfs(tmp_path)
    buf = io.BytesIO()
    ray_image.write_layer(root, buf)
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert "tmp/leftover" not in names and "tmp" in names and "proc" in names  # scratch emptied, folder kept
    assert {m.name: m.mode for m in members}["tmp"] == 0o1777
    assert max(m.mtime for m in members) <= ray_image.CLAMP_MTIME
    by = {m.name: m for m in members}
    assert by["usr/bin/python"].issym() and by["usr/bin/python"].linkname == "python3"
    assert by["etc/hosts2"].islnk() or by["etc/hosts"].islnk()  # hard links stay links
    again = io.BytesIO()
    ray_image.write_layer(root, again)
    assert again.getvalue() == buf.getvalue()  # reproducible


def test_layout_is_an_oci_image_named_for_containerd(tmp_path):
    root = _rootfs(tmp_path)
    dest = tmp_path / "out" / ray_image.LAYOUT
    digest, size = ray_image.write_layout(root, dest, "9.9.9")
    with tarfile.open(dest) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    index = json.loads(files["index.json"])
    entry = index["manifests"][0]
    assert entry["digest"] == digest
    assert entry["annotations"]["io.containerd.image.name"] == "dockyard.local/playground-ray:9.9.9"
    manifest = json.loads(files[f"blobs/sha256/{digest[7:]}"])
    for blob in [manifest["config"], *manifest["layers"]]:  # every blob is where its digest says
        data = files[f"blobs/sha256/{blob['digest'][7:]}"]
        assert hashlib.sha256(data).hexdigest() == blob["digest"][7:] and len(data) == blob["size"]
    assert manifest["layers"][0]["size"] == size
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    assert config["config"]["Labels"]["dev.dockyard.playground.stand-in-for"] == "ubuntu-swe"
    assert "RAY_USAGE_STATS_ENABLED=0" in config["config"]["Env"]  # nothing reports to a public host
    assert not dest.with_suffix(".layer").exists()


def test_layout_of_an_entry_needs_the_complete_marker(tmp_path):
    assert ray_image.layout(tmp_path) is None
    (tmp_path / "image.json").write_text(json.dumps({"ref": "dockyard.local/playground-ray:1"}))
    assert ray_image.layout(tmp_path) is None
    (tmp_path / ".complete").write_text("x\n")
    assert ray_image.layout(tmp_path) == ("dockyard.local/playground-ray:1", tmp_path / ray_image.LAYOUT)


def test_the_debian_source_is_the_machines_own():
    suite, path = ray_image.debian_sources()
    assert suite and path.is_file() and path.parts[:3] == ("/", "etc", "apt")


def test_the_ray_image_installs_exactly_a_locked_set(tmp_path):
    """The Ray image pins its whole Python set (version and sha256 of every wheel), not only ray."""
    import re

    from generator.pinned_tools import versions
    from generator.playground.node import ray_image

    version = versions()["RAY_VERSION"]
    lines = [x for x in ray_image.lock_file(version).read_text().splitlines() if x and not x.startswith("#")]
    assert all(re.fullmatch(r"[a-z0-9_.]+==[^ ]+ --hash=sha256:[0-9a-f]{64}", x) for x in lines), lines
    assert f"ray=={version}" in [x.split()[0] for x in lines]
    assert len(lines) > 20  # ray[default]'s dependencies, not ray alone
    with pytest.raises(SystemExit, match="no lock file for ray 0.0.1"):
        ray_image.download_wheels(tmp_path, "0.0.1")
