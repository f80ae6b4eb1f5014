"""Where Folio's files are. A source checkout (git clone, `make run`, `pip install -e .`) keeps
everything in the repository. An installed Folio (`pip install .`) keeps its code in the
environment and the app's own files (app.py, pages/, the sample book, settings) under
share/folio there; it works in a Folio folder of the user's, FOLIO_HOME or else the working
folder, where `folio` lays out what it needs the first time (set_up_home), so that settings,
indexes, the audit log and secrets sit where the user keeps them, as they do in a checkout."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_ROOT = Path(sys.prefix) / "share" / "folio"  # pyproject.toml's data-files
# what a Folio folder needs from what ships; data/index and the audit log are made on use
SKELETON = ("data/settings.toml", "data/book", "data/eval", ".streamlit/config.toml")


def is_checkout(root: Path = SOURCE_ROOT) -> bool:
    return (root / "pyproject.toml").is_file() and (root / "app.py").is_file()


def project_root(env: Mapping[str, str] | None = None) -> Path:
    """The folder data/ and .streamlit/ are read from and written to."""
    if is_checkout():
        return SOURCE_ROOT
    env = os.environ if env is None else env
    return Path(env.get("FOLIO_HOME") or Path.cwd()).expanduser().resolve()


def app_root() -> Path:
    """The folder app.py and pages/ run from."""
    return SOURCE_ROOT if is_checkout() else SHIPPED_ROOT


def set_up_home(home: Path, shipped: Path = SHIPPED_ROOT) -> list[str]:
    """Copy what `home` lacks of SKELETON from `shipped`; the paths copied. Nothing that is
    there is touched, so a user's settings and book are never overwritten."""
    copied = []
    for name in SKELETON:
        source, target = shipped / name, home / name
        if target.exists() or not source.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)
        copied.append(name)
    return copied


def same_folder(a: Path, b: Path) -> bool:
    return a.expanduser().resolve() == b.expanduser().resolve()
