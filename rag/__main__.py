"""python -m rag: books · ingest · search · ask · eval · audit · serve.
Exit 0 ok, 2 user error, 1 otherwise."""

from __future__ import annotations

import argparse
import importlib
import sys

from rag.errors import ConfigError, InputError, RagError

COMMAND_MODULES = ("rag.commands.books", "rag.commands.index", "rag.commands.ask",
                   "rag.commands.audit", "rag.commands.eval", "rag.commands.serve")
USER_ERRORS = (InputError, ConfigError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RagError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
