"""`check`, offline: models, values schema (enforced by helm), one `helm template`, then side by side one
`kubeconform -strict` (shapes) and one `kube-validate` (the apiserver's own validation), and the size
of Helm's release Secret. `checked` returns what they found, `report` prints it; `check --server`'s dry
run is live code (generator/live/probes/server_check.py): the CLI adds its lines and row before printing.

A failure of any of these tools (it is missing, cannot start, crashes, ends with an unexpected code,
prints what is not its report) is a CheckFailed of one line, and the other tools are stopped and reaped.
"""

from __future__ import annotations

import sys

from generator.errors import EXIT_FAILED, EXIT_OK, CheckFailed
from generator.pinned_tools import kube_version, kuberay_version, versions
from generator.render import apivalidate, helm, kubeconform

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

Row = tuple[str, str, str]  # mark, step, detail


class Checked:
    """What `check` found: the heading, the lines under it (objects, refusals, warnings), the summary
    rows, whether any step failed; and the rendered stream and its namespace, for the steps the CLI adds."""

    __slots__ = ("heading", "lines", "rows", "failed", "manifests", "namespace")

    def __init__(self, heading: str, lines: list[str], rows: list[Row], failed: bool, manifests: str,
                 namespace: str) -> None:
        self.heading, self.lines, self.rows, self.failed = heading, lines, rows, failed
        self.manifests, self.namespace = manifests, namespace

    def add(self, lines: list[str], row: Row, failed: bool) -> None:
        """One more step's lines and summary row (`check --server`)."""
        self.lines += lines
        self.rows.append(row)
        self.failed = self.failed or failed


def checked(recipe: str, infra: str, overrides: list[str], validator: kubeconform.Run | None = None) -> Checked:
    """`validator` is a kubeconform.Run started by the caller, so its start-up overlaps ours (the
    kube-validate process starts here, before the inputs are read, for the same reason).
    helm starts as soon as the inputs are read (`helm.started`), for the release and namespace they
    most likely give, and gets the values once validated (without pydantic on the happy path,
    `compose.composed`); a wrong guess only means a second helm (`helm.render`). Whatever fails, no
    process is left running."""
    from generator.inputs.reading import release_guess

    validator = validator or kubeconform.Run()
    early: helm.Template | None = None
    api: apivalidate.Run | None = None
    try:
        api = apivalidate.Run()
        early = helm.started(*(release_guess(recipe, infra, overrides) or (None, None)), tests=True)
        from generator.inputs.compose import composed  # YAML and the schema check: while helm starts

        c = composed(recipe, infra, overrides)
        vals = c.values
        manifests = helm.render(early, vals, c.release, c.namespace, tests=True)
        api.feed(manifests)  # returns at once: kube-validate runs beside kubeconform
        results = kubeconform.in_stream_order(validator.finish(manifests), manifests)
        api_report = api.finish(manifests)
    except BaseException:
        if early is not None and early.proc.returncode is None:
            early.cancel()
        validator.cancel()
        if api is not None:
            api.cancel()
        raise
    try:
        size, exact = apivalidate.release_size(vals, manifests)
    except OSError as exc:
        raise CheckFailed(f"the release-size estimate cannot read {exc.filename or 'the chart'}: "
                          f"{exc.strerror or exc}") from None
    refusals: dict[tuple[str, str], list[apivalidate.Finding]] = {}
    for f in api_report.findings:
        refusals.setdefault((f.kind, f.name), []).append(f)
    refused = len(refusals)
    bad = [r for r in results if r.status != "valid"]
    unvalidated = _left_out(api_report)
    left = [(r.kind, r.name) for r in results if r.kind in unvalidated]
    width = max((len(r.kind) for r in results), default=4)
    from generator.inputs.version_rules import pre_running_note

    note = pre_running_note(vals["launch"], vals["kuberay"]["version"])
    lines: list[str] = [f"  {note}"] if note else []
    for r in results:
        mark = "✓" if r.status == "valid" and (r.kind, r.name) not in refusals and r.kind not in unvalidated else "✗"
        line = f"  {mark} {r.kind:<{width}}  {r.name}"
        if r.status != "valid":
            line += f"  — {r.status}: {r.message}"
        lines.append(line)
        lines += [f"      apiserver refuses {_where(f)}{_hint(f)}" for f in refusals.pop((r.kind, r.name), [])]
        if r.kind in unvalidated:
            lines.append(f"      not validated by the apiserver's rules: {unvalidated[r.kind]}")
    for found in refusals.values():  # objects kubeconform did not list (none expected)
        lines += [f"  ✗ apiserver refuses {f.kind} {f.name}: {_where(f)}{_hint(f)}" for f in found]
    lines += [f"  ! apiserver warns on {w.kind} {w.name}: {w.message}" for w in api_report.warnings]
    too_big = size > apivalidate.SECRET_LIMIT
    if too_big:
        lines.append(f"  ✗ the Helm release Secret would hold ~{size} bytes (base64 of the gzipped release: chart "
                     f"files, values, rendered manifest); the apiserver refuses a Secret over "
                     f"{apivalidate.SECRET_LIMIT} bytes (1 MiB), so `helm install` fails — keep large data out of "
                     f"the recipe (in the image or a volume)")
    rows: list[Row] = [
        ("✓", "models", "recipe and infra spec are valid"),
        ("✓", "values schema", "charts/dockyard/values.schema.json accepts the values (enforced by helm)"),
        ("✓", "helm template",
         f"{len(results)} objects rendered (helm {_helm_label()}) with --kube-version {kube_version()}"),
        ("✗" if bad else "✓", "kubeconform", (f"{len(results) - len(bad)} valid, {len(bad)} not "
          f"(-strict; Kubernetes {kubeconform.kube_minor()}, KubeRay {kuberay_version()} CRDs)")),
        _api_row(api_report, refused, len(results), left),
        ("✗" if too_big else "✓", "release size",
         f"{'~' if exact else '≤ '}{size // 1024} KiB of 1024 KiB (Helm's release Secret, gzip + base64)"),
    ]
    heading = f"check {recipe} + {infra}: release {c.release}, namespace {c.namespace}, mode {c.mode}"
    incomplete = bool(left) or api_report.objects < len(results)
    return Checked(heading, lines, rows, bool(bad or api_report.findings or incomplete or too_big), manifests,
                   c.namespace)


def _left_out(found: apivalidate.Report) -> dict[str, str]:
    """Kind -> why kube-validate left its objects out (`skipped` names them `Kind.group`)."""
    out = {}
    for group_kind in found.skipped:
        kind, _, group = group_kind.partition(".")
        out[kind] = (f"kube-validate {found.kubernetes} has no validation of {kind}"
                     f"{f' ({group})' if group else ''}: no registry strategy of its own and no CRD of it given "
                     "(`make tools` rebuilds kube-validate and fetches the CRDs)")
    return out


def _api_row(found: apivalidate.Report, refused: int, rendered: int, left: list[tuple[str, str]]) -> Row:
    """✓ only when every rendered object was validated and none refused; an object left out is named
    with why (its object line says it too), and fails the row like a refusal: `check` cannot vouch for it."""
    detail = (f"{_count(len(found.findings), 'refusal')} in {_count(refused, 'object')}; " if found.findings else "")
    if left or found.objects < rendered:
        detail += f"{found.objects} of {rendered} objects validated"
        if left:
            detail += f" (left out: {', '.join(f'{kind} {name}' for kind, name in left)})"
    else:
        detail += f"{found.objects} objects"
    detail += (f", {found.pod_templates} pod templates "
               f"(Kubernetes {found.kubernetes} validation{_nearest(found.kubernetes)})")
    complete = not left and found.objects >= rendered
    return ("✓" if complete and not found.findings else "✗", "api validation", detail)


def report(found: Checked, out: TextIO | None = None, security: bool = False) -> int:
    """Print what `check` found; its exit code (1 when a step failed)."""
    out = out or sys.stdout
    print(found.heading, file=out)
    for line in found.lines:
        print(line, file=out)
    print(file=out)
    for mark, step, detail in found.rows:
        print(f"{mark} {step:<14} {detail}", file=out)
    if security:
        from generator.render.security_report import table

        print(f"\nhardening controls per pod template (rendered; see docs/validation-ledger.md)\n"
              f"{table(found.manifests)}", end="", file=out)
    return EXIT_FAILED if found.failed else EXIT_OK


def run_check(recipe: str, infra: str, overrides: list[str], out: TextIO | None = None,
              validator: kubeconform.Run | None = None, security: bool = False) -> int:
    """`check` without `--server`: find, print, the exit code."""
    return report(checked(recipe, infra, overrides, validator), out, security)


def _nearest(validated: str) -> str:
    """When `--kube-version` names another minor than kube-validate's pinned one: say it is the nearest."""
    def minor(v: str) -> str:
        return ".".join(v.lstrip("v").split(".")[:2])

    chosen = minor(kube_version())
    return "" if chosen == minor(validated) else f", the nearest pinned minor to {chosen}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _where(f: apivalidate.Finding) -> str:
    return f.message if f.field else f"the object: {f.message}"


def _hint(f: apivalidate.Finding) -> str:
    if f.kind == "ConfigMap" and not f.field and "Too long" in f.message:
        return " (data and binaryData together; the recipe is shipped in this ConfigMap: keep large data out of it)"
    return ""


def _helm_label() -> str:
    """The pinned version when the pinned helm rendered (no extra process), else the chosen binary's version."""
    from generator.pinned_tools import binary

    chosen = helm.helm_binary()
    return versions()["HELM_VERSION"] if chosen == binary("helm") else helm.helm_version(chosen).version
