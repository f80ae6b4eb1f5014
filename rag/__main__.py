"""Folio from the command line (`folio`, or `python -m rag` in a checkout): app · books ·
ingest · search · ask · eval · audit · serve. Exit 0 ok, 2 user error, 1 otherwise."""

from __future__ import annotations

import argparse
import importlib
import sys

from rag.errors import ConfigError, InputError, RagError

COMMAND_MODULES = ("rag.commands.app", "rag.commands.books", "rag.commands.index",
                   "rag.commands.ask", "rag.commands.audit", "rag.commands.eval",
                   "rag.commands.serve")
USER_ERRORS = (InputError, ConfigError)


def build_parser(prog: str = "python -m rag") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None, prog: str = "python -m rag") -> int:
    parser = build_parser(prog)
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "app":  # only `app` passes options on (to streamlit run)
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.streamlit_args = extra
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


def folio() -> int:
    """The `folio` console script. Installed, it first lays out the Folio folder it works in
    (rag.config.paths), saying what it copied there."""
    from rag.config import PROJECT_ROOT
    from rag.config.paths import is_checkout, set_up_home

    if not is_checkout():
        copied = set_up_home(PROJECT_ROOT)
        if copied:
            print(f"Set up a Folio folder in {PROJECT_ROOT}: {', '.join(copied)} (set "
                  "FOLIO_HOME to use another folder).", file=sys.stderr)
    return main(prog="folio")


if __name__ == "__main__":
    sys.exit(main())
