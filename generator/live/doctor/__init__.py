"""`doctor`'s rows, one function per row, on the Row of rows.py: access (helm, API, namespace, release, RBAC,
PriorityClass, pull secrets), kuberay, versions, admission, capacity (room), placement, runtime_class and
kueue_rows. generator.live.verbs.doctor puts them in order."""
