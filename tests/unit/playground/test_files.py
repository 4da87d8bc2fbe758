"""files.remove_tree: a state folder holding what overlayfs leaves behind (a mode-000 `work/` in its work dir)
is removed by its non-root owner too (Kueue's mount namespace under `unshare --user`), where shutil.rmtree fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NOBODY = 65534
SCRIPT = """
import os, shutil, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from generator.playground.files import remove_tree
root = Path({root!r})
for name in ("plain", "ours"):
    w = root / name / "kueue" / "work" / "work"
    w.mkdir(parents=True)
    (w.parent / "file").write_text("x")
    w.chmod(0)
try:
    shutil.rmtree(root / "plain")
    print("plain: removed")
except PermissionError:
    print("plain: PermissionError")
remove_tree(root / "ours")
print("ours: gone" if not (root / "ours").exists() else "ours: still there")
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_a_non_root_owner_removes_an_overlay_work_dir():
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="dockyard-remove-tree-"))  # pytest's tmp_path is root's alone (0700)
    base.chmod(0o755)
    root = base / "owned"
    root.mkdir()
    os.chown(root, NOBODY, NOBODY)
    try:
            out = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable,
                              "-S", "-c", SCRIPT.format(repo=str(REPO), root=str(root))],
                             capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(base)  # root may
    assert out.returncode == 0, out.stderr
    # negative control: plain rmtree fails on it; remove_tree does not
    assert out.stdout.split() == ["plain:", "PermissionError", "ours:", "gone"], out.stdout + out.stderr
