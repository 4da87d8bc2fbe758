"""What the reading verbs print: one document as JSON, YAML or a table (`show`). May import the sub-packages below it
(`generator.live.helm`, `generator.live.kueue`, `generator.live.client`) and render, inputs and the layers below
them; never state, doctor or probes beside it, changes or a verb above it (live-layers)."""
