"""`kuberay.network`: the fabric the trainer -> inference weight sync crosses (NCCL between pods), as a profile.

The chart gives the trainer and inference groups the same fabric fields after the kuberay.spec overlay
(charts/dockyard/templates/ray/_fabric.tpl), so the two groups cannot differ and no overlay removes them; the
head and the submitter carry no NCCL traffic and get none. docs/fabric.md says what each profile renders.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from generator.inputs.fabric_rules import MULTUS_ANNOTATION
from generator.inputs.models.types import DNS1123_LABEL_RE, LABEL_NAME, Strict, refused

# The most fabric devices one GPU node exposes to a pod: no GPU instance type attaches more than 32 EFA
# interfaces (p5.48xlarge), nor does a GPU server carry more RDMA NICs. More per pod can never be placed.
MAX_DEVICES_PER_POD = 32
EFA_RESOURCE = "vpc.amazonaws.com/efa"
IPC_LOCK = "IPC_LOCK"

# An extended resource name as the API takes it in requests and limits: a domain prefix (not kubernetes.io's)
# and a name, e.g. rdma/ib or rdma/rdma_shared_device_a.
EXTENDED_RESOURCE_RE = rf"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/{LABEL_NAME}$"
# A NetworkAttachmentDefinition as Multus' annotation names it: [namespace/]name[@interface].
NETWORK_RE = (rf"^({DNS1123_LABEL_RE[1:-1]}/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?(@[A-Za-z0-9_.-]{{1,15}})?$")
# NCCL_SOCKET_IFNAME's syntax: interface names or prefixes, comma-separated, optionally led by ^ (exclude) or =
# (exact); no spaces.
IFNAME_RE = r"^\^?=?[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*$"
# NCCL_IB_HCA's syntax: HCA names with optional :port, comma-separated, optionally led by ^ or =.
HCA_RE = r"^\^?=?[A-Za-z0-9_.-]+(:[0-9]+)?(,[A-Za-z0-9_.-]+(:[0-9]+)?)*$"

NetworkName = Annotated[str, Field(pattern=NETWORK_RE, max_length=253)]
Profile = Literal["tcp", "rdma", "efa", "hostNetwork"]


class RdmaFabric(Strict):
    """InfiniBand or RoCE through an RDMA device plugin."""

    resourceName: str = Field(
        pattern=EXTENDED_RESOURCE_RE, max_length=253 + 1 + 63,
        description="The extended resource the RDMA device plugin advertises, e.g. rdma/ib or "
                    "rdma/rdma_shared_device_a.",
        json_schema_extra={"not": {"anyOf": [{"pattern": r"kubernetes\.io/"}, {"pattern": r"^requests\."},
                                             {"enum": ["nvidia.com/gpu", EFA_RESOURCE]}]}})
    perPod: int = Field(1, ge=1, le=MAX_DEVICES_PER_POD,
                        description=f"Devices each trainer and inference pod requests (at most {MAX_DEVICES_PER_POD}).")
    hca: str | None = Field(None, pattern=HCA_RE, max_length=1024,
                            description="NCCL_IB_HCA: the HCAs NCCL uses, e.g. mlx5 or =mlx5_0:1,mlx5_1:1.")
    networks: list[NetworkName] = Field(
        [], description=f"Multus secondary networks ({MULTUS_ANNOTATION}): NetworkAttachmentDefinition names, "
                        "[namespace/]name[@interface].", json_schema_extra={"uniqueItems": True})

    @model_validator(mode="after")
    def _names(self) -> RdmaFabric:
        if "kubernetes.io/" in self.resourceName or self.resourceName.startswith("requests."):
            raise refused(("resourceName",), f"{self.resourceName} is not an extended resource the API takes (no "
                          "kubernetes.io/ in it, no requests. prefix)", "the device plugin's resource, e.g. rdma/ib")
        if self.resourceName in ("nvidia.com/gpu", EFA_RESOURCE):
            other = "profile efa" if self.resourceName == EFA_RESOURCE else "the recipe's gpusPerNode"
            raise refused(("resourceName",), f"{self.resourceName} is not an RDMA device: {other} asks for it",
                          "the RDMA device plugin's resource, e.g. rdma/ib")
        if len(set(self.networks)) != len(self.networks):
            raise refused(("networks",), "a network is named twice", "each NetworkAttachmentDefinition once")
        return self


class EfaFabric(Strict):
    """AWS Elastic Fabric Adapter through the EFA device plugin (the image needs aws-ofi-nccl)."""

    perPod: int = Field(ge=1, le=MAX_DEVICES_PER_POD,
                        description=f"{EFA_RESOURCE} devices each trainer and inference pod requests, e.g. 32 on "
                                    f"p5.48xlarge (at most {MAX_DEVICES_PER_POD}).")


def _profile_needs(profile: str, key: str) -> dict[str, Any]:
    return {"if": {"properties": {"profile": {"const": profile}}, "required": ["profile"]},
            "then": {"required": [key], "properties": {key: {"type": "object"}}}}


def _only_under(profile: str, key: str) -> dict[str, Any]:
    return {"if": {"required": [key], "properties": {key: {"type": "object"}}},
            "then": {"required": ["profile"], "properties": {"profile": {"const": profile}}}}


class NetworkSettings(Strict):
    """The fabric of the trainer and inference pods: the same fields in both groups."""

    # JSON Schema twins of _profile_fields, so Helm refuses the same values.
    model_config = Strict.model_config | {"json_schema_extra": {"allOf": [
        _profile_needs("rdma", "rdma"), _profile_needs("efa", "efa"),
        _only_under("rdma", "rdma"), _only_under("efa", "efa"),
    ]}}

    profile: Profile = Field(
        "tcp", description="tcp: NCCL over the pod network; rdma: InfiniBand/RoCE devices (+ IPC_LOCK, Multus "
                           "networks); efa: AWS EFA devices; hostNetwork: the node's own network, one Ray pod per "
                           "node (NetworkPolicy does not apply to host-network pods).")
    socketInterface: str | None = Field(
        None, pattern=IFNAME_RE, max_length=1024,
        description="NCCL_SOCKET_IFNAME (NCCL's syntax: prefixes, ^ excludes, = exact), e.g. eth0 or ^lo,docker; "
                    "GLOO_SOCKET_IFNAME gets it too unless it excludes (^): Gloo takes exact names only.")
    rdma: RdmaFabric | None = Field(None, description="Required under profile rdma; nothing else takes it.")
    efa: EfaFabric | None = Field(None, description="Required under profile efa; nothing else takes it.")

    @model_validator(mode="after")
    def _profile_fields(self) -> NetworkSettings:
        for key, sub in (("rdma", self.rdma), ("efa", self.efa)):
            if self.profile == key and sub is None:
                example = "resourceName: rdma/ib" if key == "rdma" else "perPod: 4"
                raise refused((key,), f"profile {key} needs kuberay.network.{key}", f"{key}: {{{example}}}")
            if sub is not None and self.profile != key:
                raise refused((key,), f"kuberay.network.{key} means nothing under profile {self.profile}",
                              f"profile: {key}, or no {key} block")
        return self

    @property
    def adds_ipc_lock(self) -> bool:
        return self.profile == "rdma"


# JSON Schema twin of restricted_fabric_problem (on InfraSpec and ChartValues), so Helm refuses the same values.
RESTRICTED_FABRIC_RULE: dict[str, Any] = {
    "if": {"required": ["infra"], "properties": {"infra": {"required": ["security"], "properties": {"security": {
        "required": ["enabled", "profile"],
        "properties": {"enabled": {"const": True}, "profile": {"const": "restricted"}}}}}}},
    "then": {"properties": {"kuberay": {"properties": {"network": {"properties": {
        "profile": {"not": {"enum": ["rdma", "hostNetwork"]}}}}}}}},
}


def restricted_fabric_problem(security: Any, network: NetworkSettings) -> Exception | None:
    """PodSecurity `restricted` (the GPU pods' infra.security profile) forbids what rdma and hostNetwork need."""
    if security.enabled and security.profile == "restricted" and network.profile in ("rdma", "hostNetwork"):
        needs = f"adding {IPC_LOCK}" if network.profile == "rdma" else "the host's network namespace"
        return refused(("kuberay", "network", "profile"),
                       f"profile {network.profile} needs {needs}, which infra.security.profile restricted (PodSecurity "
                       "restricted) forbids, and so does baseline: only a namespace of pod-security level privileged "
                       "admits it", "infra.security.profile: baseline (and a namespace labelled "
                       "pod-security.kubernetes.io/enforce=privileged), or profile tcp or efa")
    return None

