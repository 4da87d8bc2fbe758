"""`launch`: how the GPU fleet is launched, and Kueue's admission rules on a queued one."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from generator.inputs.models.types import DNS1035_LABEL_RE, INT32_MAX, KueueName, LabelKey, Strict, refused
from generator.inputs.version_rules import PRE_RUNNING_DEADLINE, PRE_RUNNING_SINCE

# Kueue's admission rules (its RayJob and RayCluster webhooks, v0.17.0), in the words the chart uses too
# (charts/dockyard/templates/_validate.tpl, dockyard.validate.kueue).
KUEUE_NO_ATTACH = ("an existing cluster cannot be queued: Kueue admits a RayJob with its own cluster or a "
                   "RayCluster, and refuses a queued RayJob on a clusterSelector")
KUEUE_SHUTDOWN = ("Kueue refuses a queued RayJob that keeps its cluster after the job ends (the cluster would "
                  "go on holding the queue's quota)")
KUEUE_AUTOSCALING = ("Kueue refuses in-tree autoscaling on a queued RayJob or RayCluster: it admits the gang "
                     "at its fixed size")
KUEUE_PRIORITY_ALONE = ("a WorkloadPriorityClass without launch.queue does nothing: Kueue reads it only on a "
                        "queued RayJob or RayCluster")
SUSPEND_OWNED = ("the chart never renders suspend: Kueue suspends a queued RayJob or RayCluster and admits it "
                 "by clearing suspend, and a helm upgrade must not flip it")

# The stall guard's floor: a shorter timeout is a typo (an RL step, a rollout or a checkpoint write alone takes
# longer), and one this short already ends an attempt whose job merely writes a checkpoint between two reports.
STALL_FLOOR = 30
STALL_NO_WATCH = ("a stall guard with launch.watch.enabled false has nothing to watch: the run watcher is what "
                  "reads the job's progress reports")
STALL_ATTACH = ("a stall guard in attach mode has no job of this release to end: the existing cluster's jobs are "
                "submitted and watched elsewhere")

# Topology-aware placement: Kueue's Topology Aware Scheduling reads the annotations the chart renders, so it means
# something on a queued job only.
TOPOLOGY_NO_QUEUE = ("topology placement is Kueue's (Topology Aware Scheduling): without launch.queue no Kueue "
                     "admits the gang, and the scheduler places it where GPUs are free")
TOPOLOGY_ATTACH = ("an existing cluster is not placed by this release: its pods were scheduled when it was made")
TOPOLOGY_SET: dict[str, Any] = {"required": ["topology"], "properties": {"topology": {"type": "object"}}}

# JSON Schema conditions: a queue (or priority class) is set when it is a string (values.yaml holds null).
QUEUED: dict[str, Any] = {"required": ["queue"], "properties": {"queue": {"type": "string"}}}
PRIORITY_SET: dict[str, Any] = {"required": ["priorityClass"], "properties": {"priorityClass": {"type": "string"}}}


class RunWatch(Strict):
    """The run watcher (charts/dockyard/files/run_watch.py): the Ray job's driver, with the entrypoint as its child.
    It reads the job's progress reports, keeps the driver log on the logs volume and, with a stall timeout, ends
    an attempt that stops reporting (docs/run-watch.md)."""

    model_config = ConfigDict(json_schema_extra={"allOf": [
        {"if": {"required": ["stallTimeoutSeconds"], "properties": {"stallTimeoutSeconds": {"type": "integer"}}},
         "then": {"properties": {"enabled": {"const": True}}}},
    ]})

    enabled: bool = Field(
        True,
        description="Run the job's entrypoint under the run watcher (rayjob mode, and `job submit` in bringup): "
                    "progress for `status`, the driver log kept on `infra.storage.logs`; `false`: the entrypoint "
                    "as it is.",
    )
    stallTimeoutSeconds: int | None = Field(
        None, ge=STALL_FLOOR, le=INT32_MAX,
        description=f"End the attempt when the job has not reported progress for this many seconds (at least "
                    f"{STALL_FLOOR}): its processes get SIGTERM, then SIGKILL, and the job fails with `stalled: …`, "
                    f"so `backoffLimit` retries it from the newest checkpoint. Unset: no stall guard.",
    )
    firstReportSeconds: int = Field(
        1800, ge=STALL_FLOOR, le=INT32_MAX,
        description="With a stall timeout: seconds the first report may take after the job starts (loading the "
                    "model and starting the engines take long).",
    )
    keepLogMiB: int = Field(
        64, ge=1, le=65536,
        description="Cap of each job's driver log kept on `infra.storage.logs`, in MiB (the newest part is kept).",
    )
    keepRayLogMiB: int = Field(
        64, ge=0, le=65536,
        description="Cap of the Ray logs (stdout and stderr of each Ray process) each Ray pod that mounts "
                    "`infra.storage.logs` keeps there, in MiB, copied every 5 s by a sidecar; 0: not kept.",
    )

    @model_validator(mode="after")
    def _stall_needs_watch(self) -> RunWatch:
        if self.stallTimeoutSeconds is not None and not self.enabled:
            raise refused(("stallTimeoutSeconds",), STALL_NO_WATCH,
                          "launch.watch.enabled: true (the default), or no stallTimeoutSeconds")
        return self


class TopologyPlacement(Strict):
    """Where Kueue places the GPU fleets in the network: within one domain of a level of the cluster's Kueue
    `Topology` (docs/kueue.md). The head and the submitter are not placed: they carry no weight sync."""

    level: LabelKey = Field(
        description="The node label of the level, one of the Kueue Topology's levels (e.g. "
                    "`cloud.provider.com/topology-rack`, or `kubernetes.io/hostname` for one node).",
    )
    mode: Literal["required", "preferred"] = Field(
        "required",
        description="`required`: admitted only into one domain of the level, else the job waits; `preferred`: one "
                    "domain when one fits, else the fewest domains Kueue finds.",
    )
    groups: Literal["each", "together"] = Field(
        "each",
        description="`each`: the trainer within one domain and the inference within one domain (maybe another); "
                    "`together`: both in the same domain (a Kueue PodSet group: one of the two fleets must be "
                    "a single node).",
    )


class LaunchSettings(Strict):
    """How the GPU fleet is launched."""

    # JSON Schema twins of _attach_needs_cluster and _kueue_rules, so Helm refuses the same values.
    model_config = ConfigDict(
        json_schema_extra={"allOf": [
            {"if": {"properties": {"mode": {"const": "attach"}}, "required": ["mode"]},
             "then": {"required": ["clusterName"], "properties": {"clusterName": {"type": "string"}}}},
            {"if": PRIORITY_SET, "then": QUEUED},
            {"if": {"properties": {"mode": {"const": "attach"}}, "required": ["mode"]},
             "then": {"properties": {"watch": {"properties": {"stallTimeoutSeconds": {"type": "null"}}}}}},
            {"if": QUEUED, "then": {"properties": {"mode": {"not": {"const": "attach"}}}}},
            {"if": TOPOLOGY_SET, "then": QUEUED},
            {"if": {"required": ["queue"], "properties": {"queue": {"type": "string"}, "mode": {"const": "rayjob"}}},
             "then": {"properties": {"shutdownAfterJobFinishes": {"const": True}}}},
        ]}
    )

    mode: Literal["rayjob", "bringup", "attach"] = Field(
        "rayjob",
        description="`rayjob`: a RayJob with its own cluster; `bringup`: a bare RayCluster; `attach`: an existing "
                    "cluster, only the sandbox pool is rendered.",
    )
    clusterName: str | None = Field(None, pattern=DNS1035_LABEL_RE, max_length=53,
                                    description="attach mode: name of the existing RayCluster.")
    submissionMode: Literal["K8sJobMode", "HTTPMode"] = Field("K8sJobMode", description="How KubeRay submits the job.")
    shutdownAfterJobFinishes: bool = Field(True, description="Delete the RayJob's cluster when the job ends.")
    # int32 in the RayJob CRD.
    ttlSecondsAfterFinished: int = Field(3600, ge=0, le=INT32_MAX,
                                         description="Seconds to keep the cluster after the job ends.")
    activeDeadlineSeconds: int | None = Field(None, ge=1, le=INT32_MAX,
                                              description="Fail the RayJob after this many seconds.")
    backoffLimit: int = Field(0, ge=0, le=10, description="Retries of a failed RayJob.")
    # int32, at least 1, in the RayJob CRD (KubeRay v1.6 and later; v1.4 and v1.5 lack the field). Unset (null): the
    # chart renders PRE_RUNNING_DEADLINE where the target KubeRay (`kuberay.version` of the chart values) has the
    # field, nothing before; 0 renders none.
    preRunningDeadlineSeconds: int | None = Field(
        None, ge=0, le=INT32_MAX,
        description="Fail the RayJob when it has not reached Running this many seconds after its attempt started "
                    "(KubeRay starts the clock when it initializes an attempt: time queued in Kueue does not count, "
                    "each retry gets its own), so a start that cannot succeed (an image that cannot be pulled, pods "
                    f"that never schedule) ends with a reason and frees its GPUs. Unset: {PRE_RUNNING_DEADLINE} where "
                    f"the target KubeRay has the field (v{PRE_RUNNING_SINCE} and later), none before; 0: no deadline.",
    )
    configMountPath: str = Field("/etc/dockyard", pattern=r"^/",
                                 description="Where the recipe ConfigMap is mounted on the head.")
    queue: KueueName | None = Field(
        None,
        description="Kueue LocalQueue (in the namespace) to submit to: label `kueue.x-k8s.io/queue-name` on the "
                    "RayJob (rayjob) or RayCluster (bringup); Kueue then admits the whole gang or none of it.",
    )
    priorityClass: KueueName | None = Field(
        None,
        description="Kueue WorkloadPriorityClass of the queued job: label `kueue.x-k8s.io/priority-class`; needs "
                    "`queue`.",
    )

    topology: TopologyPlacement | None = Field(
        None,
        description="Place the trainer and inference fleets by the network's topology (Kueue Topology Aware "
                    "Scheduling; needs `queue`). Unset: wherever the scheduler finds GPUs.",
    )
    watch: RunWatch = Field(RunWatch(), description="The run watcher: progress, kept logs, the stall guard.")

    @field_validator("clusterName")
    @classmethod
    def _attach_needs_cluster(cls, name: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("mode") == "attach" and not name:
            raise ValueError("launch.mode attach needs launch.clusterName: the existing RayCluster to attach to")
        return name

    @model_validator(mode="after")
    def _kueue_rules(self) -> LaunchSettings:
        if self.mode == "attach" and self.watch.stallTimeoutSeconds is not None:
            raise refused(("watch", "stallTimeoutSeconds"), STALL_ATTACH,
                          "no launch.watch.stallTimeoutSeconds in attach mode, or launch.mode rayjob or bringup")
        if self.topology is not None and self.mode == "attach":
            raise refused(("topology",), TOPOLOGY_ATTACH,
                          "no launch.topology in attach mode, or launch.mode rayjob or bringup")
        if self.topology is not None and self.queue is None:
            raise refused(("topology",), TOPOLOGY_NO_QUEUE,
                          "launch.queue: the LocalQueue of a ClusterQueue whose flavor names a Topology, "
                          "or no launch.topology")
        if self.priorityClass is not None and self.mode == "attach":
            raise refused(("priorityClass",), KUEUE_NO_ATTACH,
                          "no launch.priorityClass in attach mode, or launch.mode rayjob or bringup")
        if self.priorityClass is not None and self.queue is None:
            raise refused(("priorityClass",), KUEUE_PRIORITY_ALONE,
                          "launch.queue: the LocalQueue to submit to, or no launch.priorityClass")
        if self.queue is None:
            return self
        if self.mode == "attach":
            raise refused(("queue",), KUEUE_NO_ATTACH,
                          "no launch.queue in attach mode, or launch.mode rayjob or bringup")
        if self.mode == "rayjob" and not self.shutdownAfterJobFinishes:
            raise refused(("shutdownAfterJobFinishes",), KUEUE_SHUTDOWN,
                          "launch.shutdownAfterJobFinishes: true (the default), or no launch.queue")
        return self
