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


@pytest.mark.parametrize("inject", [True, False])
def test_config_path_is_one_argument(inject):
    tail = ["env.code.sandbox_urls=null"] if inject else []
    for path, entry in _entrypoints(inject).items():
        argv = ["python", "-m", "dockyard_rl.train", "--config", f"{path}/recipe.yaml", *tail]
        assert shlex.split(entry) == argv, entry
        # the chart quotes exactly as Python's shlex.quote does (bare when safe), for callers that build it too
        assert entry == " ".join(["python -m dockyard_rl.train --config", shlex.quote(f"{path}/recipe.yaml"), *tail])
        # and a real POSIX shell reads the same argv
        shell = subprocess.run(["sh", "-c", f"printf '%s\\0' {entry.removeprefix('python ')}"],
                               capture_output=True, text=True, check=True)
        assert shell.stdout.split("\0")[:-1] == argv[1:], entry


def test_a_plain_path_is_not_quoted(render):
    entry = render().one("RayJob")["spec"]["entrypoint"]
    assert entry == "python -m dockyard_rl.train --config /etc/dockyard/recipe.yaml env.code.sandbox_urls=null"
