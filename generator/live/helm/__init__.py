"""Helm: running helm (`runner`), its release records (`records`), whose release it is (`ownership`), which release a
verb means (`resolve`), and the per-release run lock (`run_lock`, with the holder evidence in `holders`). May import
`generator.live.client` below it and render, inputs and the layers below them; never kueue beside it or a
sub-package above it (live-layers)."""
