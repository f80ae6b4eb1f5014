"""`ask`: one question through the whole pipeline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag.answer.citations import render_inline
from rag.answer.context import MODES
from rag.answer.pipeline import Pipeline
from rag.audit.store import AuditStore
from rag.commands.common import add_book_args, print_json, settings_from, terminal_progress
from rag.errors import InputError
from rag.index.load import load_index
from rag.notices import notice_from
from rag.providers.registry import get_llm
from rag.retrieval.query import validate_query


def register(sub: argparse._SubParsersAction) -> None:
    ask = sub.add_parser("ask", help="answer a question from the book, with citations")
    ask.add_argument("question")
    add_book_args(ask)
    ask.add_argument("--mode", default="full-book", choices=MODES)
    ask.add_argument("--selection-file", type=Path, metavar="FILE",
                     help="UTF-8 text file holding the selected passage")
    ask.add_argument("--llm", metavar="NAME",
                     help="who writes the answer: extractive (offline, the default), anthropic "
                          "(Claude) or openai (any OpenAI-compatible server: RAG_LLM_BASE_URL, "
                          "RAG_LLM_MODEL); default RAG_LLM or [answer] llm")
    ask.add_argument("--no-audit", action="store_true", help="do not write to the audit log")
    ask.add_argument("--json", action="store_true", help="print the whole Response")
    ask.set_defaults(func=run_ask)


def read_selection(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError as e:
        raise InputError(f"The selection file {path} does not exist.") from e
    except UnicodeDecodeError as e:
        raise InputError(f"The selection file {path} is not valid UTF-8 text "
                         f"(byte offset {e.start}); save it as UTF-8 and try again.") from e


def open_audit(settings, enabled: bool):
    if not enabled:
        return None
    return AuditStore(settings.audit_db)


def run_ask(args: argparse.Namespace) -> int:
    settings = settings_from(args, llm=args.llm)
    # bad input and a missing key fail here, before the embedder loads and the index is checked
    question = validate_query(args.question)
    selection = read_selection(args.selection_file)
    llm = get_llm(settings)
    index, _ = load_index(settings, progress=terminal_progress)
    audit = open_audit(settings, not args.no_audit)
    try:
        pipeline = Pipeline(index, settings, llm, audit)
        response = pipeline.answer(question, mode=args.mode, selection=selection,
                                   session_id="cli")
    finally:
        if audit is not None:
            audit.close()
    if args.json:
        print_json(response.to_dict())
    elif response.status == "error" and response.error_stage == "input":
        raise InputError(response.error_message)
    else:
        print_answer(response)
    if response.status == "error":
        return 2 if response.error_stage == "input" else 1
    return 0


def print_answer(response) -> None:
    meta = response.metadata
    if response.status == "error":
        print(f"error in {response.error_stage}: {response.error_message}", file=sys.stderr)
        return
    print(render_inline(response.answer, response.citations))
    print()
    label = meta.get("mode_label", "")
    if meta.get("fallback_reason"):
        label += f" (fallback: {meta['fallback_reason']})"
    c = response.confidence
    print(f"{label} · status {response.status} · confidence {c.score:.2f} ({c.level}) · "
          f"{meta['total_latency_ms']:.0f} ms")
    for citation in response.citations:
        print(f"  [{citation.marker}] {citation.section_title} -> {citation.url or '(selection)'}")
    for notice in meta.get("notices", []):
        print(f"  note: {notice_from(notice).message}")
