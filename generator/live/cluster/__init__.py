"""Cluster access: the kubernetes client and its errors (kube), which kubeconfig a verb reads (kubeconfig), and
the pure helpers every layer above shares: Kubernetes quantities (quantity), node and label selection
(selectors), polling (wait). Imports nothing else of generator.live."""
