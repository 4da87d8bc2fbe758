"""generator/maint/supported_versions.py: README's supported-versions table, generated from the table of tools."""

from __future__ import annotations

import re

from generator import tool_table
from generator.maint import supported_versions
from tests.support.tool_table import table_with_new_row


def test_readmes_supported_versions_follow_the_table(tmp_path):
    """README's generated table (make schema) takes its ranges and versions from the table: a KubeRay minor's
    CRDs added to a copy widen the supported range, a bumped pin is the one named as tested."""
    path = tmp_path / "tool_table.toml"
    path.write_text(re.sub(r'(?m)^HELM_VERSION = ".*"', 'HELM_VERSION = "v3.99.1"',
                           (tmp_path / table_with_new_row(tmp_path)).read_text()))
    table = supported_versions.markdown(tool_table.load(path))
    assert "| KubeRay (operator and CRDs) | v1.3 – v1.6 |" in table, table
    assert "| v3.99.1 and " in table, table
