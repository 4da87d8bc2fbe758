"""`python -m generator.playground up|down|status` — the playground without the rest of the CLI.

Errors are printed and mapped to exit codes by the main CLI's dispatch: `error: ...` on stderr, 1 for
a failure, 2 for bad usage.
"""

import argparse
import sys

from generator.cli import dispatch
from generator.playground.cli import add_parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m generator.playground")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    return dispatch(parser.parse_args(["playground", *(sys.argv[1:] if argv is None else argv)]))


raise SystemExit(main())
