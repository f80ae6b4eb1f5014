"""Opening the embedded (local-mode) Qdrant store: held by another process, damaged, or in a
folder this process cannot write, each with its own outcome."""

from __future__ import annotations

import errno
import logging
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from rag.errors import BookIndexError

LOG = logging.getLogger(__name__)
IN_USE = ("The index at {where} is in use by another Folio process (the app, `rag serve` or a CLI "
          "command), which is the one that can change it: stop it, use another --index DIR, or "
          "run a Qdrant server and set QDRANT_URL.")
READ_ONLY_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS)
READ_ONLY = ("The index folder {where} cannot be written ({error}), so Folio cannot build or "
             "update the book's index there. Make it writable, or choose a folder you can write "
             "with --index DIR (or RAG_INDEX_DIR); an index that is already built can still be "
             "searched from a read-only folder.")


def is_read_only(error: OSError) -> bool:
    return error.errno in READ_ONLY_ERRNOS


def read_only_error(where: Path, error: OSError) -> BookIndexError:
    return BookIndexError(READ_ONLY.format(where=where, error=error.strerror or error))


def open_local(where: Path, read_only: bool):
    """(client, the folder it is a copy of or "", why a copy refuses writes or ""). A store held
    by another process, or in a folder this process cannot write, is opened as a read-only copy
    when `read_only`, else refused with what to do."""
    from rag.index.snapshot import READ_ONLY as COPY_READ_ONLY
    from rag.index.snapshot import open_copy

    try:
        return _open_writable(where), "", ""
    except RuntimeError as e:  # qdrant_client: "Storage folder ... is already accessed by ..."
        if "already accessed" not in str(e):
            raise BookIndexError(f"Could not open the index at {where}: {e}") from e
        if not read_only:
            raise BookIndexError(IN_USE.format(where=where)) from e
        return open_copy(where)[0], str(where), ""
    except OSError as e:
        if not is_read_only(e):
            raise damaged_error(where, e) from e
        if not read_only or not where.is_dir():
            raise read_only_error(where.parent, e) from e
        refusal = READ_ONLY.format(where=where.parent, error=e.strerror or e)
        return open_copy(where, COPY_READ_ONLY)[0], str(where), refusal
    except BookIndexError:
        raise
    except Exception as e:  # a torn meta.json and the like: qdrant raises value errors
        raise damaged_error(where, e) from e


def damaged_error(where: Path, error: Exception) -> BookIndexError:
    return BookIndexError(f"Could not open the index at {where} ({error}); if its files are "
                          f"damaged, remove the folder {where} and run "
                          "`python -m rag ingest --rebuild`.")


def _open_writable(where: Path):
    """The embedded store; a collection whose file is damaged is removed and its manifest with
    it, so the next ingest (or `make run`) rebuilds it: vectors are derived from the book."""
    from qdrant_client import QdrantClient

    where.mkdir(parents=True, exist_ok=True)
    try:
        return QdrantClient(path=str(where))
    except sqlite3.DatabaseError as e:  # "database disk image is malformed", "not a database"
        damaged = _damaged_collections(where)
        advice = (f"The vector store at {where} is damaged ({e}); remove the folder "
                  f"{damaged[0] if damaged else where} and run `python -m rag ingest --rebuild`.")
        if not damaged:
            raise BookIndexError(advice) from e
        for folder in damaged:
            LOG.warning("removing damaged vector store %s (%s); it will be rebuilt", folder, e)
            shutil.rmtree(folder)
            # manifest.MANIFEST beside the collection's files: without it the index is rebuilt.
            (where.parent / folder.name / "manifest.json").unlink(missing_ok=True)
        try:
            return QdrantClient(path=str(where))
        except Exception as again:
            raise BookIndexError(advice) from again


def _damaged_collections(where: Path) -> list[Path]:
    """Collection folders whose SQLite file fails SQLite's own check (read-only, on failure)."""
    damaged = []
    for db in sorted(where.glob("collection/*/storage.sqlite")):
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
                healthy = con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        except sqlite3.DatabaseError:
            healthy = False
        if not healthy:
            damaged.append(db.parent)
    return damaged
