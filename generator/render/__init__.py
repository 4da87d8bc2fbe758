"""From values to checked manifests, offline: `helm template` (`helm`), the checkers side by side (`kubeconform`,
`apivalidate`, `scan`, `security_report` for `check --security`; their failures worded by `procs`), `check` that runs
them (`check`), the rendered pod templates by role (`pod_templates`) and the CLI's file output (`atomic_file`). May
import inputs and the layers below it, never live, the playground or the CLI above it (package-layers).
"""
