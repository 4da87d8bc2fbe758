"""What is sent to a cluster to test it rather than to change it: `check --server`'s dry run of every rendered
object (server_check) and `smoke`'s probe script, run on the Ray head (smoke_probe)."""
