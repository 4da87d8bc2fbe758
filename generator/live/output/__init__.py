"""What the reading verbs print: one document as JSON, YAML or a table (show)."""
