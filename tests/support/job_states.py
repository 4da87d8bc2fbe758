"""A RayJob read one poll after another: the states a test scripts, and each attempt's driver log by job id."""

from __future__ import annotations


class ScriptedJob:
    """The RayJob's states one poll after another, and each attempt's driver log (by job id)."""

    def __init__(self, states: list[dict], logs: dict[str, str]):
        self.states, self.logs = states, logs

    def get_ray(self, _plural, _ns, name):
        st = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {"metadata": {"name": name}, "status": st}

    def request(self, _method, path):
        return {"logs": self.logs[path.split("/api/jobs/")[1].split("/")[0]]}

