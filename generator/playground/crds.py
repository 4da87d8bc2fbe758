"""KubeRay's CustomResourceDefinitions: applied server-side at `up`, then waited for."""

from __future__ import annotations

import re
from pathlib import Path

from generator.playground.errors import UpError
from generator.playground.kubeapi import Api, ApiError


def install(api: Api, crd_dir: Path) -> list[str]:
    """Server-side apply each CRD file's YAML as it is (parsing 4 MB of YAML in Python costs seconds)."""
    from concurrent.futures import ThreadPoolExecutor

    import yaml

    docs: list[tuple[str, object]] = []
    for path in sorted(crd_dir.glob("*.yaml")):
        text = path.read_text()
        body = re.sub(r"\A(\s*---\s*\n)", "", text)
        head = body[:2000]
        name = re.search(r"^metadata:\n(?:  .*\n)*?  name: (\S+)$", head, re.M)
        if "\n---" in body or "kind: CustomResourceDefinition" not in head or not name:
            # not the one-CRD-per-file layout controller-gen writes: parse it properly
            for doc in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    docs.append((doc["metadata"]["name"], doc))
            continue
        docs.append((name.group(1), body))
    if not docs:
        raise UpError(f"no CustomResourceDefinition found under {crd_dir}")

    def apply(item: tuple[str, object]) -> str:
        name, doc = item
        api.apply(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", doc)
        return name

    with ThreadPoolExecutor(max_workers=len(docs)) as pool:  # one connection each
        return list(pool.map(apply, docs))


def established(api: Api, names: list[str]) -> tuple[bool, str]:
    for name in names:
        try:
            crd = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        except (ApiError, OSError) as exc:
            return False, f"{name}: {exc}"
        conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
        if conds.get("Established") != "True":
            return False, f"{name} not Established yet"
    return True, "all Established"
