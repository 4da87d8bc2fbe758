"""Kueue as the launcher models it: its names and API version (`api`), the gang it asks quota for (`gang`), a
ClusterQueue's quota with flavor assignment and cohort borrowing (`quota`), and where Topology Aware Scheduling
placed a Workload's pod sets (`topology`). Reading a job's Workload is `generator.live.state.queueing`; doctor's
Kueue rows are `generator.live.doctor.kueue_rows`. May import `generator.live.client` below it and render, inputs
and the layers below them; never helm beside it or a sub-package above it (live-layers)."""
