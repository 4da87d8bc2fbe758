"""dockyard-k8s: recipe + infra spec -> validated Helm values -> a GPU RayCluster and a sandbox pool."""

__version__ = "0.1.0"
