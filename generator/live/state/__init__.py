"""Reading a release's state: one snapshot (`snapshot`, with the sandbox pool in `pool` and Kueue's view in
`queueing`), following it until an end state (`follow`, drawn by `progress`), and the Ray driver's log
(`driver_log`). May import the sub-packages below it (`generator.live.helm`, `generator.live.kueue`,
`generator.live.client`) and render, inputs and the layers below them; never doctor, output or probes beside it,
changes or a verb above it (live-layers)."""
