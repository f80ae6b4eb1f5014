"""Ingest time per embedding runtime (ONNX Runtime, PyTorch), with and without sentence vectors,
measured in the same run so a busy machine slows every variant alike.

    python bench/ingest.py [--book DIR] [--repeats N] [--runtimes onnx,torch] [--app-only]

Each repeat builds the book from scratch into a fresh temp folder once per runtime and variant:
chunks + BM25 only (as before sentence vectors) and as the app does now (--app-only skips the
first); prints wall time, the ratios, and an incremental re-ingest of the unchanged book.
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

RUNTIME_NAMES = {"onnx": "ONNX Runtime", "torch": "PyTorch"}


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


def embedders(runtimes: list[str], cache: Path) -> dict[str, LocalEmbedder]:
    out = {}
    for runtime in runtimes:
        embedder = LocalEmbedder(runtime=runtime, cache_dir=cache)
        embedder.embed_query("warm up")  # load (and for ONNX export once) outside the timing
        if embedder.runtime_used != runtime:
            print(f"{runtime}: {embedder.notices[0].message}", file=sys.stderr)
        out[runtime] = embedder
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", default=str(ROOT.parent / "shared" / "data" /
                                              "physical-ai-book"))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--runtimes", default="onnx,torch",
                        help="comma-separated runtimes to compare (default onnx,torch)")
    parser.add_argument("--app-only", action="store_true",
                        help="only the app's ingest (chunks + sentence vectors)")
    args = parser.parse_args()
    runtimes = [r for r in args.runtimes.split(",") if r]
    if not runtimes or any(r not in RUNTIME_NAMES for r in runtimes):
        parser.error(f"--runtimes takes {', '.join(RUNTIME_NAMES)}, comma-separated")
    book = parse_book(Path(args.book))
    variants = (True,) if args.app_only else (False, True)
    rows: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="folio-onnx-") as cache:
        models = embedders(runtimes, Path(cache))
        for _ in range(args.repeats):
            for sentences in variants:
                for runtime, embedder in models.items():  # in turn: load hits them alike
                    rows.setdefault((runtime, sentences), []).append(
                        build(book, embedder, sentences))
    print(f"{book.root}: {book.report.sections} sections, {args.repeats} repeat(s)")
    first = {key: statistics.median(r[0] for r in runs) for key, runs in rows.items()}
    for runtime in runtimes:
        name = RUNTIME_NAMES[runtime]
        if (runtime, False) in first:
            print(f"{name:<13} from scratch, chunks only:        {first[runtime, False]:6.1f} s")
        line = f"{name:<13} from scratch, chunks + sentences: {first[runtime, True]:6.1f} s"
        if (runtime, False) in first:
            line += f"  ({first[runtime, True] / first[runtime, False]:.2f}x chunks only)"
        print(line)
        again = statistics.median(r[1] for r in rows[runtime, True])
        print(f"{name:<13} re-ingest unchanged:              {again:6.1f} s")
    if len(runtimes) == 2:
        a, b = runtimes
        print(f"{RUNTIME_NAMES[a]} / {RUNTIME_NAMES[b]}, app ingest: "
              f"{first[a, True] / first[b, True]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
