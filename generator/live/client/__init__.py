"""The Kubernetes API client of the live path: the client and its errors (`kube`, `api_errors`), its HTTP/1.1 over the
socket (`transport`), which kubeconfig a verb reads (`kubeconfig`, with `block_yaml` for the plain YAML kubectl
writes), and the pure helpers every layer above shares: what a pod requests as the scheduler counts it
(`pod_requests`), node and label selection (`selectors`), polling (`wait`). May import nothing else of
generator.live (the bottom of live-layers); render, inputs and the layers below them."""
