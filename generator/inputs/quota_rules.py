"""The rendered ResourceQuota (`infra.resourceQuota`) against what the same release asks for: every pod it creates
(head, trainer and inference workers, a K8sJobMode RayJob's submitter, the sandbox executors or warm pool, the
`helm test` pod) and every claim it creates, at its peak: the executor pool at the HPA's maxReplicas when it scales,
plus the pods a rollout adds beside the old ones (rollingUpdate.maxSurge). A quota that cannot hold them is a
contradiction in the inputs: the install would fail at the first pod or claim past it, the HPA would be capped
unseen, or every upgrade would stall. (An old executor that is draining still counts against a quota until it is
gone: at exactly this total, each step of a rollout waits for one to drain.) Plain data in and out (chart-values
form, without pydantic): the models' composition (generator/inputs/compose.py), its fast path and the ChartValues
model all call it.

The pods are computed as the chart builds them (ray/_spec.tpl, ray/_group.tpl, ray/_storage.tpl, ray/_fabric.tpl,
ray/rayjob.yaml, sandbox/_pod.tpl, tests/): the Ray container's cpu and memory as both requests and limits, the
workers' GPUs and fabric device, the overlay's containers merged into it or beside it, the Ray log keeper's native
sidecar and the model-cache fill init container; a pod's own request is the larger of its containers plus its
sidecars and each init container plus the sidecars started before it, as the API counts it. A RuntimeClass's pod
overhead is the cluster's (doctor counts it). tests/unit/inputs/test_quota_rules.py sums the rendered pods against this.
"""

from __future__ import annotations

import math

from generator.quantity import qty

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Path = tuple[str | int, ...]

COMPUTE = ("cpu", "memory", "ephemeral-storage")
CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
VOLUMES = ("checkpoints", "modelCache", "logs")
# The chart's fixed containers (ray/rayjob.yaml's submitter, tests/sandbox-connection.yaml, the log keeper).
SUBMITTER = ({"cpu": "500m", "memory": "512Mi"}, {"cpu": "1", "memory": "1Gi"})
TEST_POD = ({"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "64Mi"},) * 2
KEEPER = ({"cpu": "10m", "memory": "32Mi"}, {"cpu": "200m", "memory": "64Mi"})
BEYOND = 10**400  # a quantity past a float's range, in thousandths: more than any float holds


def milli(value: Any) -> int:
    """A quantity in thousandths of its unit, exactly summed (cores, bytes, devices). One past a float's range (the
    API takes 1e400) is beyond any other: larger than every finite amount."""
    thousandths = qty(value) * 1000
    return round(thousandths) if math.isfinite(thousandths) else BEYOND


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Sprig's mergeOverwrite on plain data: maps merged deeply, anything else replaced (nulls dropped)."""
    out = dict(base)
    for key, value in over.items():
        if value is None:
            continue
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _sides(resources: dict[str, Any] | None) -> tuple[dict[str, int], dict[str, int]]:
    res = resources or {}
    return ({k: milli(v) for k, v in (res.get("requests") or {}).items() if v is not None},
            {k: milli(v) for k, v in (res.get("limits") or {}).items() if v is not None})


def _add(into: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    out = dict(into)
    for k, v in more.items():
        out[k] = out.get(k, 0) + v
    return out


def _pod(containers: list[dict[str, Any]], inits: list[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    """A pod's requests and limits as the API counts them: max(containers + sidecars, each init container + the
    sidecars (restartPolicy Always) started before it)."""
    out = []
    for side in (0, 1):
        app: dict[str, int] = {}
        for c in containers:
            app = _add(app, _sides(c.get("resources"))[side])
        sidecars: dict[str, int] = {}
        peaks: list[dict[str, int]] = []
        for c in inits:
            own = _sides(c.get("resources"))[side]
            if c.get("restartPolicy") == "Always":
                sidecars = _add(sidecars, own)
            else:
                peaks.append(_add(sidecars, own))
        total = _add(app, sidecars)
        for peak in peaks:
            total = {k: max(total.get(k, 0), peak.get(k, 0)) for k in set(total) | set(peak)}
        out.append(total)
    return out[0], out[1]


class Asker:
    """One kind of pod (or claim) the release creates: how many, what each asks, and the keys that say so."""

    def __init__(self, name: str, count: int, count_path: Path | None, requests: dict[str, int],
                 limits: dict[str, int], paths: dict[str, list[Path]]):
        self.name, self.count, self.count_path = name, count, count_path
        self.requests, self.limits, self.paths = requests, limits, paths


def _ray_pod(values: dict[str, Any], role: str, overlay_path: Path, overlay: dict[str, Any]) -> Asker:
    kuberay, cluster = values.get("kuberay") or {}, (values.get("recipe") or {}).get("cluster") or {}
    size = kuberay.get("head" if role == "head" else "worker") or {}
    base = {"cpu": size.get("cpu", "2" if role == "head" else "8"),
            "memory": size.get("memory", "8Gi" if role == "head" else "32Gi")}
    size_key = ("kuberay", "head" if role == "head" else "worker")
    paths: dict[str, list[Path]] = {"cpu": [(*size_key, "cpu")], "memory": [(*size_key, "memory")]}
    spec = ((overlay.get("template") or {}).get("spec")) or {}
    main, sidecars = {"resources": {"requests": dict(base), "limits": dict(base)}}, []
    for c in spec.get("containers") or []:
        if not c.get("name") or c.get("name") == ("ray-head" if role == "head" else "ray-worker"):
            main = _merged(main, {k: v for k, v in c.items() if k not in ("env", "volumeMounts")})
        else:
            sidecars.append(c)
    if spec.get("containers") or spec.get("initContainers"):
        for key in paths:
            paths[key].append((*overlay_path, "template", "spec"))
    res = main["resources"] = _merged({"requests": {}, "limits": {}}, main.get("resources") or {})
    if role != "head":
        gpus = (cluster.get(role) or {}).get("gpusPerNode", 8)  # the recipe's default
        res["requests"]["nvidia.com/gpu"] = res["limits"]["nvidia.com/gpu"] = gpus
        paths["nvidia.com/gpu"] = [("recipe", "cluster", role, "gpusPerNode")]
        net = kuberay.get("network") or {}
        device = None
        if net.get("profile") == "rdma":
            rdma = net.get("rdma") or {}
            device = (rdma.get("resourceName"), rdma.get("perPod") or 1)
        elif net.get("profile") == "efa":
            device = ("vpc.amazonaws.com/efa", (net.get("efa") or {}).get("perPod", 1))
        if device and device[0]:
            res["requests"][device[0]] = res["limits"][device[0]] = device[1]
            paths[device[0]] = [("kuberay", "network")]
    storage = (values.get("infra") or {}).get("storage") or {}
    fills = role == "head" and bool(storage.get("modelCache")) and bool((storage.get("modelCache") or {}).get("fill"))
    watch = (values.get("launch") or {}).get("watch") or {}
    logs = storage.get("logs")
    keeps = bool(logs and role in (logs.get("mountOn") or ("head", "trainer", "inference"))
                 and watch.get("enabled", True) and int(watch.get("keepRayLogMiB", 64)) > 0)
    # the chart's own init containers replace an overlay's of the same name, and only where the chart adds them
    ours = {name for name, added in (("model-cache-fill", fills), ("dockyard-ray-logs", keeps)) if added}
    inits = [c for c in spec.get("initContainers") or [] if c.get("name") not in ours]
    if fills:
        inits.append({"name": "model-cache-fill", "resources": {"requests": base, "limits": base}})
        for key in ("cpu", "memory"):
            paths[key].append(("infra", "storage", "modelCache", "fill"))
    if keeps:
        inits.insert(0, {"name": "dockyard-ray-logs", "restartPolicy": "Always",
                         "resources": {"requests": KEEPER[0], "limits": KEEPER[1]}})
        for key in ("cpu", "memory"):
            paths[key].append(("launch", "watch", "keepRayLogMiB"))
    requests, limits = _pod([main, *sidecars], inits)
    if role == "head":
        return Asker("head", 1, None, requests, limits, paths)
    # KubeRay makes replicas × numOfHosts pods of a group (the chart pins replicas to the recipe's nodes)
    nodes = int((cluster.get(role) or {}).get("nodes", 1)) * int(overlay.get("numOfHosts") or 1)
    return Asker(role, nodes, ("recipe", "cluster", role, "nodes"), requests, limits, paths)


def askers(values: dict[str, Any]) -> list[Asker]:
    """Every pod kind the release creates in its namespace, with how many of each."""
    launch, sandbox = values.get("launch") or {}, values.get("sandbox") or {}
    mode = launch.get("mode", "rayjob")
    out = []
    if mode != "attach":
        spec = (values.get("kuberay") or {}).get("spec") or {}
        out.append(_ray_pod(values, "head", ("kuberay", "spec", "headGroupSpec"), spec.get("headGroupSpec") or {}))
        overlays = {g.get("groupName"): (i, g) for i, g in enumerate(spec.get("workerGroupSpecs") or [])}
        for role in ("trainer", "inference"):
            i, overlay = overlays.get(role, (0, {}))
            out.append(_ray_pod(values, role, ("kuberay", "spec", "workerGroupSpecs", i), overlay))
        if mode == "rayjob" and launch.get("submissionMode", "K8sJobMode") == "K8sJobMode":
            req, lim = ({k: milli(v) for k, v in side.items()} for side in SUBMITTER)
            out.append(Asker("submitter", 1, ("launch", "submissionMode"), req, lim, {}))
    res = sandbox.get("resources") or {}
    fields = {"cpu": "cpu", "memory": "memory", "ephemeral-storage": "ephemeralStorage"}
    defaults = {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "10Gi"}
    req = {k: milli(res.get(f, defaults[k])) for k, f in fields.items()}
    lim = {k: milli(res[f + "Limit"]) if res.get(f + "Limit") is not None else req[k] for k, f in fields.items()}
    paths: dict[str, list[Path]] = {}
    for k, f in fields.items():
        paths[k] = [("sandbox", "resources", f)]
        if res.get(f + "Limit") is not None:
            paths[k].append(("sandbox", "resources", f + "Limit"))
    hpa = sandbox.get("autoscaling") or {}
    pool = sandbox.get("backend", "pool") == "pool"
    where: Path = ("sandbox", "replicas")
    if pool and hpa.get("enabled"):  # the most the HPA may scale to: a quota below it caps the HPA unseen
        count, where = int(hpa.get("maxReplicas", 10)), ("sandbox", "autoscaling", "maxReplicas")
    else:
        count = int(sandbox.get("replicas", 0))
    if count:
        out.append(Asker("sandbox", count, where, req, lim, paths))
    surge = rollout_surge((sandbox.get("rollingUpdate") or {}).get("maxSurge", "25%"), count) if pool else 0
    if surge:  # a rollout's extra pods beside the old ones: a quota without room for them stalls every upgrade
        out.append(Asker("sandbox rollout surge", surge, ("sandbox", "rollingUpdate", "maxSurge"), req, lim, paths))
    if pool:
        req, lim = ({k: milli(v) for k, v in side.items()} for side in TEST_POD)
        out.append(Asker("test", 1, ("sandbox", "backend"), req, lim, {}))
    return out


def rollout_surge(max_surge: int | str, replicas: int) -> int:
    """The pods a Deployment rollout adds beside `replicas` old ones: a count, or a percentage of the replicas
    rounded up (as the Deployment controller scales it)."""
    if isinstance(max_surge, str) and max_surge.endswith("%"):
        return math.ceil(int(max_surge[:-1]) * replicas / 100)
    return int(max_surge)


def claims(values: dict[str, Any]) -> list[tuple[str, int, str | None]]:
    """(volume key, size in thousandths of a byte, storage class or None for the default) of each claim the
    chart creates (a `size`, no `claimName`; none in attach mode)."""
    if (values.get("launch") or {}).get("mode") == "attach":
        return []
    storage = (values.get("infra") or {}).get("storage") or {}
    return [(key, milli(vol["size"]), vol.get("storageClassName")) for key in VOLUMES
            if (vol := storage.get(key)) and vol.get("claimName") is None and vol.get("size") is not None]


def _dotted(path: Path) -> str:
    return ".".join(str(p) for p in path)


def _show(resource: str, value: int) -> str:
    """A total in thousandths shown exactly: cores (or millicores), bytes in the largest binary unit that divides
    them, devices and objects as numbers."""
    if resource == "cpu":
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    units = value / 1000
    if resource in ("memory", "ephemeral-storage", "storage") and value % 1000 == 0:
        for unit, size in (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value // 1000 % size == 0:
                return f"{value // 1000 // size}{unit}"
        return f"{value // 1000}"
    return f"{value // 1000}" if value % 1000 == 0 else f"{units}"


def _asked(key: str, values: dict[str, Any], where: Callable[[Path], str]) -> tuple[str, int, list[str]] | None:
    """(resource shown, total asked, the asking keys as `role n × each (keys)`) for one quota key; None when the
    release asks for none of what it counts."""
    side, resource = 0, key
    if key in ("pods", "count/pods"):
        return _count(askers(values), where)
    if key in ("persistentvolumeclaims", "count/persistentvolumeclaims"):
        return _claims(values, where, None, count=True)
    if key == "requests.storage":
        return _claims(values, where, None, count=False)
    if CLASS_SUFFIX in key:
        cls, _, what = key.partition(CLASS_SUFFIX)
        if what in ("requests.storage", "persistentvolumeclaims"):
            return _claims(values, where, cls, count=what == "persistentvolumeclaims")
        return None
    if key.startswith("limits."):
        side, resource = 1, key.removeprefix("limits.")
    elif key.startswith("requests."):
        resource = key.removeprefix("requests.")
    elif key not in COMPUTE:
        return None
    total, parts = 0, []
    for a in askers(values):
        each = (a.requests, a.limits)[side].get(resource, 0)
        if not each:
            continue
        total += a.count * each
        keys = ([a.count_path] if a.count_path else []) + a.paths.get(resource, [])
        parts.append(f"{a.name} {a.count} × {_show(resource, each)}" + (f" ({', '.join(map(where, keys))})"
                                                                         if keys else ""))
    return resource, total, parts


def _count(pods: list[Asker], where: Callable[[Path], str]) -> tuple[str, int, list[str]]:
    parts = [f"{a.name} {a.count}" + (f" ({where(a.count_path)})" if a.count_path else "") for a in pods if a.count]
    return "pods", 1000 * sum(a.count for a in pods), parts


def _claims(values: dict[str, Any], where: Callable[[Path], str], cls: str | None,
            count: bool) -> tuple[str, int, list[str]]:
    total, parts = 0, []
    for key, size, own in claims(values):
        if cls is not None and own != cls:
            continue  # a claim of the default class (unset) is not known to be of this class here
        total += 1000 if count else size
        paths: list[Path] = [("infra", "storage", key, "size")]
        if cls:
            paths.append(("infra", "storage", key, "storageClassName"))
        parts.append(f"{key} {'1 claim' if count else _show('storage', size)} ({', '.join(map(where, paths))})")
    return "count" if count else "storage", total, parts


def judges(key: str) -> bool:
    """Whether the rule compares this quota key with what the release asks for; any other key is the API's alone."""
    if key in ("pods", "count/pods", "persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage"):
        return True
    if CLASS_SUFFIX in key:
        return key.partition(CLASS_SUFFIX)[2] in ("requests.storage", "persistentvolumeclaims")
    return key.startswith(("limits.", "requests.")) or key in COMPUTE


def asked_total(values: dict[str, Any], key: str) -> int | None:
    """What the release asks for of one quota key, in thousandths (pods and claims: 1000 each); None when the rule
    does not judge that key."""
    found = _asked(key, values, _dotted)
    return None if found is None else found[1]


def quota_problems(values: dict[str, Any],
                   where: Callable[[Path], str] = _dotted) -> list[tuple[Path, str, str]]:
    """(the quota key's values path, message, expected) for each `infra.resourceQuota.hard` limit below what the
    release asks for; `where` shows an asking key (the composition adds its file and line)."""
    quota = (values.get("infra") or {}).get("resourceQuota") or {}
    if not quota.get("enabled"):
        return []
    out: list[tuple[Path, str, str]] = []
    for key, hard in (quota.get("hard") or {}).items():
        found = _asked(key, values, where)
        if found is None:
            continue
        resource, total, parts = found
        if total <= milli(hard):
            continue
        asked = f"{total // 1000}" if resource in ("pods", "count") else _show(resource, total)
        out.append((("infra", "resourceQuota", "hard", key),
                    f"the quota holds {hard} but the release asks for {asked}: " + "; ".join(parts),
                    f"{key} of at least {asked}, or a smaller ask"))
    return out
