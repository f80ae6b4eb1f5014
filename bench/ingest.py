"""Ingest time with and without sentence vectors, measured in the same run (the floor).

    python bench/ingest.py [--book DIR] [--repeats N]

Each repeat builds the book from scratch into a fresh temp folder twice: once as before sentence
vectors (chunks + BM25 only), once as the app does now; prints wall time and the ratio, plus an
incremental re-ingest of the unchanged book.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401
from rag.book.parse import parse_book  # noqa: E402
from rag.index.build import sync_sections  # noqa: E402
from rag.index.vectors import open_store  # noqa: E402
from rag.providers.local_embedder import LocalEmbedder  # noqa: E402


def build(book, embedder, sentences: bool) -> tuple[float, float]:
    """(seconds from scratch, seconds to re-sync unchanged) into a fresh folder."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp))
        try:
            t0 = time.perf_counter()
            sync_sections(book.sections, book.book_id, book.content_hash, Path(tmp), embedder,
                          store, sentences=sentences)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            sync_sections(book.sections, book.book_id, book.content_hash, Path(tmp), embedder,
                          store, sentences=sentences)
            return first, time.perf_counter() - t0
        finally:
            store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", default=str(ROOT.parent / "shared" / "data" /
                                              "physical-ai-book"))
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    book = parse_book(Path(args.book))
    embedder = LocalEmbedder()
    embedder.embed_query("warm up")
    rows = {False: [], True: []}
    for _ in range(args.repeats):
        for sentences in (False, True):
            rows[sentences].append(build(book, embedder, sentences))
    before = statistics.median(r[0] for r in rows[False])
    after = statistics.median(r[0] for r in rows[True])
    print(f"{book.root}: {book.report.sections} sections")
    print(f"from scratch, chunks only (before):      {before:6.1f} s")
    print(f"from scratch, chunks + sentence vectors: {after:6.1f} s  ({after / before:.2f}x)")
    print(f"re-ingest unchanged, with sentences:     "
          f"{statistics.median(r[1] for r in rows[True]):6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
