"""`python -m generator.playground up|down|status` — the playground without the rest of the CLI."""

import argparse
import sys

from generator.playground.cli import add_parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m generator.playground")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["playground", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


raise SystemExit(main())
