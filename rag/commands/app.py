"""`app`: the Streamlit app (app.py and its pages), from the checkout or where an installed Folio
keeps it, run in the Folio folder so it reads that folder's settings and index."""

from __future__ import annotations

import argparse
import subprocess
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
    # Streamlit reads .streamlit/config.toml from the folder it runs in: the Folio folder's
    command = app_command(list(args.streamlit_args))
    try:
        return subprocess.call(command, cwd=PROJECT_ROOT)
    except KeyboardInterrupt:  # Ctrl-C stops Streamlit too; not an error
        return 0
