"""`check`: models, values schema (enforced by helm), one `helm template`, then side by side one
`kubeconform -strict` (shapes) and one `kube-validate` (the apiserver's own validation), and the size
of Helm's release Secret."""

from __future__ import annotations

import sys

from generator.errors import EXIT_FAILED, EXIT_OK
from generator.render import apivalidate, helm, kubeconform
from generator.tools import versions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from generator.live.kube import Kube
    from generator.live.server_check import DryRun


def run_check(recipe: str, infra: str, overrides: list[str], out: TextIO | None = None,
              validator: kubeconform.Run | None = None, security: bool = False, server: Kube | None = None) -> int:
    """`validator` is a kubeconform.Run started by the caller, so its start-up overlaps ours (the
    kube-validate process starts here, before the inputs are read, for the same reason);
    `server` is a live.kube.Kube for a dry run of every object on the apiserver (`check --server`).
    helm starts as soon as the inputs are read (`helm.started`), for the release and namespace they
    most likely give, and gets the values once validated (without pydantic on the happy path,
    `compose.composed`); a wrong guess only means a second helm (`helm.render`)."""
    from generator.inputs.reading import release_guess

    out = out or sys.stdout
    validator = validator or kubeconform.Run()
    early = None
    try:
        api = apivalidate.Run()
    except BaseException:
        validator.cancel()
        raise
    try:
        early = helm.started(*(release_guess(recipe, infra, overrides) or (None, None)), tests=True)
        from generator.inputs.compose import composed  # YAML and the schema check: while helm starts

        c = composed(recipe, infra, overrides)
        vals = c.values
        manifests = helm.render(early, vals, c.release, c.namespace, tests=True)
        api.feed(manifests)  # returns at once: kube-validate runs beside kubeconform
    except BaseException:
        if early is not None and early.proc.returncode is None:
            early.cancel()
        validator.cancel()
        api.cancel()
        raise
    results = kubeconform.in_stream_order(validator.finish(manifests), manifests)
    api_report = api.finish(manifests)
    refusals: dict[tuple[str, str], list[apivalidate.Finding]] = {}
    for f in api_report.findings:
        refusals.setdefault((f.kind, f.name), []).append(f)
    refused = len(refusals)
    bad = [r for r in results if r.status != "valid"]
    width = max((len(r.kind) for r in results), default=4)
    print(f"check {recipe} + {infra}: release {c.release}, namespace {c.namespace}, mode {c.mode}", file=out)
    for r in results:
        mark = "✓" if r.status == "valid" and (r.kind, r.name) not in refusals else "✗"
        line = f"  {mark} {r.kind:<{width}}  {r.name}"
        if r.status != "valid":
            line += f"  — {r.status}: {r.message}"
        print(line, file=out)
        for f in refusals.pop((r.kind, r.name), []):
            print(f"      apiserver refuses {_where(f)}{_hint(f)}", file=out)
    for found in refusals.values():  # objects kubeconform did not list (none expected)
        for f in found:
            print(f"  ✗ apiserver refuses {f.kind} {f.name}: {_where(f)}{_hint(f)}", file=out)
    for w in api_report.warnings:
        print(f"  ! apiserver warns on {w.kind} {w.name}: {w.message}", file=out)
    size, exact = apivalidate.release_size(vals, manifests)
    too_big = size > apivalidate.SECRET_LIMIT
    if too_big:
        print(f"  ✗ the Helm release Secret would hold ~{size} bytes (base64 of the gzipped release: chart files, "
              f"values, rendered manifest); the apiserver refuses a Secret over {apivalidate.SECRET_LIMIT} bytes "
              f"(1 MiB), so `helm install` fails — keep large data out of the recipe (in the image or a volume)",
              file=out)
    rows = [
        ("✓", "models", "recipe and infra spec are valid"),
        ("✓", "values schema", "charts/dockyard/values.schema.json accepts the values (enforced by helm)"),
        ("✓", "helm template", f"{len(results)} objects rendered (helm {_helm_label()})"),
        ("✗" if bad else "✓", "kubeconform", (f"{len(results) - len(bad)} valid, {len(bad)} not "
          f"(-strict; Kubernetes {kubeconform.kube_minor()}, KubeRay {versions()['KUBERAY_VERSION']} CRDs)")),
        ("✗" if api_report.findings else "✓", "api validation",
         (f"{_count(len(api_report.findings), 'refusal')} in {_count(refused, 'object')}; "
          if api_report.findings else "")
         + f"{api_report.objects} objects, {api_report.pod_templates} pod templates "
         f"(Kubernetes {api_report.kubernetes} validation)"),
        ("✗" if too_big else "✓", "release size",
         f"{'~' if exact else '≤ '}{size // 1024} KiB of 1024 KiB (Helm's release Secret, gzip + base64)"),
    ]
    server_refused: list[DryRun] = []
    if server is not None:
        from generator.live.server_check import dry_run

        namespace = c.namespace
        dry = dry_run(server, manifests, namespace)
        server_refused = [d for d in dry if not d.accepted]
        for d in dry:
            if not d.accepted:
                print(f"  ✗ server refused {d.kind} {d.name}: {d.message}", file=out)
            for w in d.warnings:
                print(f"  ! server warns on {d.kind} {d.name}: {w}", file=out)
        rows.append(("✗" if server_refused else "✓", "server dry-run",
                     (f"{len(dry) - len(server_refused)} accepted, {len(server_refused)} refused "
                      f"(dryRun=All, namespace {namespace}, {server.server})")))
    print(file=out)
    for mark, step, detail in rows:
        print(f"{mark} {step:<14} {detail}", file=out)
    if security:
        from generator.render.security import table

        print(f"\nhardening controls per pod template (rendered; see docs/validation-ledger.md)\n{table(manifests)}",
              end="", file=out)
    failed = bad or server_refused or api_report.findings or too_big
    return EXIT_FAILED if failed else EXIT_OK


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
    from generator.tools import binary

    chosen = helm.helm_binary()
    return versions()["HELM_VERSION"] if chosen == binary("helm") else helm.helm_version(chosen).version
