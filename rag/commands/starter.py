"""`eval starter`: write a starter question set generated from the book (rag.tuning.starter), to
review and then tune on with `eval questions`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag.commands.common import print_json, settings_from
from rag.config import PROJECT_ROOT, get_secret
from rag.errors import InputError
from rag.tuning.question_sets import save_question_set
from rag.tuning.starter import CLAUDE, DEFAULT_QUESTIONS, OFFLINE, generate_starter

PHRASINGS = ("auto", OFFLINE, CLAUDE)


def register(commands: argparse._SubParsersAction) -> None:
    starter = commands.add_parser("starter", help="generate a starter question set from the "
                                  "book (definitions, acronyms, numbers; out-of-scope probes)")
    starter.add_argument("--book", metavar="DIR|ID",
                         help="book folder (default: RAG_BOOK or data/book)")
    starter.add_argument("--out", metavar="FILE", type=Path, required=True,
                         help="where to write the set (.yaml or .yml)")
    starter.add_argument("--questions", type=int, default=DEFAULT_QUESTIONS,
                         help=f"how many questions, probes included (default {DEFAULT_QUESTIONS})")
    starter.add_argument("--phrase", choices=PHRASINGS, default="auto",
                         help="who phrases the questions: claude needs ANTHROPIC_API_KEY; auto "
                              "uses Claude when the key is set (default auto)")
    starter.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    starter.add_argument("--json", action="store_true")
    starter.set_defaults(func=run_starter)


def display_path(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def run_starter(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"{out}: a starter set is written as YAML (.yaml or .yml), which keeps "
                         "its provenance.")
    if out.exists() and not args.force:
        raise InputError(f"{out} already exists; pass --force to overwrite it, or pick another "
                         "--out.")
    settings = settings_from(args)
    phraser = None
    if args.phrase == CLAUDE or (args.phrase == "auto" and get_secret("ANTHROPIC_API_KEY")):
        from rag.providers.anthropic_llm import AnthropicLLM
        from rag.tuning.starter_claude import claude_phraser

        phraser = claude_phraser(AnthropicLLM(model=settings.llm_model),
                                 limit=args.questions * 2)
    starter = generate_starter(settings.book_dir, args.questions, phraser,
                               book_label=display_path(settings.book_dir))
    save_question_set(starter.questions, out, header=starter.header())
    for notice in starter.notices:
        print(f"notice: {notice}", file=sys.stderr)
    in_scope = sum(q.in_scope for q in starter.questions)
    if args.json:
        print_json({"out": str(out), **starter.header(), "questions": len(starter.questions),
                    "in_scope": in_scope, "notices": starter.notices})
        return 0
    print(f"wrote {len(starter.questions)} questions ({in_scope} from the book, "
          f"{len(starter.questions) - in_scope} out-of-scope probes; phrased {starter.generated})"
          f" to {out}")
    print("review them (wording, expected sections, key facts), then: python -m rag eval "
          f"questions {out} --book {display_path(settings.book_dir)}")
    return 0
