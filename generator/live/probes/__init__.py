"""What is sent to a cluster to test it rather than to change it: `check --server`'s dry run of every rendered
object (server_check). `smoke`'s probe script, which runs on the Ray head, is generator/in_image/smoke_probe.py."""
