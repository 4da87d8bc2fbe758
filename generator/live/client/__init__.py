"""The Kubernetes API client of the live path: the client and its errors (kube), its HTTP/1.1 over the socket
(transport), which kubeconfig a verb reads (kubeconfig, with block_yaml for the plain YAML kubectl writes), and the
pure helpers every layer above shares: what a pod requests as the scheduler counts it (pod_requests), node and label
selection (selectors), polling (wait). Imports nothing else of generator.live."""
