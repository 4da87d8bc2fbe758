"""verbs/jobs.py (`job submit`, `job list`, `job stop`): the RayJob `job submit` creates runs the recipe's
entrypoint with the config path quoted as the chart quotes it."""

from __future__ import annotations

import shlex

from generator.live.verbs.jobs import rayjob_body


def test_job_submit_quotes_the_config_path_like_the_chart():
    values = {"recipe": {"name": "small", "entrypoint": "python -m dockyard_rl.train"},
              "launch": {"configMountPath": "/etc/dock yard/$HOME"}, "sandbox": {"injectUrls": True}}
    entry = rayjob_body("j", "c", values)["spec"]["entrypoint"]
    assert shlex.split(entry) == ["python", "-m", "dockyard_rl.train", "--config", "/etc/dock yard/$HOME/recipe.yaml",
                                  "env.code.sandbox_urls=null"]
