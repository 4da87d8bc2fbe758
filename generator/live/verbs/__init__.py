"""The live verbs, one module per verb or small verb family (`generator.live.cli` dispatches to them).

A verb module may import the library sub-packages of `generator.live` and render, inputs and the layers below them,
never another verb module (the `verbs-independent` contract of .importlinter, checked by lint-imports) nor
`generator.live.cli` above it (live-layers).
"""
