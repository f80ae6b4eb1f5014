"""A read-only copy of the embedded vector store, for a process that finds it held by another.

Qdrant's embedded store allows one process per folder. The app, `rag serve` and CLI commands
only read the index once it is built, so the second one opens a consistent copy instead (each
collection's SQLite file copied with SQLite's backup API, which is safe while the holder writes)
in a temporary folder removed at exit. The copy is as of its opening: the process that holds
the store is the one that re-indexes, and a process on a copy refuses to write to it.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import sqlite3
import tempfile
import time
from contextlib import closing
from pathlib import Path

from rag.errors import BookIndexError

LOG = logging.getLogger(__name__)


HELD = ("is in use by another Folio process", "the process that holds it")
READ_ONLY = ("is read-only", "a folder that can be written")


def open_copy(where: Path, reason: tuple[str, str] = HELD):
    """(QdrantClient over a fresh copy of `where`, the copy's folder). `reason`: why the store
    itself cannot be opened, and where re-indexing happens instead. Raises BookIndexError."""
    why, elsewhere = reason
    from qdrant_client import QdrantClient

    started = time.perf_counter()
    target = Path(tempfile.mkdtemp(prefix="folio-qdrant-copy-"))
    atexit.register(shutil.rmtree, target, True)
    try:
        if (where / "meta.json").is_file():
            shutil.copy2(where / "meta.json", target / "meta.json")
        for database in sorted(where.glob("collection/*/storage.sqlite")):
            copy = target / database.relative_to(where)
            copy.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as source, \
                    closing(sqlite3.connect(copy)) as destination:
                source.backup(destination)
        client = QdrantClient(path=str(target))
    except (OSError, sqlite3.Error, RuntimeError, ValueError) as e:
        shutil.rmtree(target, ignore_errors=True)
        raise BookIndexError(f"The index at {where} {why}, and a read-only copy of it could not "
                             f"be made ({e}).") from e
    LOG.warning("The index at %s %s: searching a read-only copy made now (%.1f s); re-indexing "
                "happens in %s.", where, why, time.perf_counter() - started, elsewhere)
    return client, target
