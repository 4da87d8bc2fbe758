"""`infra.storage`: volumes that outlive the GPU pods (checkpoints, a model cache, logs), each an existing
PersistentVolumeClaim (`claimName`) or one the chart creates (`size`, `storageClassName`, `accessModes`).
The chart mounts each into the Ray container of the groups in `mountOn` at a fixed path and exports that
path as env, after the kuberay.spec overlay (charts/dockyard/templates/ray/_storage.tpl)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from generator.inputs.models.common import OptionalImage, present
from generator.inputs.models.types import DNS1123_SUBDOMAIN_RE, Dns1123Subdomain, Quantity, Strict, refused
from generator.inputs.storage_rules import DEFAULT_ACCESS_MODES

AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
Group = Literal["head", "trainer", "inference"]
ALL_GROUPS: list[Group] = ["head", "trainer", "inference"]

# JSON Schema twin of StorageVolume._one_source: a claim or a size, not both (the two branches exclude each
# other); the claim's own keys (class, access modes) only with a size.
ONE_SOURCE: dict[str, Any] = {
    "anyOf": [
        {**present("claimName", type="string"),
         "not": {"anyOf": [present("size"), present("storageClassName"), present("accessModes")]}},
        {**present("size"), "not": present("claimName", type="string")},
    ]
}


class StorageVolume(Strict):
    """One volume of the GPU pods: an existing claim, or a claim the chart creates and keeps."""

    model_config = Strict.model_config | {"json_schema_extra": ONE_SOURCE}

    claimName: Dns1123Subdomain | None = Field(
        None, description="An existing PersistentVolumeClaim in the namespace (not with `size`).")
    size: Quantity | None = Field(
        None, description="Create a claim `<release>-<volume>` of this size (e.g. 500Gi); kept on uninstall.")
    # "" is Kubernetes' own way to ask for no class (a pre-made PersistentVolume, no dynamic provisioning): kept
    # and rendered as "", unlike unset (the default class).
    storageClassName: str | None = Field(
        None, pattern=f"^$|{DNS1123_SUBDOMAIN_RE}", max_length=253,
        description="StorageClass of the created claim; the cluster's default class when unset; `\"\"`: no class "
                    "(the claim binds a pre-made PersistentVolume of no class, nothing is provisioned).")
    accessModes: list[AccessMode] | None = Field(
        None, min_length=1,
        description="Access modes of the created claim ([ReadWriteMany] when unset); more than one pod writing "
                    "needs ReadWriteMany.")
    mountOn: list[Group] = Field(
        ALL_GROUPS, min_length=1, json_schema_extra={"uniqueItems": True},
        description="The Ray groups whose Ray container mounts it (head, trainer, inference).")

    @model_validator(mode="after")
    def _one_source(self) -> StorageVolume:
        if self.claimName is not None and self.size is not None:
            raise refused(("size",), "claimName and size are both set: a volume is an existing claim or one the "
                          "chart creates", "claimName (an existing claim) or size (a claim the chart creates)")
        if self.claimName is None and self.size is None:
            raise refused((), "neither claimName nor size is set", "claimName: <an existing claim> or size: e.g. 100Gi")
        for key in ("storageClassName", "accessModes"):
            if self.claimName is not None and getattr(self, key) is not None:
                raise refused((key,), f"{key} belongs to the claim {self.claimName!r}, which exists already",
                              "drop it, or replace claimName with size to have the chart create the claim")
        if len(set(self.mountOn)) != len(self.mountOn):
            raise refused(("mountOn",), "a group is named twice", "each of head, trainer, inference at most once")
        return self

    def modes(self) -> list[str]:
        """The access modes a created claim gets."""
        return list(self.accessModes or DEFAULT_ACCESS_MODES)


class FillSettings(Strict):
    """A command run once per start of the head, before the head's Ray starts (an init container of the head:
    KubeRay's workers wait for the head), with the model cache mounted and HF_HOME set: fills the cache."""

    command: list[str] = Field(min_length=1, description="The command (exec form), e.g. "
                               "[huggingface-cli, download, Qwen/Qwen3-8B]; it should skip what is already there.")
    image: OptionalImage = Field(OptionalImage(), description="Its image; `infra.image` when unset.")


# JSON Schema twin of ModelCacheVolume._fill_on_head, so Helm refuses the same values.
FILL_ON_HEAD: dict = {"if": {"required": ["fill"], "properties": {"fill": {"type": "object"}}},
                      "then": {"properties": {"mountOn": {"contains": {"const": "head"}}}}}


class ModelCacheVolume(StorageVolume):
    """The model cache: HF_HOME points at it; optionally filled before the gang starts, and read offline."""

    model_config = Strict.model_config | {"json_schema_extra": {**ONE_SOURCE, "allOf": [FILL_ON_HEAD]}}

    fill: FillSettings | None = Field(None, description="Fill the cache in an init container of the head.")
    offline: bool = Field(False, description="Set HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1 in the GPU pods: a "
                          "model missing from the cache fails at once instead of being downloaded by every worker.")

    @model_validator(mode="after")
    def _fill_on_head(self) -> ModelCacheVolume:
        if self.fill is not None and "head" not in self.mountOn:
            raise refused(("mountOn",), "fill runs in the head, which does not mount the cache",
                          "mountOn with head in it")
        return self


class StorageSettings(Strict):
    """Volumes the GPU pods mount (see docs/storage.md)."""

    checkpoints: StorageVolume | None = Field(
        None, description="Checkpoints: mounted at /dockyard/checkpoints, named by DOCKYARD_CHECKPOINT_DIR.")
    modelCache: ModelCacheVolume | None = Field(
        None, description="The model cache: mounted at /dockyard/model-cache, named by HF_HOME and "
                          "DOCKYARD_MODEL_CACHE_DIR.")
    logs: StorageVolume | None = Field(None, description="Logs: mounted at /dockyard/logs, named by DOCKYARD_LOG_DIR.")
