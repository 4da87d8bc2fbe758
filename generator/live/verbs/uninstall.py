"""`uninstall` and `cluster down`: remove the release and wait until nothing of it is left."""

from __future__ import annotations

from typing import Any

from generator.errors import EXIT_OK
from generator.live.changes import teardown


def uninstall(args: Any) -> int:
    teardown.uninstall(args.kubeconfig, args.context, args.release, args.namespace, args.timeout or 300)
    return EXIT_OK
