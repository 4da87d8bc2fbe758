"""The live path: Helm releases (pyhelm3 over the pinned helm) and reading the cluster (kubernetes client).

Nothing heavy is imported here: `generator.live.cli` is loaded at CLI start-up.
"""
