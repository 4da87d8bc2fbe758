"""The maintainers' tools, run from a clone: `make schema` (`schema_export`, `supported_versions`, `chart_readme`,
`chart_constants`), `make validate` (`validate_examples`) and `make record` (`record_cluster`, in the format of
`recording`). The top layer: it may import anything in the package; nothing imports it but the tests.
"""
