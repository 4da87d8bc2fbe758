"""Image references: the GPU image (infra.image) and the sandbox image, in every tag/digest/unset combination.

The rule: a sandbox image that sets any of repository, tag or digest is its own reference (an unset
repository is the GPU image's, an unset tag `latest`); only one that sets none of them runs the GPU
image's reference, as a whole. A digest wins over a tag. The chart (from generator-composed values
and from plain values) and generator.inputs.compose.image_reference must agree.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator

import yaml

from generator.inputs.compose import image_reference, sandbox_image
from generator.render.helm import Template
from tests.conftest import Rendered, chart_values

REPO = "ghcr.io/dockyard-rl/ubuntu-swe"  # the chart's default infra.image, tag vllm
GPU_DIGEST = "sha256:" + "a" * 64
OWN_DIGEST = "sha256:" + "b" * 64
EXECUTOR = "ghcr.io/org/executor"

GPU_IMAGES = {
    "unset": {},
    "tag": {"tag": "gpu-7"},
    "digest": {"digest": GPU_DIGEST},
    "tag+digest": {"tag": "gpu-7", "digest": GPU_DIGEST},
}
SANDBOX_IMAGES = {
    "+".join(k for k, v in (("repository", repo), ("tag", tag), ("digest", digest)) if v) or "unset":
        {k: v for k, v in (("repository", repo), ("tag", tag), ("digest", digest)) if v}
    for repo, tag, digest in itertools.product((None, EXECUTOR), (None, "exec-2"), (None, OWN_DIGEST))
}


def expected(gpu: dict[str, str], sandbox: dict[str, str]) -> tuple[str, str]:
    """(GPU pods' image, sandbox pods' image), written out case by case."""
    gpu_ref = f"{REPO}@{GPU_DIGEST}" if "digest" in gpu else f"{REPO}:{gpu.get('tag', 'vllm')}"
    if not sandbox:
        return gpu_ref, gpu_ref
    repo = sandbox.get("repository", REPO)
    if "digest" in sandbox:
        return gpu_ref, f"{repo}@{OWN_DIGEST}"
    return gpu_ref, f"{repo}:{sandbox.get('tag', 'latest')}"


def images(out: Rendered) -> dict[str, str]:
    return {role: spec["containers"][0]["image"] for role, spec in out.pod_specs().items()}


def test_issue_9_example_keeps_the_sandbox_tag(render):
    """GPU image pinned by digest, sandbox with its own repository and tag: that tag, not the GPU digest."""
    got = images(render(infra={"image": {"digest": GPU_DIGEST}},
                        sandbox={"image": {"repository": EXECUTOR, "tag": "exec-2"}}))
    assert (got["sandbox"], got["test"], got["trainer"]) == (f"{EXECUTOR}:exec-2", f"{EXECUTOR}:exec-2",
                                                             f"{REPO}@{GPU_DIGEST}")


def _rendered(all_values: list[dict], window: int = 4) -> Iterator[Rendered]:
    """Each values' rendering, in order, with at most `window` helm processes running."""
    todo = iter(all_values)
    running = deque(Template(v, "grpo-swe", "dockyard", tests=True) for v in itertools.islice(todo, window))
    while running:
        done = running.popleft()
        for v in itertools.islice(todo, 1):
            running.append(Template(v, "grpo-swe", "dockyard", tests=True))
        yield Rendered(done.result())


def test_every_combination_agrees_across_chart_plain_values_and_composer():
    cases = list(itertools.product(GPU_IMAGES.items(), SANDBOX_IMAGES.items()))
    assert len(cases) == 32
    all_values = []
    for (_, gpu), (_, sandbox) in cases:
        all_values.append(chart_values(infra={"image": gpu}, sandbox={"image": sandbox}))  # as the generator composes
        all_values.append({"infra": {"image": gpu},
                           "sandbox": {"image": sandbox}})  # plain: chart defaults for the rest
    renders = _rendered(all_values)
    for n, ((gname, gpu), (sname, sandbox)) in enumerate(cases):
        gpu_ref, sandbox_ref = expected(gpu, sandbox)
        case = f"infra.image {gname}, sandbox.image {sname}"
        composed = all_values[2 * n]
        assert sandbox_image(composed) == sandbox_ref, case
        assert image_reference(sandbox, composed["infra"]["image"]) == sandbox_ref, case
        for how in ("composed values", "plain values"):
            out = next(renders)
            got = images(out)
            want = {role: sandbox_ref if role in ("sandbox", "test") else gpu_ref for role in got}
            assert set(got) == {"sandbox", "test", "head", "trainer", "inference", "submitter"}, (case, how)
            assert got == want, (case, how)
            # checkov's "pinned by digest" skip is rendered exactly when the sandbox image is not pinned.
            notes = yaml.safe_dump(out.one("Deployment")["metadata"].get("annotations", {}))
            assert ("CKV_K8S_43" in notes) is ("@" not in sandbox_ref), (case, how)


def test_pull_policy_alone_does_not_make_an_own_reference(render):
    out = render(infra={"image": {"digest": GPU_DIGEST}}, sandbox={"image": {"pullPolicy": "Always"}})
    sandbox = out.pod_specs()["sandbox"]["containers"][0]
    assert (sandbox["image"], sandbox["imagePullPolicy"]) == (f"{REPO}@{GPU_DIGEST}", "Always")
