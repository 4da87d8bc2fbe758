"""Input and chart-values models: the one source of truth for every schema (the recipe's, the infra spec's, the
chart's values).

May import the rule modules of generator.inputs that its validators call (`generator.inputs.rules`, the `*_rules`
modules, `generator.inputs.mode_keys`, `generator.inputs.switch_keys`, `generator.inputs.credentials`) and
generator's lower layers; never the modules that import the models (`generator.inputs.compose`,
`generator.inputs.explain`: the no-cycles contract holds the direction), nor render, live or the playground."""

from generator.inputs.models.infra import InfraSpec
from generator.inputs.models.recipe import Recipe
from generator.inputs.models.values import ChartValues

__all__ = ["ChartValues", "InfraSpec", "Recipe"]
