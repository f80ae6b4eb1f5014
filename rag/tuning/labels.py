"""Labels from the audit log: a question someone asked, marked by a reviewer with the section(s)
that answer it (and optionally a key fact), appended to a question set on disk.

The new question goes through the question-set validator like any other; a question the set
already asks is refused with the line that asks it. A YAML set gets the question appended to its
text, so its comments and layout stay as they were; when the text cannot simply be extended (a
CSV set, a flow-style list, keys after the list) the set is rewritten in the standard layout,
its provenance header kept. Either way the file is replaced atomically, and only after the new
text has been read back as the old set plus the new question.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.errors import InputError
from rag.tuning.metrics import match_mask
from rag.tuning.question_sets import (
    content_hash,
    item_lines,
    parse_question_text,
    read_header,
    save_question_set,
    write_atomically,
)
from rag.tuning.questions import Question, parse_yaml_questions

FROM_AUDIT_CATEGORY = "from_audit"
ITEM_RE = re.compile(r"^([ \t]*)-[ \t]", re.MULTILINE)


@dataclass(frozen=True)
class LabelResult:
    path: Path
    question: Question
    count: int  # questions in the set now
    created: bool  # the file did not exist before
    rewritten: bool  # the whole set was rewritten in the standard layout


def make_label(question: str, sections: Sequence[str], key_facts: Sequence[str], log_id: str,
               book_sections: Iterable[str], in_scope: bool = True,
               category: str = FROM_AUDIT_CATEGORY) -> Question:
    """The labelled question, validated as a question set validates it; every section must be
    one of this book's."""
    refs = set(book_sections)
    unknown = [s for s in sections if not any(match_mask((s,), ref) for ref in refs)]
    if unknown:
        raise InputError(f"{unknown[0]!r} is not a section of this book; pick the sections from "
                         "the list.")
    if in_scope and not sections:
        raise InputError("Pick the section(s) that answer the question, or mark it as out of "
                         "scope.")
    item = {"question": question, "expected_sections": list(sections), "in_scope": in_scope,
            "category": category, "from_audit": log_id}
    if key_facts:
        item["key_facts"] = list(key_facts)
    found = parse_yaml_questions(f"- {json.dumps(item, ensure_ascii=False)}\n", "The label")
    return found[0]


def append_label(path: Path, label: Question, header: dict | None = None) -> LabelResult:
    """Add `label` to the set at `path` (created, with `header`, when missing)."""
    path = Path(path)
    if not path.exists():
        save_question_set([label], path, header)
        return LabelResult(path, label, 1, True, False)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path.name} cannot be read ({e}); nothing was added.") from e
    existing = parse_question_text(text, path.name)
    key = " ".join(label.question.lower().split())
    for q in existing:
        if " ".join(q.question.lower().split()) == key:
            raise InputError(f"{path.name} already asks this question (line {q.line}); nothing "
                             "was added.")
    wanted = content_hash([*existing, label])
    if path.suffix.lower() in (".yaml", ".yml"):
        extended = appended_text(text, label)
        try:
            if extended and content_hash(parse_question_text(extended, path.name)) == wanted:
                write_atomically(path, extended)
                return LabelResult(path, label, len(existing) + 1, False, False)
        except InputError:
            pass  # the layout does not take a plain append: rewrite below
    save_question_set([*existing, label], path, read_header(text, path.name))
    return LabelResult(path, label, len(existing) + 1, False, True)


def appended_text(text: str, label: Question) -> str:
    """The YAML text with the label as one more item of its question list, indented like the
    list's items; "" when the text shows no block list to extend."""
    indents = [m.group(1) for m in ITEM_RE.finditer(text)]
    if not indents:
        return ""
    indent = min(indents, key=len)  # nested block lists sit deeper than the questions
    return text.rstrip("\n") + "\n" + "\n".join(item_lines(label, indent)) + "\n"


def new_set_header(book: str, today: dt.date | None = None) -> dict[str, str]:
    """Provenance of a set started from the audit log."""
    return {"created_from": "audit log labels", "date": (today or dt.date.today()).isoformat(),
            "book": book}
