"""Reading a release's state: one snapshot (snapshot, with the sandbox pool in pool and Kueue's view in
queueing), following it until an end state (follow, drawn by progress), and the Ray driver's log (driver_log)."""
