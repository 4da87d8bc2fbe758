"""The live path: Helm releases (pyhelm3 over the pinned helm) and reading the cluster (kubernetes client).

Two layers. Library modules here: cluster access (kube), Helm and the run lock (release), reading a
release (snapshot, resolve, follow, driver_log), changing one (plan, install, guard, diff, teardown),
doctor's rows (preflight, capacity), output (show, progress), `check --server` (server_check) and the
smoke probe (smoke_probe). Verb modules in `verbs/`, one per verb or small verb family, use only the
library. `generator.live.cli` is loaded at CLI start-up: nothing heavy is imported here.
"""
