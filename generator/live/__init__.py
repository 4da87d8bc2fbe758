"""The live path: Helm releases (pyhelm3 over the chosen helm) and reading the cluster (kubernetes client).

Laid out by data flow in sub-packages, each importing only those below it; the map of every module, and the
contracts that hold the order (lint-imports), are in docs/live.md. `generator.live.cli` is loaded at CLI
start-up: nothing heavy is imported here.
"""
