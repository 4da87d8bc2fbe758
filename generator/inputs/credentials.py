"""Names that read as credentials, and the refusal of a literal value under one.

A literal env value is written into the Helm release (a Secret anyone who reads Secrets in the namespace can
decode), into the RayJob and RayCluster specs and into every pod spec; a recipe override is written into the
recipe ConfigMap. A credential belongs in a Secret, read by the pod through `valueFrom.secretKeyRef`. Plain
functions without pydantic: the models, the JSON Schema twin and the override reader (loader.py) share them.

What reads as a credential, case-insensitive: TOKEN (not TOKENS nor TOKENIZER, the words of an LLM recipe:
max_tokens, tokenizer), PASSWORD or PASSWD, SECRET, anywhere in the name; KEY as its last word (`_KEY`, `-KEY`:
WANDB_API_KEY, wandb.api_key; not a key path such as `monkey`). The pattern is written without lookarounds or
inline flags, so JSON Schema validators on RE2 (Helm's) read it as Python does.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


def _ci(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


# TOKEN followed by the end, or by anything but S or IZ (TOKENS, TOKENIZER are no credentials).
CREDENTIAL_RE = "|".join([
    f"{_ci('token')}($|[^sSiI]|[iI]($|[^zZ]))",
    _ci("password"), _ci("passwd"), _ci("secret"),
    f"[-_]{_ci('key')}$",
])
_CREDENTIAL = re.compile(CREDENTIAL_RE)

# JSON Schema twin of literal_problem, for an EnvVar object: a credential's name with a literal string value.
CREDENTIAL_LITERAL: dict[str, Any] = {
    "required": ["name", "value"],
    "properties": {"name": {"pattern": CREDENTIAL_RE}, "value": {"type": "string"}},
}


def reads_as_credential(name: str) -> bool:
    return bool(_CREDENTIAL.search(name))


def secret_ref_hint(name: str) -> str:
    """The valueFrom to write instead of a literal, and how to make its Secret."""
    secret = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "credentials"
    return (f"valueFrom: {{secretKeyRef: {{name: {secret}, key: {name}}}}} in place of value, after "
            f"`kubectl create secret generic {secret} --from-literal={name}=...` (the value then stays out of the "
            "release, the RayJob and the pod specs)")


def literal_problem(name: str, value: Any) -> str | None:
    """Why an env var `name` may not hold the literal `value`, or None."""
    if not isinstance(value, str) or not reads_as_credential(name):
        return None
    return (f"{name} reads as a credential, and a literal value is stored in the Helm release (a Secret) and in "
            "every object and pod spec that carries it (the RayJob, the RayCluster, the sandbox Deployment), readable "
            "by anyone who can read those")


def _strings(value: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """Every (key path, string) of a mapping's leaves (a value given as a YAML mapping)."""
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in _strings(v, (*path, str(k)))]
    return [(path, value)] if isinstance(value, str) else []


def override_problem(path: tuple[str | int, ...], value: Any) -> tuple[str, str] | None:
    """A recipe override `a.b.api_key=LITERAL`: (the key whose name reads as a credential, why), or None. A
    number or boolean is no credential (ppo_max_token_len=16384); a mapping's string leaves are looked at too."""
    keys = tuple(p for p in path if isinstance(p, str))
    for leaf, text in _strings(value, keys):
        if leaf and reads_as_credential(leaf[-1]) and text:
            return leaf[-1], (f"the override sets {leaf[-1]!r}, which reads as a credential, to a literal: it is "
                              "written into the recipe ConfigMap and the Helm release, readable by anyone who can "
                              "read those")
    return None
