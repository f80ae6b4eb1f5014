"""End-to-end ingest of real books against the embedder alone, today's code against this code,
all in one run (a busy machine slows every variant alike).

    python bench/ingest.py --before /tmp/base-ingest [--after DIR] [--books d2l-book,...]
                           [--repeats N]

`--before` is a checkout of the code to compare with (e.g. `git worktree add /tmp/base-ingest
a43dd13`, with `.venv` linked); `--after` defaults to this checkout. For each book present in
../shared/data (a missing one is skipped with its reason), each variant runs in its own process,
from scratch into a fresh folder, one after the other:

- floor: the embedder alone (ONNX MiniLM, the --after tree) encoding exactly the texts an ingest
  from scratch embeds: every chunk text, then every sentence unit and question, each shortest
  first (the least padding), in the embedder's own batches. Timed around the embedding calls.
- before / after: `python -m rag ingest` in that tree, timed from process start to exit. A
  `before` that stops (older code on a book it cannot read) is shown as failed, with its error.

Prints seconds, words/s and peak RSS (wait4's ru_maxrss of that process), each ingest's time as
a multiple of the floor (issue 40's target: <= 1.3x, peak RSS <= 1.2 GB on d2l), and whether the
two indexes hold the same chunks, vectors and sentence table: retrieval is unchanged when they do.
The ONNX export is made once before any timing (RAG_ONNX_DIR shared by every process).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BOOKS = ("d2l-book", "physical-ai-book")
FLOOR = """
import json, sys, time
from pathlib import Path
from rag.book.chunk import ChunkerSettings, chunk_book, embed_text_for
from rag.book.parse import parse_book
from rag.config import load_settings
from rag.index.sentences import plan_sentences
from rag.providers.registry import get_embedder

book = parse_book(Path(sys.argv[1]))
embedder = get_embedder(load_settings(env={}))
embedder.embed_query("warm up")
chunks = chunk_book(book.sections, book.book_id, ChunkerSettings(embedder.max_tokens),
                    embedder.count_tokens_batch)
texts = sorted((embed_text_for(c.heading_path, c.text) for c in chunks), key=len)
units = plan_sentences(Path(sys.argv[2]), book.sections, embedder.dim).todo
started, cpu = time.perf_counter(), time.process_time()
embedder.embed_documents(texts)
embedder.embed_documents(units)
print(json.dumps({"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu,
                  "chunks": len(chunks),
                  "units": len(units), "sections": len(book.sections),
                  "files": book.report.files,
                  "words": sum(len(s.text.split()) for s in book.sections)}))
"""
EXPORT = """
from rag.config import load_settings
from rag.providers.registry import prepare_embedder
prepare_embedder(load_settings(env={}))
"""
COMPARE = """
import json, sys
from pathlib import Path
import numpy as np
from rag.index.vector_file import read_table
from rag.index.vectors import open_store

def collection(root):
    return next(p.parent for p in sorted(root.glob("*/manifest.json")))

def chunk_rows(folder):
    with open(folder / "chunks.jsonl", encoding="utf-8") as f:
        return [(r["chunk_id"], r["text"]) for r in map(json.loads, f)]

def sentences(folder):
    with open(folder / "sentences.jsonl", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    if (folder / "sentences.npy").is_file():  # the format before vectors carried digests
        return texts, np.load(folder / "sentences.npy").astype(np.float32)
    return texts, read_table(folder / "sentence_vectors.npy", 384)["vector"].astype(np.float32)

roots = [Path(a) for a in sys.argv[1:3]]
folders = [collection(r) for r in roots]
rows = [chunk_rows(f) for f in folders]
out = {"same_chunks": rows[0] == rows[1]}
if out["same_chunks"]:
    ids = [cid for cid, _ in rows[0]]
    got = [open_store(r).fetch_vectors(f.name, ids) for r, f in zip(roots, folders)]
    out["chunk_vector_diff"] = max(float(np.abs(got[0][i] - got[1][i]).max()) for i in ids)
tables = [sentences(f) for f in folders]
out["same_sentences"] = tables[0][0] == tables[1][0]
if out["same_sentences"]:
    out["sentence_vector_diff"] = float(np.abs(tables[0][1] - tables[1][1]).max())
print(json.dumps(out))
"""


Run = tuple[float, float, int]  # wall seconds, CPU seconds, peak RSS in bytes


def run(tree: Path, args: list[str], env: dict[str, str]) -> tuple[Run, str]:
    """((wall seconds, CPU seconds, peak RSS), stdout) of `python ARGS` in `tree`; raises on
    failure."""
    python = tree / ".venv" / "bin" / "python"
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen([str(python if python.exists() else sys.executable), *args],
                                 cwd=tree, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
        seconds = time.perf_counter() - started
        child.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if code:
            raise RuntimeError(f"{' '.join(args[:3])} in {tree} failed ({code}): "
                               f"{err.read()[-1500:]}")
        return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024), out.read()


def measure(book: Path, trees: dict[str, Path], env: dict[str, str], work: Path, repeats: int
            ) -> tuple[dict, dict[str, list[Run]], dict]:
    """The floor's figures, each variant's runs and the comparison of the two indexes."""
    runs: dict[str, list[Run]] = {name: [] for name in ("floor", *trees)}
    facts: dict = {}
    failed: dict[str, str] = {}  # a variant that stopped: its last line of error
    for repeat in range(repeats):
        empty = work / f"empty-{repeat}"
        empty.mkdir()
        (_, _, rss), out = run(trees["after"], ["-c", FLOOR, str(book), str(empty)], env)
        facts = json.loads(out)
        runs["floor"].append((facts["seconds"], facts["cpu"], rss))
        for name, tree in trees.items():
            index = work / f"{name}-{repeat}"
            try:
                measured, _ = run(tree, ["-m", "rag", "ingest", "--book", str(book), "--index",
                                         str(index), "--json"], env)
            except RuntimeError as failed_run:  # older code may not read every book
                if name == "after":
                    raise
                failed[name] = str(failed_run).strip().splitlines()[-1]
                continue
            runs[name].append(measured)
    facts["failed"] = failed
    if failed:
        return facts, {k: v for k, v in runs.items() if v}, {}
    _, out = run(trees["after"], ["-c", COMPARE, str(work / "before-0"),
                                     str(work / "after-0")], env)
    return facts, runs, json.loads(out)


def report(book: Path, facts: dict, runs: dict[str, list[Run]], same: dict,
           labels: dict[str, str]) -> None:
    """Wall time and words/s as a user sees them; CPU time and its ratio to the floor's, which
    a machine shared with other work disturbs less."""
    words = facts["words"]
    print(f"\n{book.name}: {words:,} words, {facts['files']} files, {facts['sections']:,} "
          f"sections, {facts['chunks']:,} chunks, {facts['units']:,} sentence texts")
    print(f"{'':<26}{'seconds':>9}{'words/s':>9}{'x floor':>9}{'CPU s':>9}{'x floor':>9}"
          f"{'peak RSS':>10}")
    floor = [statistics.median(r[i] for r in runs["floor"]) for i in (0, 1)]
    for name, measured in runs.items():
        wall, cpu = (statistics.median(r[i] for r in measured) for i in (0, 1))
        rss = max(r[2] for r in measured)
        print(f"{labels[name]:<26}{wall:>9.1f}{words / wall:>9.0f}{wall / floor[0]:>9.2f}"
              f"{cpu:>9.1f}{cpu / floor[1]:>9.2f}{rss / 2**20:>7.0f} MB")
    for name, why in facts["failed"].items():
        print(f"{labels[name]:<26} failed: {why}")
    if not same:
        return
    chunks = "identical" if same["same_chunks"] else "DIFFERENT"
    sentences = "identical" if same["same_sentences"] else "DIFFERENT"
    print(f"before vs after: chunks {chunks}"
          + (f" (vectors max |diff| {same['chunk_vector_diff']:.1e})" if same["same_chunks"]
             else "")
          + f"; sentence table {sentences}"
          + (f" (max |diff| {same['sentence_vector_diff']:.1e}, float16)"
             if same["same_sentences"] else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True,
                        help="checkout of the code to compare with (a git worktree)")
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--books", default=",".join(BOOKS))
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    labels = {"floor": "embedder alone (floor)", "before": f"before ({trees['before'].name})",
              "after": f"after ({trees['after'].name})"}
    with tempfile.TemporaryDirectory(prefix="folio-bench-ingest-") as tmp:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAG_ONNX_DIR": str(Path(tmp) / "onnx")}
        env = {k: v for k, v in env.items() if k not in ("RAG_INDEX_DIR", "RAG_BOOK")}
        (wall, _, rss), _ = run(trees["after"], ["-c", EXPORT], env)
        print(f"ONNX export of MiniLM, once per machine and outside every figure below: "
              f"{wall:.0f} s, peak RSS {rss / 2**20:.0f} MB (PyTorch loads the weights)")
        for name in args.books.split(","):
            book = DATA / name
            if not book.is_dir():
                print(f"\n{name}: skipped, {book} is absent")
                continue
            work = Path(tmp) / name
            work.mkdir()
            report(book, *measure(book, trees, env, work, max(args.repeats, 1)), labels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
