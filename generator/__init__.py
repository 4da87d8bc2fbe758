"""dockyard-k8s: recipe + infra spec -> validated Helm values -> a GPU RayCluster and a sandbox pool.

Laid out by the data, each layer importing only those below it (the package-layers contract of .importlinter,
checked by lint-imports): `errors` <- `bundled` <- `pinned_tools`, `quantity` <- `inputs` <- `render` <- `live` |
`playground` (apart: neither imports the other) <- `cli` <- `maint`, with `tool_table` and `in_image` at the bottom.
This file may import nothing of the package, so that any module may import it for the exit codes below."""

# The version is the chart's (charts/dockyard/Chart.yaml), which pyproject.toml builds the package's from:
# importlib.metadata.version("dockyard-k8s"), or `dockyard-k8s --version` (both, and the pinned tools').

# The command line's exit codes, defined once here where every module gets them for free (no pydantic,
# no YAML): 0 success, 1 a check failed or the cluster said no, 2 bad input or usage.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
