"""generator.live.changes.plan: the values a live verb installs. A ResourceQuota or LimitRange of the infra spec is
not installed (a note says how to), and what is installed is still values Helm's schema and the models accept: the
block switched off keeps its defaults (a switched-off key is refused, generator.inputs.switch_keys)."""

from __future__ import annotations

import json

import jsonschema

from generator.inputs.models import ChartValues
from generator.live.changes.plan import plan
from generator.pinned_tools import CHART_DIR
from tests.conftest import RECIPE, deep_merge, write
from tests.support.infra import GOOD_INFRA


def test_governance_is_left_out_and_the_values_stay_valid(tmp_path):
    infra = deep_merge(GOOD_INFRA, {"infra": {"resourceQuota": {"enabled": True, "hard": {"pods": "50"}},
                                              "limitRange": {"enabled": True, "max": {"cpu": "64"}}}})
    p = plan(str(RECIPE), str(write(tmp_path, "gov.infra.yaml", infra)), [], None, None)
    assert p.values["infra"]["resourceQuota"] == {"enabled": False}
    assert p.values["infra"]["limitRange"] == {"enabled": False}
    assert [n for n in p.notes if "the live path does not apply" in n] == [
        f"note: infra.{key} is enabled, but the live path does not apply a {kind} (namespace-wide governance is "
        f"cluster-admin territory); install it with `dockyard-k8s render {RECIPE} {tmp_path / 'gov.infra.yaml'} | "
        "kubectl apply -f -`" for key, kind in (("resourceQuota", "ResourceQuota"), ("limitRange", "LimitRange"))]
    ChartValues.model_validate(p.values)
    helm_sees = deep_merge(ChartValues().model_dump(mode="json", by_alias=True), p.values)  # values.yaml beneath
    jsonschema.Draft7Validator(json.loads((CHART_DIR / "values.schema.json").read_text())).validate(helm_sees)
    # negative control: the block only switched off, its limits kept, is what the schema refuses
    kept = deep_merge(helm_sees, {"infra": {"resourceQuota": {"hard": {"pods": "50"}}}})
    assert not jsonschema.Draft7Validator(json.loads((CHART_DIR / "values.schema.json").read_text())).is_valid(kept)
