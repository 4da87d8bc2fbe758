"""`check`: models, values schema, one `helm template`, one `kubeconform -strict`, a summary table."""

from __future__ import annotations

import json
import sys
from generator.compose import compose, load_inputs, values_dict
from generator.errors import EXIT_FAILED, EXIT_OK, CheckFailed
from generator.tools import CHART_DIR, versions


def schema_errors(values: dict) -> list[str]:
    """Validate values against the chart's values.schema.json (what Helm enforces)."""
    import jsonschema

    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(values)]


def run_check(recipe: str, infra: str, overrides: list[str], out=None) -> int:  # type: ignore[no-untyped-def]
    out = out or sys.stdout
    from generator import helm, kubeconform

    inputs = load_inputs(recipe, infra, overrides)
    values = compose(inputs)
    data = values_dict(values)
    rows = [("✓", "models", "recipe and infra spec are valid")]
    errors = schema_errors(data)
    if errors:
        raise CheckFailed("values.schema.json refuses the composed values:\n  " + "\n  ".join(errors))
    rows.append(("✓", "values schema", "charts/dockyard/values.schema.json accepts the values"))
    manifests = helm.template(data, values.recipe.name, inputs.infra.infra.namespace, tests=True)
    results = kubeconform.in_stream_order(kubeconform.validate(manifests), manifests)
    rows.append(("✓", "helm template", f"{len(results)} objects rendered (helm {versions()['HELM_VERSION']})"))
    bad = [r for r in results if r.status != "valid"]
    mark = "✓" if not bad else "✗"
    rows.append((mark, "kubeconform", f"{len(results) - len(bad)} valid, {len(bad)} not "
                 f"(-strict; Kubernetes {kubeconform.kube_minor()}, KubeRay {versions()['KUBERAY_VERSION']} CRDs)"))
    width = max(len(r.kind) for r in results) if results else 4
    print(f"check {recipe} + {infra}: release {values.recipe.name}, namespace {inputs.infra.infra.namespace}, "
          f"mode {values.launch.mode}", file=out)
    for r in results:
        line = f"  {'✓' if r.status == 'valid' else '✗'} {r.kind:<{width}}  {r.name}"
        if r.status != "valid":
            line += f"  — {r.status}: {r.message}"
        print(line, file=out)
    print(file=out)
    for mark_, step, detail in rows:
        print(f"{mark_} {step:<14} {detail}", file=out)
    return EXIT_OK if not bad else EXIT_FAILED
