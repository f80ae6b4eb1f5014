"""Replacing a file so that a crash leaves the old one or the new one, never part of either."""

from __future__ import annotations

import os
from pathlib import Path


def replace_file(tmp: Path, final: Path) -> None:
    """Rename a fully written `tmp` over `final`, its bytes on disk first and the rename after:
    a rename alone survives a killed process, not a power cut."""
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    tmp.replace(final)
    sync_folder(final.parent)


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    replace_file(tmp, path)


def sync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
