"""The playground's real node (`playground up --real-node`): one CPU node that runs pods for real, in network and
mount namespaces of its own with no route out of the machine.

`hooks` (prepare, start, health, teardown: what the playground's lifecycle calls), `spec` (names, addresses, paths
derived from the state folder), `components` (configs, command lines, the Node object), `host` (namespaces, cgroups,
teardown), `images` (OCI layouts), `certs`, `relay` (the apiserver relay), `gpus` (fake GPUs), `metrics`
(metrics-server), `local_path` (the default StorageClass), `ray_image`, `machine` (whether this machine can host it).
May import the playground's own modules (no cycle with them: the no-cycles contract) and the layers below the
playground, never `generator.live` (package-layers).
"""
