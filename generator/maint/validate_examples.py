"""`make validate`: kubeconform over every example's rendered output (the seed's validate-manifests)."""

from __future__ import annotations

import subprocess
import sys

from generator.pinned_tools import CHART_DIR, REPO, binary, versions
from generator.render import kubeconform
from generator.render.check import run_check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

EXAMPLES = REPO / "values-examples"


def plain_helm_values_files() -> list[Path]:
    """Hand-written values files meant for plain `helm install -f`."""
    return sorted(EXAMPLES.glob("*.values.yaml"))


def check_plain_values(path: Path) -> list[kubeconform.Result]:
    proc = subprocess.run(
        [binary("helm"), "template", "dockyard", str(CHART_DIR), "-f", str(path),
         "--kube-version", versions()["KUBERNETES_VERSION"]],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode:
        raise SystemExit(f"helm template -f {path} failed:\n{proc.stderr}")
    return kubeconform.validate(proc.stdout)


def main() -> int:
    recipe = EXAMPLES / "grpo_swe.yaml"
    failed = 0
    for infra in sorted(EXAMPLES.glob("*.infra.yaml")):
        print(f"== {infra.relative_to(REPO)}")
        failed += run_check(str(recipe), str(infra), []) != 0
    for path in plain_helm_values_files():
        results = check_plain_values(path)
        bad = [r for r in results if r.status != "valid"]
        print(f"== {path.relative_to(REPO)} (plain helm): {len(results) - len(bad)} valid, {len(bad)} not")
        for r in bad:
            print(f"  ✗ {r.kind} {r.name}: {r.message}")
        failed += bool(bad)
    print(f"\n{'all examples valid' if not failed else f'{failed} example(s) failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
