"""Building blocks shared by the infra spec and the chart values: images, a Ray pod's resources, and the
JSON Schema helper the models' rules use."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from generator.inputs.models.types import DIGEST_RE, IMAGE_REPO_RE, IMAGE_TAG_RE, Quantity, Strict

PullPolicy = Literal["Always", "IfNotPresent", "Never"]


class Image(Strict):
    """A container image reference."""

    repository: str = Field(pattern=IMAGE_REPO_RE, description="Image repository, e.g. ghcr.io/org/ubuntu-swe.")
    tag: str = Field("latest", pattern=IMAGE_TAG_RE, description="Image tag; ignored when `digest` is set.")
    digest: str | None = Field(None, pattern=DIGEST_RE,
                               description="Pin the image by digest (sha256:…); wins over `tag`.")
    pullPolicy: PullPolicy = Field("IfNotPresent", description="Kubernetes imagePullPolicy.")


class OptionalImage(Strict):
    """The sandbox's own image: setting any of repository, tag or digest makes it a reference of its own
    (repository defaults to `infra.image.repository`, tag to `latest`); setting none runs `infra.image` whole."""

    repository: str | None = Field(None, pattern=IMAGE_REPO_RE,
                                   description="Image repository; defaults to `infra.image.repository`.")
    tag: str | None = Field(
        None, pattern=IMAGE_TAG_RE,
        description="Image tag; `latest` when repository or digest is set without it, else `infra.image`'s reference "
                    "whole."
    )
    digest: str | None = Field(
        None, pattern=DIGEST_RE,
        description="Pin by digest (sha256:…); wins over the tag. Not inherited from `infra.image` once repository or "
                    "tag is set."
    )
    pullPolicy: PullPolicy | None = Field(None, description="imagePullPolicy; defaults to `infra.image.pullPolicy`.")


def present(field: str, **schema: Any) -> dict[str, Any]:
    """JSON Schema: `field` is given and holds a value of this schema (None counts as not given)."""
    return {"required": [field], "properties": {field: schema}}


class PodResources(Strict):
    """cpu / memory requests of a Ray pod (GPUs come from the recipe)."""

    cpu: Quantity = Field(description="CPU request (and limit).")
    memory: Quantity = Field(description="Memory request (and limit).")


def backend_image_problem(backend: str, image: Image) -> str | None:
    """Why the image contradicts the backend, or None: an image naming the other backend only."""
    other = {"vllm": "sglang", "sglang": "vllm"}[backend]
    ref = f"{image.repository}:{image.tag}".lower()
    if other in ref and backend not in ref:
        return (f"backend is {backend!r} but the image {ref!r} is the {other} build; "
                f"set backend: {other} or use the {backend} image")
    return None
