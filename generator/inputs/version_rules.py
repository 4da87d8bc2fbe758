"""Version-aware defaults: a field of a KubeRay CRD newer than the target KubeRay is left out when its value is
only the chart's default, and refused by name when the user set it. The target is the chart value
`kuberay.version`, which the generator sets from `check --kuberay-version`; the live verbs ask the served CRDs
(`run` and `smoke`: generator/live/changes/served_fields.py; doctor: its dry runs of the rendered objects).

The one such default today is launch.preRunningDeadlineSeconds (RayJob, new in KubeRay v1.6): the CRDs of the
pinned minors differ in more fields (the groups' `resources` and `labels`, `deletionStrategy`, `authOptions`,
`upgradeStrategy`), but the chart renders those only when the kuberay.spec overlay sets them.
Shared by the models, the happy path (without pydantic) and the chart's JSON Schema twin.
"""

from __future__ import annotations

from generator.pinned_tools import KUBERAY_PINS, kuberay_version, versions

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

# The default deadline for a RayJob to reach Running: an hour is longer than a healthy cold start on a GPU cluster
# (a node scale-up of ~10 min plus the pull of a 10-20 GB training image), and short enough that a start that
# cannot succeed frees the gang's GPUs, with KubeRay's reason, within the hour.
PRE_RUNNING_DEADLINE = 3600  # the chart reads it from templates/_constants.tpl (generator/maint/chart_constants.py)
PRE_RUNNING_SINCE = "1.6"  # the KubeRay minor whose RayJob has preRunningDeadlineSeconds


def _minor(version: str) -> tuple[int, ...]:
    """(1, 6) for 1.6, v1.6 or v1.6.1."""
    return tuple(int(part) for part in version.lstrip("v").split(".")[:2])


# The KubeRay minors `kuberay.version` takes (those whose CRDs the table pins), and those whose RayJob lacks
# preRunningDeadlineSeconds.
KUBERAY_MINORS = list(KUBERAY_PINS)
WITHOUT_PRE_RUNNING = [m for m in KUBERAY_MINORS if _minor(m) < _minor(PRE_RUNNING_SINCE)]
DEFAULT_KUBERAY_MINOR = ".".join(map(str, _minor(versions()["KUBERAY_VERSION"])))

# JSON Schema twin of pre_running_problem (ChartValues): an older target keeps the deadline unset, or 0.
PRE_RUNNING_RULE: dict[str, Any] = {
    "if": {"required": ["kuberay"], "properties": {"kuberay": {
        "required": ["version"], "properties": {"version": {"enum": WITHOUT_PRE_RUNNING}}}}},
    "then": {"properties": {"launch": {"properties": {"preRunningDeadlineSeconds": {"enum": [None, 0]}}}}},
}


def pre_running_problem(deadline: int | None, kuberay_minor: str) -> tuple[str, str] | None:
    """Why an explicit launch.preRunningDeadlineSeconds cannot reach the target KubeRay's RayJob: (message,
    expected), or None. Unset, or 0, renders nothing there."""
    if not deadline or _minor(kuberay_minor) >= _minor(PRE_RUNNING_SINCE):
        return None
    message = f"KubeRay {kuberay_minor}'s RayJob has no preRunningDeadlineSeconds (new in KubeRay v{PRE_RUNNING_SINCE})"
    return message, (f"no launch.preRunningDeadlineSeconds (or 0) with KubeRay {kuberay_minor}, or KubeRay "
                     f"v{PRE_RUNNING_SINCE} or later")


def renders(launch: dict[str, Any], kuberay_minor: str) -> bool:
    """Whether the chart's RayJob (launch.mode rayjob) for the target KubeRay has preRunningDeadlineSeconds: set
    (not 0) by the user, or unset where the target has the field (its default)."""
    deadline = launch.get("preRunningDeadlineSeconds")
    return bool(deadline) or (deadline is None and _minor(kuberay_minor) >= _minor(PRE_RUNNING_SINCE))


def pre_running_note(launch: dict[str, Any], kuberay_minor: str, target: str = "") -> str | None:
    """The one-line note when the default start deadline is left out for the target KubeRay (`target`: how to name
    it, by default `KubeRay <minor>`), or None."""
    if launch.get("mode", "rayjob") != "rayjob" or launch.get("preRunningDeadlineSeconds") is not None \
            or _minor(kuberay_minor) >= _minor(PRE_RUNNING_SINCE):
        return None
    bound = (f"launch.activeDeadlineSeconds ({launch['activeDeadlineSeconds']} s) bounds the whole job instead"
             if launch.get("activeDeadlineSeconds") else
             "nothing bounds a start that cannot succeed (set launch.activeDeadlineSeconds to bound the whole job)")
    who = target or f"KubeRay {kuberay_minor}"
    return (f"note: {who}'s RayJob has no preRunningDeadlineSeconds: the default start deadline "
            f"({PRE_RUNNING_DEADLINE} s, KubeRay v{PRE_RUNNING_SINCE} and later) is left out; {bound}")


def target_minor() -> str:
    """The KubeRay minor the values are for: `check --kuberay-version`'s, or a served one the live verbs target
    (generator.pinned_tools.targeting), else the pinned KUBERAY_VERSION's."""
    return ".".join(map(str, _minor(kuberay_version())))
