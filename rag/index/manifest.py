"""The manifest: what an index was built from, and whether its last ingest committed.

An ingest marks the manifest "writing" before it touches the vector store or a file, and writes
it "committed" only after every file is in place. So an ingest killed at any point leaves an index
that says it is stale (and is resumed by the next ingest, or `make run`), whatever the book
became since: before this, a kill mid-write followed by reverting the book's edit left vectors
of the discarded edit under a manifest that called the index fresh (issue 43).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rag.book.chunk import ChunkerSettings
from rag.errors import BookIndexError
from rag.index.durable import write_text
from rag.index.lexical import BM25S, QDRANT, lexical_files_present, lexical_signature
from rag.index.sentences import SENTENCE_VERSION
from rag.index.sparse import sparse_current
from rag.providers.base import Embedder

MANIFEST, CHUNKS_FILE = "manifest.json", "chunks.jsonl"
WRITING, COMMITTED = "writing", "committed"  # a manifest without "state" predates the marker
INTERRUPTED = ("an ingest stopped before it finished; the next ingest resumes it, embedding only "
               "what was not yet written")


def collection_name(book_id: str, embedder: Embedder) -> str:
    return f"{book_id}__{embedder.name}"


def collection_dir(index_dir: Path, collection: str) -> Path:
    return Path(index_dir) / collection


def read_manifest(directory: Path) -> dict | None:
    """The manifest, or None when it is missing or not one (torn, `[]`, fields of wrong types)."""
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    shapes = {"embedder": dict, "hashes": dict, "chunks": int, "state": str}
    if not isinstance(manifest, dict) or any(
            not isinstance(manifest.get(key, kind()), kind) for key, kind in shapes.items()):
        return None
    return manifest


def write_manifest(directory: Path, manifest: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    # default=str: YAML dates and the like in the chapters' frontmatter
    write_text(directory / MANIFEST, json.dumps(manifest, indent=1, default=str))


def mark_writing(directory: Path, manifest: dict) -> None:
    """Say the index is being changed, before anything of it is."""
    write_manifest(directory, {**manifest, "state": WRITING,
                               "writing_since": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                              time.gmtime())})


def commit_manifest(directory: Path, manifest: dict) -> None:
    """Say the index is whole: its files and vectors are those of `manifest`'s book."""
    manifest = {k: v for k, v in manifest.items() if k != "writing_since"}
    write_manifest(directory, {**manifest, "state": COMMITTED, "lexical": lexical_signature(),
                               "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def interrupted(manifest: dict) -> bool:
    return manifest.get("state") == WRITING


def index_problem(directory: Path, manifest: dict) -> str | None:
    """What makes the files beside a manifest unusable, or None; reads no JSON, so it is cheap
    enough for every freshness check (one pass over chunks.jsonl counting newlines)."""
    if interrupted(manifest):
        return INTERRUPTED
    path = directory / CHUNKS_FILE
    try:
        lines, last = 0, b"\n"
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                lines, last = lines + block.count(b"\n"), block[-1:]
    except OSError:
        return f"{CHUNKS_FILE} is missing or unreadable"
    if last != b"\n":
        return f"{CHUNKS_FILE} ends mid-line"
    if lines != manifest.get("chunks", 0):
        return f"{CHUNKS_FILE} has {lines} chunks, the manifest says {manifest.get('chunks', 0)}"
    if not lexical_files_present(directory / "bm25"):
        return "BM25 files are missing"
    return None


def incomplete_index_error(directory: Path, problem: str) -> BookIndexError:
    if problem == INTERRUPTED:
        return BookIndexError(f"The index in {directory} was being written when its ingest "
                              "stopped, so its vectors may not match its text; run `python -m "
                              "rag ingest` to finish it (only what was not yet written is "
                              "embedded).")
    return BookIndexError(f"The index in {directory} is incomplete ({problem}); rebuild it with "
                          "`python -m rag ingest --rebuild`.")


def content_status(book_id: str, content_hash: str, index_dir: Path, embedder: Embedder,
                   sentences: bool = True, lexical: str = BM25S) -> dict:
    """Whether what is indexed under `book_id` (a book, a BEIR corpus) matches this content,
    chunker and embedder; cheap, nothing is embedded."""
    directory = collection_dir(index_dir, collection_name(book_id, embedder))
    manifest = read_manifest(directory)
    if manifest is None:
        return {"exists": False, "fresh": False, "reason": "no index has been built yet"}
    problem = index_problem(directory, manifest)
    if problem:
        reason = problem if interrupted(manifest) else f"the index is incomplete ({problem})"
        return {"exists": True, "fresh": False, "reason": reason,
                "built_at": manifest.get("built_at", ""), "chunks": manifest.get("chunks", 0)}
    expected = ChunkerSettings(embedder.max_tokens).describe()
    reasons = [
        (manifest.get("embedder", {}).get("model_id") != embedder.model_id, "embedder changed"),
        (manifest.get("chunker") != expected, "chunker settings changed"),
        (manifest.get("lexical") != lexical_signature(), "BM25 tokenizer changed"),
        (manifest.get("book_hash") != content_hash, "the book changed since it was indexed"),
        (sentences and manifest.get("sentences") != SENTENCE_VERSION,
         "sentence vectors are missing or out of date"),
        (lexical == QDRANT and not sparse_current(manifest),
         "BM25 sparse vectors are missing or out of date"),
    ]
    stale = [text for bad, text in reasons if bad]
    return {"exists": True, "fresh": not stale, "reason": "; ".join(stale) or "up to date",
            "built_at": manifest.get("built_at", ""), "chunks": manifest.get("chunks", 0)}
