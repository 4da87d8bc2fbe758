"""`python -m generator.playground up|down|status` — the playground without the rest of the CLI.

Errors are printed and mapped to exit codes as generator/cli.py does: `error: ...` on stderr, 1 for
a failure, 2 for bad usage.
"""

import argparse
import sys

from generator import EXIT_BAD_INPUT, EXIT_FAILED
from generator.playground.cli import add_parser


def main(argv: list[str] | None = None) -> int:
    from generator.errors import CheckFailed, InputError
    from generator.tools import ToolMissing

    parser = argparse.ArgumentParser(prog="python -m generator.playground")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["playground", *(sys.argv[1:] if argv is None else argv)])
    try:
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except (CheckFailed, ToolMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


raise SystemExit(main())
