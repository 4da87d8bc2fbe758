"""`dockyard-k8s doctor`'s rows, one function per row, on the Row of `rows`: `access` (helm, API, namespace, release,
RBAC, PriorityClass, pull secrets), `kuberay`, `versions`, `admission`, `capacity` (room), `placement`,
`runtime_class`, `storage_rows`, `credentials`, `fabric`, `agent_sandbox`, `kueue_rows` and `topology_rows`.
`generator.live.verbs.doctor` puts them in order. May import the sub-packages below it (`generator.live.client`,
`generator.live.helm`, `generator.live.kueue`) and render, inputs and the layers below them; never state, output or
probes beside it, changes or a verb above it (live-layers)."""
