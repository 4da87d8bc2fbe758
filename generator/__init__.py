"""dockyard-k8s: recipe + infra spec -> validated Helm values -> a GPU RayCluster and a sandbox pool."""

# The version is the chart's (charts/dockyard/Chart.yaml), which pyproject.toml builds the package's from:
# importlib.metadata.version("dockyard-k8s"), or `dockyard-k8s --version` (both, and the pinned tools').

# The command line's exit codes, defined once here where every module gets them for free (no pydantic,
# no YAML): 0 success, 1 a check failed or the cluster said no, 2 bad input or usage.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
