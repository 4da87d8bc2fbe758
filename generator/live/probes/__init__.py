"""What is sent to a cluster to test it rather than to change it: `check --server`'s dry run of every rendered object
(`server_check`). `dockyard-k8s smoke`'s probe script, which runs on the Ray head, is
generator/in_image/smoke_probe.py. May import the sub-packages below it (`generator.live.helm`,
`generator.live.kueue`, `generator.live.client`) and render, inputs and the layers below them; never state, doctor or
output beside it, changes or a verb above it (live-layers)."""
