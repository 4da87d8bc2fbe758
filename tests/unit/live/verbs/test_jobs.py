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


class _Kube:
    def __init__(self, data):
        self.data = data

    def get_ray(self, plural, ns, name):
        return {"spec": {"headGroupSpec": {"template": {"spec": {"volumes": [
            {"name": "recipe", "configMap": {"name": f"{name}-recipe"}}]}}}}}

    def request(self, method, path):
        assert path == "/api/v1/namespaces/ns/configmaps/small-recipe"
        return {"data": self.data}


def test_a_bringup_job_runs_under_the_watcher_only_when_the_heads_configmap_holds_it(capsys):
    from generator.live.verbs.jobs import _head_holds_watcher

    assert _head_holds_watcher(_Kube({"recipe.yaml": "", "run_watch.py": "..."}), "ns", "small") is True
    assert _head_holds_watcher(_Kube({"recipe.yaml": ""}), "ns", "small") is False
    assert "has no run watcher" in capsys.readouterr().err
    values = {"recipe": {"name": "small", "entrypoint": "python -m x"}, "launch": {"mode": "bringup"},
              "sandbox": {"injectUrls": False}}
    assert rayjob_body("j", "small", values, watcher=True)["spec"]["entrypoint"].startswith(
        "python3 /etc/dockyard/run_watch.py --run j ")
    assert rayjob_body("j", "small", values)["spec"]["entrypoint"] == "python -m x --config /etc/dockyard/recipe.yaml"
