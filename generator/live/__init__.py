"""The live path: Helm releases (pyhelm3 over the chosen helm) and reading the cluster (kubernetes client).

Laid out by data flow in sub-packages: `client` <- `helm`, `kueue` <- `state`, `doctor`, `output`, `probes` <-
`changes` <- `verbs` <- `cli`, each of which may import only those below it, none beside it (the live-layers
contract of .importlinter, checked by lint-imports; the map of every module is in docs/live.md). The live path as a
whole may import render, inputs and the layers below them, never the playground beside it (package-layers).
`generator.live.cli` is loaded at CLI start-up: nothing heavy is imported here.
"""
