"""Which kubeconfig a live verb reads, merged exactly as kubectl (client-go) merges it, and the same view
handed to helm, so the CLI, helm and kubectl never act on different clusters.

client-go's rules: `--kubeconfig FILE` is read alone. Else every file of `$KUBECONFIG` (split on ':';
missing files skipped) is merged: the first file to define a cluster, user or context of a name wins,
and so does the first to set `current-context`; relative paths inside a file (certificate files, a
token file, an exec plugin's command when it holds a '/') are relative to that file's folder. Without
`$KUBECONFIG`: `~/.kube/config`, then the local playground's kubeconfig.

Helm uses client-go, so it gets the same files the same way (`--kubeconfig FILE`, or `$KUBECONFIG`
with the same list) plus `--kube-context` naming the context the CLI resolved; every `HELM_*` variable
that could point helm elsewhere is taken out of its environment (helm_env).
"""

from __future__ import annotations

import copy
import os

from generator.errors import CheckFailed, InputError, Problem

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any

KINDS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
CLUSTER_FILES = ("certificate-authority",)
USER_FILES = ("client-certificate", "client-key", "tokenFile")
# helm's own environment (`helm env`) that picks a cluster, namespace, credentials or release storage:
# never inherited by the helm the CLI runs (it passes its own context and namespace, and the driver)
HELM_TARGETING = ("HELM_KUBECONTEXT", "HELM_NAMESPACE", "HELM_DRIVER", "HELM_KUBEAPISERVER", "HELM_KUBETOKEN",
                  "HELM_KUBECAFILE", "HELM_KUBEASUSER", "HELM_KUBEASGROUPS", "HELM_KUBEINSECURE_SKIP_TLS_VERIFY",
                  "HELM_KUBETLS_SERVER_NAME", "HELM_DRIVER_SQL_CONNECTION_STRING")


def _usage(message: str) -> InputError:
    return InputError([Problem("<command line>", None, "", message)])


class Source:
    """Where the kubeconfig comes from: the files (in merge order) and how helm is told the same. (A plain class:
    dataclasses' import, with inspect and ast, is ~7 ms of every verb's start.)"""

    def __init__(self, files: list[str], explicit: bool) -> None:
        self.files = files
        self.explicit = explicit  # --kubeconfig: that file alone (helm: --kubeconfig); else helm gets $KUBECONFIG

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Source) and (self.files, self.explicit) == (other.files, other.explicit)

    def __repr__(self) -> str:
        return f"Source(files={self.files!r}, explicit={self.explicit!r})"

    def describe(self) -> str:
        return self.files[0] if len(self.files) == 1 else "KUBECONFIG=" + os.pathsep.join(self.files)


def source(explicit: str | None) -> Source:
    """--kubeconfig, else $KUBECONFIG's files (merged), else ~/.kube/config, else the playground's."""
    if explicit:
        if not os.path.isfile(explicit):
            raise _usage(f"--kubeconfig {explicit}: no such file")
        return Source([explicit], True)
    env = os.environ.get("KUBECONFIG")
    if env:
        files = [f for f in dict.fromkeys(os.path.expanduser(p) for p in env.split(os.pathsep) if p)
                 if os.path.isfile(f)]
        if not files:
            raise CheckFailed(f"KUBECONFIG={env}: none of its files exists")
        return Source(files, False)
    home = os.path.join(os.path.expanduser("~"), ".kube", "config")
    if os.path.isfile(home):
        return Source([home], False)
    from generator.pinned_tools import playground_state_dir

    pg = playground_state_dir() / "kubeconfig"
    if pg.is_file():
        return Source([str(pg)], True)
    raise CheckFailed("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or start the local playground "
                      "(`dockyard-k8s playground up`)")


def _join(base: str, relative: str) -> str:
    """`base / relative` as pathlib joins them: `.` and empty parts dropped, `..` kept."""
    return os.path.join(base, *(part for part in relative.split("/") if part not in ("", ".")))


def _absolute(entry: dict[str, Any], keys: tuple[str, ...], base: str) -> None:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            entry[key] = _join(base, value)


def _read(path: str) -> dict[str, Any]:
    from generator.live.client import block_yaml

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise _usage(f"kubeconfig {path}: {exc}") from None
    try:
        doc: Any = block_yaml.load(text)  # the plain block YAML the tools write, without PyYAML's ~10 ms import
    except block_yaml.Unsupported:  # anything else: PyYAML reads it, and says what is wrong with it
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's when PyYAML has it: ~4 ms less a start
        try:
            doc = yaml.load(text, Loader=loader) or {}  # a safe loader, C or Python
        except yaml.YAMLError as exc:
            raise _usage(f"kubeconfig {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise _usage(f"kubeconfig {path}: not a kubeconfig (a mapping)")
    base = os.path.dirname(os.path.realpath(path))
    for plural, key in KINDS:
        for item in doc.get(plural) or []:
            body = item.get(key) if isinstance(item, dict) else None
            if not isinstance(body, dict):
                continue
            if plural == "clusters":
                _absolute(body, CLUSTER_FILES, base)
            elif plural == "users":
                _absolute(body, USER_FILES, base)
                command = (body.get("exec") or {}).get("command")
                if isinstance(command, str) and "/" in command and not os.path.isabs(command):
                    body["exec"]["command"] = _join(base, command)
    return doc


def merged(src: Source) -> dict[str, Any]:
    """One kubeconfig dict, merged by client-go's rules (first definition wins), paths made absolute.
    Not the Python client's KubeConfigMerger: it lets the last file's current-context win, kubectl the first."""
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {plural: set() for plural, _ in KINDS}
    for path in src.files:
        doc = _read(path)
        for plural, _ in KINDS:
            for item in doc.get(plural) or []:
                name = item.get("name") if isinstance(item, dict) else None
                if isinstance(name, str) and name not in seen[plural]:
                    seen[plural].add(name)
                    out[plural].append(copy.deepcopy(item))
        if doc.get("current-context") and "current-context" not in out:
            out["current-context"] = doc["current-context"]
        if "preferences" in doc and "preferences" not in out:
            out["preferences"] = doc["preferences"]
    return out


def helm_env(src: Source, base: dict[str, str] | None = None) -> dict[str, str]:
    """helm's environment: ours without the HELM_* variables that choose a cluster, namespace or storage,
    the secret driver (where the CLI reads releases), and $KUBECONFIG as the CLI read it."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in HELM_TARGETING}
    env["HELM_DRIVER"] = "secret"
    if src.explicit:
        env.pop("KUBECONFIG", None)
    else:
        env["KUBECONFIG"] = os.pathsep.join(src.files)
    return env


def overridden(base: dict[str, str] | None = None) -> list[str]:
    """The HELM_* variables set in this environment that helm_env takes out (named in a note)."""
    env = os.environ if base is None else base
    return [f"{k}={env[k]}" for k in HELM_TARGETING if env.get(k)]
