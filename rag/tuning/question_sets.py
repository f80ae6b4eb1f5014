"""Question sets on disk: found in the question-set folder, decoded from an upload, written back
(checked to read back as the same set). Parsing and validation are rag.tuning.questions's."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rag.config import PROJECT_ROOT
from rag.errors import InputError
from rag.tuning.metrics import match_mask
from rag.tuning.questions import (
    FIELDS,
    MAX_SET_BYTES,
    Question,
    load_set_yaml,
    parse_csv_questions,
    parse_yaml_questions,
)

EVAL_DIR_ENV = "RAG_EVAL_DIR"
SUFFIXES = (".yaml", ".yml", ".csv")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}$")


def eval_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where question sets live: data/eval, or $RAG_EVAL_DIR (tests, other books)."""
    env = os.environ if env is None else env
    return Path(env.get(EVAL_DIR_ENV) or PROJECT_ROOT / "data" / "eval")


def list_question_sets(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)


def best_set_for(paths: Sequence[Path], section_refs: Iterable[str]) -> Path | None:
    """The set whose expected entries match most of this book's sections (a folder may hold
    sets for several books); None when none matches: another book's set is no default."""
    refs = set(section_refs)
    best, best_hits = None, 0
    for path in paths:
        try:
            questions = parse_question_text(read_set_file(path), path.name)
        except InputError:
            continue
        entries = [e for q in questions for e in q.expected_sections]
        hits = sum(1 for e in entries if any(match_mask((e,), r) for r in refs))
        if hits > best_hits:
            best, best_hits = path, hits
    return best


def read_set_file(path: Path) -> str:
    """A set file's text, its size checked before a byte is read."""
    try:
        size = path.stat().st_size
        if size > MAX_SET_BYTES:
            raise InputError(f"{path.name}: the file is {size:,} bytes; the limit is "
                             f"{MAX_SET_BYTES:,}. Split the question set into smaller files.")
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"{path.name} cannot be read ({e.strerror}).") from e
    return decode_upload(data, path.name)


def decode_upload(data: bytes, name: str) -> str:
    if len(data) > MAX_SET_BYTES:  # refused before it is decoded, let alone parsed
        raise InputError(f"{name}: the file is {len(data):,} bytes; the limit is "
                         f"{MAX_SET_BYTES:,}. Split the question set into smaller files.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{name} is not UTF-8 text; save it as UTF-8 and upload it again.") from e


def parse_question_text(text: str, name: str) -> list[Question]:
    """A set from a file's text; the suffix of `name` picks YAML or CSV."""
    suffix = Path(name).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return parse_yaml_questions(text, name)
    if suffix == ".csv":
        return parse_csv_questions(text, name)
    raise InputError(f"{name}: question sets are .yaml, .yml or .csv files.")


def content_hash(questions: Sequence[Question]) -> str:
    """Identifies a set by what it asks and expects (not by file name, order of keys or lines)."""
    data = [(q.question, q.expected_sections, q.in_scope, q.category, q.key_facts)
            + ((q.from_audit,) if q.from_audit else ()) for q in questions]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]


def serialize_questions(questions: Sequence[Question], suffix: str,
                        header: Mapping[str, Any] | None = None) -> str:
    """YAML in the sample set's layout (after the `header` keys, e.g. a generated set's
    provenance), or CSV with the standard header (CSV has no place for `header`)."""
    if suffix.lower() == ".csv":
        audit = any(q.from_audit for q in questions)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow((*FIELDS, "key_facts", *(("from_audit",) if audit else ())))
        for q in questions:
            writer.writerow([q.question, "; ".join(q.expected_sections),
                             "true" if q.in_scope else "false", q.category,
                             "; ".join(q.key_facts), *((q.from_audit,) if audit else ())])
        return out.getvalue()
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}"
             for key, value in (header or {}).items() if key != "questions"]
    lines.append("questions:")
    for q in questions:
        lines += item_lines(q, "  ")
    return "\n".join(lines) + "\n"


def item_lines(q: Question, indent: str) -> list[str]:
    """One question as a YAML list item, indented as the list it joins."""
    lines = [f"{indent}- question: {json.dumps(q.question, ensure_ascii=False)}",
             f"{indent}  expected_sections: {json.dumps(list(q.expected_sections))}",
             f"{indent}  in_scope: {'true' if q.in_scope else 'false'}"]
    if q.category:
        lines.append(f"{indent}  category: {json.dumps(q.category, ensure_ascii=False)}")
    if q.key_facts:
        lines.append(f"{indent}  key_facts: {json.dumps(list(q.key_facts), ensure_ascii=False)}")
    if q.from_audit:
        lines.append(f"{indent}  from_audit: {json.dumps(q.from_audit)}")
    return lines


def read_header(text: str, name: str) -> dict[str, Any]:
    """The scalar top-level keys of a YAML set beside `questions` (its provenance: `generated`,
    `date`, `book`, ...); {} for CSV, a bare list, or text that does not parse."""
    if Path(name).suffix.lower() not in (".yaml", ".yml"):
        return {}
    try:
        data = load_set_yaml(text, name)
    except InputError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items()
            if k not in ("questions", "__line__") and isinstance(v, str | int | float | bool)}


def target_path(folder: Path, name: str) -> Path:
    """A file name typed by the user, checked to stay inside the question-set folder."""
    name = name.strip()
    if not NAME_RE.match(name) or Path(name).suffix.lower() not in SUFFIXES:
        raise InputError(f"{name!r} is not a usable file name: use letters, digits, - _ . and "
                         "end it in .yaml, .yml or .csv (e.g. my-questions.yaml).")
    return Path(folder) / name


def save_question_set(questions: Sequence[Question], path: Path,
                      header: Mapping[str, Any] | None = None) -> Path:
    """Write the set (with its `header` keys, in YAML), after checking that the written text
    reads back as the same set."""
    path = Path(path)
    text = serialize_questions(questions, path.suffix, header)
    again = parse_question_text(text, path.name)
    if content_hash(again) != content_hash(questions):
        raise InputError(f"{path.name}: the set would not read back unchanged; nothing written.")
    write_atomically(path, text)
    return path


def write_atomically(path: Path, text: str) -> None:
    """A reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
