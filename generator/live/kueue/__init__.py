"""Kueue as the launcher models it: its names and API version (api), the gang it asks quota for (gang), and a
ClusterQueue's quota with flavor assignment and cohort borrowing (quota). Reading a job's Workload is
state.queueing; doctor's Kueue rows are doctor.kueue_rows."""
