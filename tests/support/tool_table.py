"""The table of tools (generator/tool_table.toml) with one more row: an older KubeRay minor's CRDs, as a matrix leg
adds it."""

from __future__ import annotations

from generator.pinned_tools import TOOLS_TABLE

NEW_ROW = '"kuberay-crds-1.3" = {pin = "KUBERAY_1_3_VERSION", build = "build_kuberay_crds", entry = "kuberay-crds", ' \
          'stream = 2, needed_by = ["offline"], what = "a minor no reader names"}\n'


def table_with_new_row(tmp_path) -> str:
    text = TOOLS_TABLE.read_text().replace("[pins]\n", '[pins]\nKUBERAY_1_3_VERSION = "v1.3.2"\n', 1) + NEW_ROW
    path = tmp_path / "tool_table.toml"
    path.write_text(text)
    return str(path)

