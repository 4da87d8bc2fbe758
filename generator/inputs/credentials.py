"""Names that read as credentials, and the refusal of a literal value under one.

A literal env value is written into the Helm release (a Secret anyone who reads Secrets in the namespace can
decode), into the RayJob and RayCluster specs and into every pod spec; a recipe override is written into the
recipe ConfigMap. A credential belongs in a Secret, read by the pod through `valueFrom.secretKeyRef`. Plain
functions without pydantic: the models, the JSON Schema twin and the override reader (loader.py) share them.

What reads as a credential, case-insensitive: TOKEN as the name's last word (HF_TOKEN, hf.token, NGROK_AUTHTOKEN,
accessToken; not a tokenizer's special tokens such as pad_token or eos_token, nor TOKENS, TOKENIZER or a file
path such as HF_TOKEN_PATH); a KEY whose last word says what it opens (API_KEY, apiKey, ACCESS_KEY, PRIVATE_KEY,
SECRET_KEY, …; not a recipe's data keys such as prompt_key or label_key); PASSWORD or PASSWD anywhere; SECRET as
the last word (CLIENT_SECRET; not SECRET_NAME, which names a Secret). A name ending in FILE or PATH names a file
that holds the credential (POSTGRES_PASSWORD_FILE, the convention of the official images), never one itself.
A recipe override is judged by its whole dotted path (wandb.api.key). The patterns are written without lookarounds
or inline flags, so JSON Schema validators on RE2 (Helm's) read them as Python does.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing's import costs ~3 ms at start-up: for type checkers only
if TYPE_CHECKING:
    from typing import Any


def _ci(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


_OPENS = ["api", "access", "private", "secret", "auth", "signing", "encryption", "client", "license", "master",
          "session", "refresh", "bearer", "id"]
CREDENTIAL_RE = "|".join([
    f"(^|[-_.]|{'|'.join(_ci(w) for w in _OPENS)}){_ci('token')}$", "[a-z]Token$",
    f"({'|'.join(_ci(w) for w in _OPENS)})[-_.]?{_ci('key')}$",
    _ci("password"), _ci("passwd"),
    f"(^|[-_.]|{_ci('client')}){_ci('secret')}$",
])
# A tokenizer's special tokens and other counts of tokens: the words of an LLM recipe, no credentials.
_COUNTED = ["pad", "eos", "bos", "unk", "mask", "sep", "cls", "start", "end", "stop", "special", "new", "max", "min",
            "num", "image", "video", "audio", "placeholder"]
# A name that points at a file (the *_FILE / *_PATH convention: POSTGRES_PASSWORD_FILE, passwordFile) holds a
# path, and the credential stays in the file: FILE or PATH as the last word, after a separator or in camelCase.
NOT_CREDENTIAL_RE = (f"(^|[-_.])({'|'.join(_ci(w) for w in _COUNTED)})[-_]?{_ci('token')}$"
                     f"|(^|[-_.])({_ci('file')}|{_ci('path')})$|[a-z](File|Path)$")
_CREDENTIAL = re.compile(CREDENTIAL_RE)
_NOT_CREDENTIAL = re.compile(NOT_CREDENTIAL_RE)

# Values shaped like a well-known credential, under any name: the token formats secret scanners (gitleaks and
# its kind) know, each a fixed prefix and the shape of what follows. Searched anywhere in the value (a token
# inside a URL leaks too), but only where the prefix starts a word (not the `sk-admin-` inside `task-admin-…`)
# and a fixed-length body ends one (not an AKIA-like run inside a longer word). (what it is, pattern)
_START, _END = "(^|[^A-Za-z0-9_-])", "([^A-Za-z0-9]|$)"
SHAPES = (
    ("a Hugging Face token", f"{_START}hf_[A-Za-z]{{34}}{_END}"),
    ("a GitHub token", f"{_START}((ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{{36}}|github_pat_[A-Za-z0-9_]{{82}}){_END}"),
    ("an OpenAI-style API key", (f"{_START}(sk-(proj|svcacct|admin)-[A-Za-z0-9_-]{{40,}}"
                                 f"|sk-[A-Za-z0-9]{{20}}T3BlbkFJ[A-Za-z0-9]{{20}}{_END}|sk-[A-Za-z0-9]{{48}}{_END})")),
    ("an AWS access key id", f"{_START}(AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{{16}}{_END}"),
    ("a Slack token", f"{_START}xox[baprs]-[0-9]{{8,}}-[0-9A-Za-z-]{{8,}}"),
    ("a PEM private key", "-----BEGIN[A-Z ]* PRIVATE KEY-----"),
)
CREDENTIAL_SHAPE_RE = "|".join(f"({pattern})" for _, pattern in SHAPES)
_SHAPES = [(what, re.compile(pattern)) for what, pattern in SHAPES]

# JSON Schema twins of literal_problem, for an EnvVar object: a credential's name with a literal string value,
# and a value shaped like a credential under any name.
CREDENTIAL_LITERAL: dict[str, Any] = {
    "required": ["name", "value"],
    "properties": {"name": {"pattern": CREDENTIAL_RE, "not": {"pattern": NOT_CREDENTIAL_RE}},
                   "value": {"type": "string"}},
}
CREDENTIAL_SHAPED: dict[str, Any] = {
    "required": ["value"], "properties": {"value": {"type": "string", "pattern": CREDENTIAL_SHAPE_RE}},
}


def reads_as_credential(name: str) -> bool:
    return bool(_CREDENTIAL.search(name)) and not _NOT_CREDENTIAL.search(name)


def secret_ref_hint(name: str) -> str:
    """The valueFrom to write instead of a literal, and how to make its Secret."""
    secret = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "credentials"
    return (f"valueFrom: {{secretKeyRef: {{name: {secret}, key: {name}}}}} in place of value, after "
            f"`kubectl create secret generic {secret} --from-literal={name}=...` (the value then stays out of the "
            "release, the RayJob and the pod specs)")


def shaped_like(value: Any) -> str | None:
    """What well-known credential the string `value` holds (SHAPES), or None."""
    if not isinstance(value, str):
        return None
    return next((what for what, pattern in _SHAPES if pattern.search(value)), None)


def literal_problem(name: str, value: Any) -> str | None:
    """Why an env var `name` may not hold the literal `value`, or None. The value is never repeated."""
    shaped = shaped_like(value)
    if shaped and not reads_as_credential(name):
        return (f"the value of {name} is shaped like {shaped}, and a literal value is stored in the Helm release (a "
                "Secret) and in every object and pod spec that carries it, readable by anyone who can read those")
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
        shaped = shaped_like(text)
        if leaf and shaped:
            return leaf[-1], (f"the override sets {leaf[-1]!r} to a value shaped like {shaped}: it is written into "
                              "the recipe ConfigMap and the Helm release, readable by anyone who can read those")
        if leaf and reads_as_credential(".".join(leaf)) and text:
            return leaf[-1], (f"the override sets {leaf[-1]!r}, which reads as a credential, to a literal: it is "
                              "written into the recipe ConfigMap and the Helm release, readable by anyone who can "
                              "read those")
    return None
