"""The RayJob entrypoint is a shell command: the recipe path stays one argument, whatever it holds."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from generator.render.helm import Template
from tests.conftest import Rendered, chart_values

PATHS = [
    "/etc/dockyard",                 # the default: stays bare
    "/etc/my recipes",               # a space split --config before
    "/etc/it's here",
    '/etc/"quoted" dir',
    "/etc/$HOME/$(id)/`id`",
    "/etc/a\\b;c&&d|e>f<g*?[h]~{i}#j",
    "/etc/tab\there",
    "/etc/line\nbreak",
    "/etc/dockyard/",
    "/etc/ünï 中文",
]


def _entrypoints(inject: bool) -> dict[str, str]:
    runs = {path: Template(chart_values(launch={"configMountPath": path}, sandbox={"injectUrls": inject}),
                           "grpo-swe", "dockyard") for path in PATHS}
    out = {}
    for path, run in runs.items():
        rendered = Rendered(run.result())
        head = rendered.groups()["head"]["template"]["spec"]["containers"][0]
        assert {"name": "recipe", "mountPath": path, "readOnly": True} in head["volumeMounts"], path
        out[path] = rendered.one("RayJob")["spec"]["entrypoint"]
    return out


def _shell_argv(command: str) -> list[str]:
    """The argv a real POSIX shell reads from `command`."""
    shell = subprocess.run(["sh", "-c", f"printf '%s\\0' {command}"], capture_output=True, text=True, check=True)
    return shell.stdout.split("\0")[:-1]


KEEP = str(64 * 1048576)


@pytest.mark.parametrize("inject", [True, False])
def test_config_path_is_one_argument(inject):
    tail = ["env.code.sandbox_urls=null"] if inject else []
    for path, entry in _entrypoints(inject).items():
        argv = ["python", "-m", "dockyard_rl.train", "--config", f"{path}/recipe.yaml", *tail]
        # the run watcher runs the entrypoint: one word after `--`, which it hands to /bin/sh
        outer = shlex.split(entry)
        assert outer[:-1] == ["python3", f"{path}/run_watch.py", "--run", "grpo-swe", "--keep-bytes", KEEP, "--"]
        inner = outer[-1]
        assert shlex.split(inner) == argv, entry
        # the chart quotes exactly as Python's shlex.quote does (bare when safe), for callers that build it too
        assert inner == " ".join(["python -m dockyard_rl.train --config", shlex.quote(f"{path}/recipe.yaml"), *tail])
        assert entry == " ".join(["python3", shlex.quote(f"{path}/run_watch.py"), "--run grpo-swe --keep-bytes",
                                  KEEP, "--", shlex.quote(inner)])
        # and a real POSIX shell reads the same argv, twice over
        assert _shell_argv(entry)[-1] == inner, entry
        assert _shell_argv(inner) == argv, entry


def test_a_plain_path_is_not_quoted(render):
    entry = render().one("RayJob")["spec"]["entrypoint"]
    assert entry == (f"python3 /etc/dockyard/run_watch.py --run grpo-swe --keep-bytes {KEEP} -- "
                     "'python -m dockyard_rl.train --config /etc/dockyard/recipe.yaml env.code.sandbox_urls=null'")


def test_the_watcher_ships_in_the_recipe_configmap_and_goes_with_enabled_false(render):
    from generator.pinned_tools import CHART_DIR

    on = render()
    assert on.one("ConfigMap")["data"]["run_watch.py"] == (CHART_DIR / "files" / "run_watch.py").read_text()
    off = render(launch={"watch": {"enabled": False}})
    assert "run_watch.py" not in off.one("ConfigMap")["data"]
    assert off.one("RayJob")["spec"]["entrypoint"] == \
        "python -m dockyard_rl.train --config /etc/dockyard/recipe.yaml env.code.sandbox_urls=null"


def test_the_stall_guard_and_the_cap_reach_the_watcher(render):
    entry = render(launch={"watch": {"stallTimeoutSeconds": 600, "firstReportSeconds": 2400, "keepLogMiB": 8}}
                   ).one("RayJob")["spec"]["entrypoint"]
    assert shlex.split(entry)[2:11] == ["--run", "grpo-swe", "--keep-bytes", str(8 * 1048576), "--stall-timeout",
                                        "600", "--first-report", "2400", "--"]


@pytest.mark.parametrize("watch", [{}, {"enabled": False}, {"stallTimeoutSeconds": 90, "firstReportSeconds": 45},
                                   {"keepLogMiB": 1}])
def test_job_submit_wraps_a_bringup_job_exactly_as_the_chart_wraps_the_rayjob(render, watch):
    from generator.live.verbs.jobs import watched

    values = chart_values(launch={"watch": watch, "configMountPath": "/etc/my recipes"})
    entry = Rendered(Template(values, "grpo-swe", "dockyard").result()).one("RayJob")["spec"]["entrypoint"]
    inner = shlex.split(entry)[-1] if values["launch"]["watch"]["enabled"] else entry
    assert watched(inner, values["launch"], "grpo-swe") == entry


def test_the_default_k8sjobmode_path_hands_the_watcher_the_same_argv(render):
    """K8sJobMode (the default): KubeRay's submitter shell reads `ray job submit … -- <entrypoint>` into words, Ray's
    CLI joins them with subprocess.list2cmdline, and the job supervisor's /bin/sh reads that: for the chart's
    own paths the watcher gets its flags and the entrypoint as one word, as in HTTPMode."""
    entry = render(launch={"watch": {"stallTimeoutSeconds": 600}}).one("RayJob")["spec"]["entrypoint"]
    joined = subprocess.list2cmdline(shlex.split(entry))
    assert _shell_argv(joined.removeprefix("python3 ")) == shlex.split(entry)[1:]
