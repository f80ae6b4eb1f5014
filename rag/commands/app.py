"""`app`: the Streamlit app (app.py and its pages), from the checkout or where an installed Folio
keeps it, run in the Folio folder so it reads that folder's settings and index."""

from __future__ import annotations

import argparse
import os
import sys

from rag.config import PROJECT_ROOT
from rag.config.paths import app_root
from rag.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    app = sub.add_parser("app", help="start the app in the browser (Streamlit); extra options "
                                     "go to `streamlit run`, e.g. --server.port 8502")
    app.set_defaults(func=run_app)


def app_command(extra: list[str]) -> list[str]:
    script = app_root() / "app.py"
    if not script.is_file():
        raise ConfigError(f"The app is missing from this installation ({script}); reinstall "
                          "Folio with `pip install .` from its source folder.")
    return [sys.executable, "-m", "streamlit", "run", str(script), *extra]


def run_app(args: argparse.Namespace) -> int:
    """Become `streamlit run` (exec, same process): a SIGTERM from a service manager or a test,
    or Ctrl-C, reaches Streamlit itself; as a child it outlived a terminated `folio app`."""
    command = app_command(list(args.streamlit_args))
    os.chdir(PROJECT_ROOT)  # Streamlit reads .streamlit/config.toml from the folder it runs in
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)
    return 0  # not reached
