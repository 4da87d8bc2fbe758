"""What the user gives: the recipe and the infra spec read from YAML with their lines (`loader`, `reading`), checked
against the models (`models`, the one source of truth for every schema) and the rules that need more than one field
or file (`rules` and the `*_rules` modules; `credentials` for literal secrets), then composed into the chart's values
(`compose`). Errors carry the file, line and key path (`explain`).

May import generator's lower layers only (`generator.pinned_tools`, `generator.quantity`, `generator.bundled`,
`generator.errors`, `generator.tool_table`), never render, live or the playground above it (package-layers).
"""
