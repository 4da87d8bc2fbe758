"""`doctor`'s rows, one function per row, on the Row of rows.py: access (helm, API, namespace, release, RBAC,
PriorityClass, pull secrets), kuberay, versions, admission, capacity (room), placement, runtime_class, storage_rows,
credentials, fabric, agent_sandbox, kueue_rows and topology_rows. generator.live.verbs.doctor puts them in order.
Imports the client, helm and kueue sub-packages below it, never state, changes or a verb."""
