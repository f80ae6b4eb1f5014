"""Vectors kept in files, each stored with the digest of the text it embeds.

A record is (digest, float16 vector): whichever run wrote it, and whatever else that run did, a
record is right for the text whose digest it carries. So an ingest appends each embedded batch to
a log as it goes (a kill keeps every finished batch, and a torn last record is ignored), a resumed
ingest embeds only texts with no record, and the published tables (row-aligned with
sentences.jsonl) carry the digests that prove the alignment when they are read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from rag.index.durable import replace_file

DIGEST_CHARS = 20  # hex: 80 bits, no collision expected below 10^12 texts
GATHER_ROWS = 4096  # rows copied at a time when a table is written: 3 MB at 384 dims


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def record_type(dim: int) -> np.dtype:
    return np.dtype([("digest", f"S{DIGEST_CHARS}"), ("vector", "<f2", (dim,))])


def read_table(path: Path, dim: int) -> np.ndarray | None:
    """The records of a published table, mapped rather than read; None when missing or not one."""
    try:
        table = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    return table if table.dtype == record_type(dim) and table.ndim == 1 else None


def write_table(path: Path, digests: list[str], known: KnownVectors) -> None:
    """A table of these digests' vectors, filled a block at a time (memory stays at one block
    whatever the book's size), written beside `path` and renamed over it once complete."""
    tmp = path.with_name(path.name + ".tmp")
    if not digests:  # a file mapping cannot be empty
        with open(tmp, "wb") as out_file:
            np.save(out_file, np.zeros(0, dtype=record_type(known.dim)))
        replace_file(tmp, path)
        return
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=record_type(known.dim),
                                    shape=(len(digests),))
    for start in range(0, len(digests), GATHER_ROWS):
        block = digests[start:start + GATHER_ROWS]
        out["digest"][start:start + len(block)] = [d.encode() for d in block]
        out["vector"][start:start + len(block)] = known.gather(block)
    out.flush()
    del out  # unmapped before the rename
    replace_file(tmp, path)


class VectorLog:
    """Records appended as they are embedded; what a killed ingest had finished."""

    def __init__(self, path: Path, dim: int) -> None:
        self.path, self.dim, self.type = path, dim, record_type(dim)

    def append(self, texts: list[str], vectors: np.ndarray) -> None:
        records = np.zeros(len(texts), dtype=self.type)
        records["digest"] = [text_digest(t).encode() for t in texts]
        records["vector"] = vectors
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as out:
            self._drop_torn_tail(out)
            out.write(records.tobytes())

    def _drop_torn_tail(self, out) -> None:
        """A record cut by a kill would shift every record after it: cut it off first."""
        size = out.seek(0, os.SEEK_END)
        if size % self.type.itemsize:
            out.truncate(size - size % self.type.itemsize)

    def records(self) -> np.ndarray:
        """Every whole record, mapped; empty when there is no log."""
        try:
            whole = self.path.stat().st_size // self.type.itemsize
        except OSError:
            whole = 0
        if not whole:
            return np.zeros(0, dtype=self.type)
        return np.memmap(self.path, dtype=self.type, mode="r", shape=(whole,))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class KnownVectors:
    """Where the vector of each known digest is: a row of one of the record arrays given."""

    def __init__(self, dim: int, sources: list[np.ndarray]) -> None:
        self.dim, self.sources = dim, sources
        self.where: dict[str, tuple[int, int]] = {}
        for number, records in enumerate(sources):
            for row, digest in enumerate(records["digest"].tolist()):
                self.where.setdefault(digest.decode(), (number, row))

    def __contains__(self, digest: str) -> bool:
        return digest in self.where

    def gather(self, digests: list[str]) -> np.ndarray:
        """float16 vectors of these digests, in order (each must be known)."""
        out = np.empty((len(digests), self.dim), dtype=np.float16)
        spots = [self.where[d] for d in digests]
        for number, records in enumerate(self.sources):
            mine = [i for i, (source, _) in enumerate(spots) if source == number]
            if mine:
                out[mine] = records["vector"][[spots[i][1] for i in mine]]
        return out
