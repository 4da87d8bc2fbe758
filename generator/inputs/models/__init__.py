"""Input and chart-values models: the one source of truth for every schema."""

from generator.inputs.models.infra import InfraSpec
from generator.inputs.models.recipe import Recipe
from generator.inputs.models.values import ChartValues

__all__ = ["ChartValues", "InfraSpec", "Recipe"]
