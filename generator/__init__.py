"""dockyard-k8s: recipe + infra spec -> validated Helm values -> a GPU RayCluster and a sandbox pool."""

__version__ = "0.1.0"

# The command line's exit codes, defined once here where every module gets them for free (no pydantic,
# no YAML): 0 success, 1 a check failed or the cluster said no, 2 bad input or usage.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
