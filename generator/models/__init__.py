"""Input and chart-values models: the one source of truth for every schema."""

from generator.models.infra import InfraSpec
from generator.models.recipe import Recipe
from generator.models.values import ChartValues

__all__ = ["ChartValues", "InfraSpec", "Recipe"]
