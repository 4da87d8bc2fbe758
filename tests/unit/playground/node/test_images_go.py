"""The playground's node images are Go (tools/node-images): their own tests run with the suite, against the
real executor process (the SIGTERM drain, the kernel probe, the load generator's counts)."""

import os
import shutil
import subprocess
from pathlib import Path

NODE_IMAGES = Path(__file__).resolve().parents[4] / "tools" / "node-images"


def test_go_test_passes_for_the_node_images():
    go = shutil.which("go")
    assert go, "go is not on PATH: hack/tools.sh builds the node images with it"
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    done = subprocess.run([go, "test", "-count=1", "./..."], cwd=NODE_IMAGES, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok  \tdockyard.local/node-images/executor" in done.stdout, done.stdout
