"""generator/live/client/block_yaml.py, the kubeconfig reader without PyYAML, against PyYAML's safe loader as the
oracle: whatever it returns, PyYAML returns equal; whatever is outside its subset it refuses (Unsupported), and the
caller hands it to PyYAML. On the kubeconfigs the tools and the tests write, and on generated documents and texts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.live.client import block_yaml
from generator.live.client.kubeconfig import Source, merged
from generator.pinned_tools import REPO

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SETTINGS = settings(max_examples=400, deadline=None, database=None,  # derandomized: the profile (tests/conftest.py)
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def agrees(text: str) -> bool:
    """True when block_yaml read `text` (and PyYAML reads it equal), False when it refused it."""
    try:
        ours = block_yaml.load(text)
    except block_yaml.Unsupported:
        return False
    theirs = yaml.load(text, Loader=LOADER) or {}
    assert ours == theirs and _types(ours) == _types(theirs), text
    return True


def _types(value: Any) -> Any:
    """The value's shape with each scalar's type: True and 1, or 1 and 1.0, compare equal in Python."""
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


KUBECTL = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: https://127.0.0.1:6443
  name: kind-kind
- cluster:
    insecure-skip-tls-verify: true
    server: https://10.0.0.1
    tls-server-name: kube.test
  name: other
contexts:
- context:
    cluster: kind-kind
    namespace: dockyard
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {{}}
users:
- name: kind-kind
  user:
    client-certificate-data: {ca}
    client-key-data: {ca}
- name: eks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - us-west-2
      - eks
      - get-token
      command: aws
      env: null
      interactiveMode: IfAvailable
      provideClusterInfo: false
- name: tok
  user:
    token: 470be68389d13b5a0014204809d6c6d53271d5862b38c758
"""


def test_the_kubeconfigs_kubectl_and_the_playground_write_are_read_without_pyyaml(tmp_path):
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n" + bytes(range(256)) * 4).decode()
    assert agrees(KUBECTL.format(ca=ca))
    from generator.playground.files import kubeconfig, write_yaml

    (tmp_path / "ca.crt").write_bytes(b"not a real CA")
    path = tmp_path / "kubeconfig"
    write_yaml(path, kubeconfig("https://127.0.0.1:58653", str(tmp_path / "ca.crt"), "470be6" * 8, "admin"))
    assert agrees(path.read_text())
    assert merged(Source([str(path)], True))["users"] == [{"name": "admin", "user": {"token": "470be6" * 8}}]


def test_every_kubeconfig_of_the_repository_is_read_equal_or_handed_to_pyyaml():
    found = [p for p in REPO.glob("tests/**/*") if p.is_file() and "kubeconfig" in p.name.lower()
             and p.suffix in ("", ".yaml", ".yml", ".kubeconfig")]
    for path in found:
        agrees(path.read_text())


@pytest.mark.parametrize("text", [
    "a: 1\n", "a: 1.5\n", "a: 0x1f\n", "a: 2001-12-14\n", "a: .inf\n", "a: -1\n", "a: ---\n",
    "a: b # c\n", "a: &x b\n", "a: *x\n", "a: !!str b\n", "a: |\n  b\n", "a: >\n  b\n", "a: [b]\n", "a: {b: c}\n",
    "a: 'b\n", 'a: "b\\n"\n', "a:\n  b\n", "a: b\n  c\n", "on: b\n", "1: b\n", '"a": b\n', "a: b\na: c\n",
    "- a\n", "a\n", "---\na: b\n", "a: b\n---\nc: d\n", "a:\n\tb: c\n", "a: b: c\n", "a: b:\n", "a:\n  - - b\n",
    "a: %b\n", "a: @b\n", "a: -\n", "a: - b\n", "a: <<\n", "a: =\n", " a: b\n", "a:\n    b: c\n  d: e\n",
])
def test_what_is_outside_the_subset_is_refused(text):
    assert not agrees(text)


@pytest.mark.parametrize("text", [
    "", "# only a comment\n", "a:\n", "a: ~\n", "a: null\n", "a: yes\nb: Off\nc: y\nd: n\n", "a: 'it''s'\n",
    'a: "b: c"\n', "a: http://x:8080/p?q=1&r=[2]\n", "a: 470be6\nb: 1a\nc: +x\n",
    "a:\n- b\n-\n- c: d\n  e: f\n-\n  g: h\nk: {}\nl: []\n", "a:\n  b:\n  - 1x\n  c: d\n", "a:   b  \n",
    "a: b#c\n", "a:\n  # a comment\n  b: c\n", "a: -a\nb: .kube/config\nc:\n- --region\n",
])
def test_what_is_inside_the_subset_is_read_as_pyyaml_reads_it(text):
    assert agrees(text)


WORDS = st.sampled_from(["yes", "No", "on", "OFF", "true", "False", "null", "~", "y", "n", "1", "0o7", "007", "0x1F",
                         "1_000", "1:30", "1.5", "1e5", "1.0e+5", ".5", ".inf", "-.Inf", ".NaN", "2001-12-14",
                         "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "470be6", "1a", "+1", "+x",
                         "-x", "a b", "a: b", "a:b", "a #b", "a#b", "'q'", '"q"', "it's", "x,y", "[x]", "{x}", "",
                         " lead", "trail ", "<<", "=", "@x", "`x", "%x", "!x", "&x", "*x", "|", ">", "?", "?x", ":x",
                         "-", "--", "---", "...", "https://127.0.0.1:6443", "/etc/kubernetes/pki/ca.crt"])
SCALARS = st.one_of(WORDS, st.text(st.sampled_from("ab01.:-_ #'\"/"), max_size=8), st.booleans(), st.none(),
                    st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False, width=16))
NAMES = st.sampled_from(["name", "cluster", "user", "server", "certificate-authority-data", "current-context",
                         "a.b/c", "token", "args", "Key_2"])
KEYS = st.one_of(NAMES, NAMES, NAMES, st.sampled_from(["on", "yes", "null", "1", "x y", "-a", "'q'", "<<"]),
                 st.text(st.sampled_from("abc-_."), min_size=1, max_size=4))
DOCS = st.dictionaries(KEYS, st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                                          | st.dictionaries(KEYS, inner, max_size=3), max_leaves=12), max_size=5)


@SETTINGS
@given(doc=DOCS, style=st.sampled_from([{}, {"indent": 4}, {"default_style": "'"}, {"default_style": '"'},
                                        {"width": 20}, {"default_flow_style": None}]))
def test_generated_documents_as_pyyaml_dumps_them(doc, style):
    agrees(yaml.safe_dump(doc, sort_keys=False, **style))


ORDINARY = st.sampled_from(["v1", "Config", "admin", "kind-kind", "https://127.0.0.1:6443", "LS0tLS1CRUdJTi==",
                            "470be6", "/etc/kubernetes/pki/ca.crt", "--region", "IfAvailable", "a b"])
PLAIN = st.one_of(ORDINARY, ORDINARY, ORDINARY, WORDS, st.text(st.sampled_from("abz019.:-_ #'/"), min_size=1,
                                                                max_size=8))
MOSTLY_NAMES = st.one_of(*[NAMES] * 12, KEYS)  # one odd key spoils a whole document: rarely
TREES = st.recursive(PLAIN, lambda inner: st.lists(inner, min_size=1, max_size=3)
                     | st.dictionaries(MOSTLY_NAMES, inner, min_size=1, max_size=3), max_leaves=10)


@st.composite
def texts(draw: Any) -> str:
    """A document written by hand the way kubeconfigs are (not by PyYAML): block style at a drawn indentation, a
    sequence at its key's column or deeper, scalars plain or quoted as drawn, comment lines and trailing blanks; the
    words are the tricky ones, so the oracle decides what each means."""
    step, indentless, gap = draw(st.sampled_from([2, 3, 4])), draw(st.booleans()), draw(st.sampled_from([1, 1, 2]))

    def scalar(text: str) -> str:
        how = draw(st.sampled_from(["plain", "plain", "plain", "single", "double"]))
        return {"plain": text, "single": "'" + text.replace("'", "''") + "'", "double": f'"{text}"'}[how]

    def block(node: Any, col: int, out: list[str], lead: str | None = None) -> None:
        """`lead`: the text before the node's first line (a sequence item's dash), on that line."""
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for n, (key, value) in enumerate(items):
            pad = lead if (lead is not None and n == 0) else " " * col
            head = f"{pad}{key}:" if isinstance(node, dict) else f"{pad}-"
            if isinstance(value, dict | list) and draw(st.booleans()) and isinstance(node, list) \
                    and isinstance(value, dict):
                block(value, col + 2, out, lead=head + " ")  # `- key: ...` on the dash's line
            elif isinstance(value, dict | list):
                out.append(head)
                deeper = col if (isinstance(node, dict) and isinstance(value, list) and indentless) else col + step
                block(value, deeper, out)
            else:
                out.append(head + " " * gap + scalar(str(value)) + draw(st.sampled_from(["", "", "  "])))
            if draw(st.integers(0, 9)) == 0:
                out.append(" " * draw(st.integers(0, col + 2)) + draw(st.sampled_from(["# note", ""])))

    doc = draw(st.dictionaries(MOSTLY_NAMES, TREES, min_size=1, max_size=4))
    lines: list[str] = []
    block(doc, 0, lines)
    return "\n".join(lines) + "\n"


@settings(SETTINGS, max_examples=600)
@given(text=texts())
def test_generated_texts_are_read_equal_or_refused(text):
    try:
        ours = block_yaml.load(text)
    except block_yaml.Unsupported:
        return
    try:
        theirs = yaml.load(text, Loader=LOADER) or {}
    except yaml.YAMLError as exc:
        raise AssertionError(f"read as {ours!r}, but PyYAML refuses it: {exc}\n{text}") from None
    assert ours == theirs and _types(ours) == _types(theirs), text


def test_a_kubeconfig_outside_the_subset_is_still_read_by_pyyaml(tmp_path):
    path = Path(tmp_path / "kubeconfig")
    path.write_text("# made by hand\nclusters: [{name: c, cluster: {server: 'https://x'}}]  # flow style\n"
                    "current-context: x\n")
    assert merged(Source([str(path)], True))["clusters"] == [{"name": "c", "cluster": {"server": "https://x"}}]
