"""`ingest` and `search`."""

from __future__ import annotations

import argparse
from collections import Counter

from rag.answer.query_types import classify
from rag.book.parse import Book, parse_book
from rag.commands.common import add_book_args, print_json, settings_from, terminal_progress
from rag.errors import InputError
from rag.index.build import IngestSummary
from rag.index.load import build_index, load_index
from rag.providers.registry import get_embedder
from rag.retrieval.query import validate_query
from rag.retrieval.search import search_book, search_record

BOOK_SUFFIXES = (".md", ".mdx", ".pdf")
RUNTIME_NAMES = {"onnx": "ONNX Runtime", "torch": "PyTorch"}


def register(sub: argparse._SubParsersAction) -> None:
    ingest = sub.add_parser("ingest", help="read the book and build or update its index")
    add_book_args(ingest)
    ingest.add_argument("--rebuild", action="store_true", help="re-embed everything")
    ingest.add_argument("--strict", action="store_true",
                        help="exit 2 when IDs clash or files are skipped")
    ingest.add_argument("--report", action="store_true",
                        help="list, file by file, what was not read as text (images, raw HTML, "
                             "includes not found, ...) and which sections have derived anchors")
    ingest.add_argument("--json", action="store_true")
    ingest.set_defaults(func=run_ingest)

    search = sub.add_parser("search", help="list every candidate chunk with its scores")
    search.add_argument("query")
    add_book_args(search)
    search.add_argument("--top-k", type=int, dest="top_k")
    search.add_argument("--dense-weight", type=float, dest="w_dense")
    search.add_argument("--threshold", type=float)
    search.add_argument("--candidate-pool", type=int, dest="candidate_pool")
    search.add_argument("--json", action="store_true")
    search.set_defaults(func=run_search)


def check_strict(book: Book) -> None:
    """--strict: stop before anything is embedded when IDs clash or files cannot be read."""
    report = book.report
    problems = list(dict.fromkeys(
        report.duplicates + [f"{f['path']}: {f['reason']}; "
                             + ("this file was skipped" if f["path"].endswith(BOOK_SUFFIXES)
                                else "left out") for f in report.skipped_files]))
    if problems:
        raise InputError("--strict: nothing was indexed; fix these and run ingest again:\n  "
                         + "\n  ".join(problems))


def run_ingest(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if args.strict:
        check_strict(parse_book(settings.book_dir))
    try:
        summary = build_index(settings, rebuild=args.rebuild, progress=terminal_progress)
    finally:  # an error is printed on a line of its own, with no progress repeating after it
        terminal_progress.close()
    embedder = get_embedder(settings)
    runtime = getattr(embedder, "runtime_used", "")
    notices = list(getattr(embedder, "notices", ()))
    if args.json:
        data = summary.to_dict()
        print_json({**{k: data[k] for k in ("book", "files", "sections", "chunks", "embedded",
                                            "reused", "removed", "unstable_ids", "unstable_files",
                                            "skipped_files", "duplicates", "notes", "seconds",
                                            "renderer", "missed")},
                    "embedder_runtime": runtime, "notices": [n.to_dict() for n in notices]})
    else:
        print(f"{summary.book}: {summary.files} files, {summary.sections} sections, "
              f"{summary.chunks} chunks ({summary.embedded} embedded, {summary.reused} reused, "
              f"{summary.removed} removed) in {summary.seconds:.1f} s")
        for line in report_lines(summary, args.report):
            print(line)
        for item in summary.skipped_files:
            print(f"skipped {item['path']}: {item['reason']}")
        for line in summary.duplicates:
            print(f"duplicate: {line}")
        for line in summary.notes:
            print(f"note: {line}")
        if runtime:
            print(f"embedder: {embedder.model_id} through {RUNTIME_NAMES.get(runtime, runtime)}")
        for notice in notices:
            print(f"note: {notice.message}")
    return 0


def report_lines(summary: IngestSummary, full: bool) -> list[str]:
    """One line each on derived anchors and on what was not read as text; with --report, the
    files behind both."""
    lines = []
    missed: Counter[str] = Counter()
    for kinds in summary.missed.values():
        missed.update(kinds)
    if summary.unstable_ids:
        renderer = f"as {summary.renderer} does" if summary.renderer else "from their headings"
        lines.append(f"{summary.unstable_ids} sections have derived anchors (ids computed "
                     f"{renderer}; an explicit {{#id}} keeps a link stable when a heading "
                     f"changes) in {len(summary.unstable_files)} files"
                     + ("" if full else "; --report lists them"))
        if full:
            lines += [f"  derived: {name}" for name in summary.unstable_files]
    if missed:
        most = sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))
        lines.append("not read as text: " + ", ".join(f"{n} {kind}" for kind, n in most)
                     + ("" if full else " (--report: by file)"))
        if full:
            lines += [f"  {name}: " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
                      for name, kinds in sorted(summary.missed.items())]
    return lines


def run_search(args: argparse.Namespace) -> int:
    settings = settings_from(args, w_dense=args.w_dense, threshold=args.threshold,
                             top_k=args.top_k, candidate_pool=args.candidate_pool)
    index, _ = load_index(settings, progress=terminal_progress)
    query = validate_query(args.query)
    kind = classify(query)
    own_point = args.w_dense is None and args.threshold is None
    chosen = settings.retrieval_for(kind) if own_point else settings.retrieval
    result = search_book(index, query, chosen)
    s = result.settings
    if args.json:
        print_json(search_record(result, kind, settings.embedder))
        return 0
    for notice in result.notices:
        print(f"note: {notice.message}")
    reranked = s.rerank != "off"
    print(f"question type: {kind}" + (" (its own point)" if own_point and
                                       kind in settings.type_settings else ""))
    print(f"{'rank':>4} {'blended':>7} {'dense':>6} {'bm25':>6} {'terms':>6}"
          + (f" {'rerank':>6} {'was':>4}" if reranked else "") + "  section")
    for h in result.candidates[: max(s.top_k * 4, 20)]:
        mark = "*" if h.selected else " "
        extra = (f" {h.rerank:6.3f} {h.rank_before:>4}" if h.rerank is not None
                 else f" {'':>6} {'':>4}") if reranked else ""
        print(f"{h.rank:>4} {h.blended:7.3f} {h.dense:6.3f} {h.bm25:6.3f} {h.terms:6.3f}"
              f"{extra} {mark}{h.chunk.chapter_id}#{h.chunk.section_id}  {h.reason}")
    signals = ", ".join(f"{name} {w:g}" for name, w in s.signal_weights.items())
    print(f"{len(result.hits)} hits of {len(result.candidates)} candidates "
          f"(threshold {s.threshold}, * = selected)")
    if signals or reranked:
        print("blended = (1 - signal weights) x hybrid + weight x signal"
              + (f"; signals: {signals}" if signals else "")
              + (f"; re-ranked ({s.rerank}, weight {s.rerank_weight:g})" if reranked else ""))
    return 0
