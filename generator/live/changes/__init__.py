"""Changing a release: the values a verb installs (`plan`), the install step (`install`), the training-loss gate every
deleting path passes (`guard`, worded by `diff`), and removing a release (`teardown`). May import the sub-packages
below it (`generator.live.state`, `generator.live.doctor`, `generator.live.output`, `generator.live.probes`,
`generator.live.helm`, `generator.live.kueue`, `generator.live.client`) and render, inputs and the layers below them;
never a verb or `generator.live.cli` above it (live-layers)."""
