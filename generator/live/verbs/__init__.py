"""The live verbs, one module per verb or small verb family (`generator.live.cli` dispatches to them).

A verb module imports only the library modules of `generator.live` (and the rest of the package),
never another verb module: tests/unit/test_live_layers.py checks it.
"""
