"""The live verbs, one module per verb or small verb family (`generator.live.cli` dispatches to them).

A verb module imports the library sub-packages of `generator.live` (and the rest of the package), never another
verb module: the `verbs-independent` contract of .importlinter holds it (lint-imports).
"""
