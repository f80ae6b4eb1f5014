"""Question sets as the tuning page edits them: found on disk, uploaded, shown as a table, checked
and saved. Parsing and validation are rag.tuning.questions's; this module only moves sets between text,
tables and files, so an edited table gets the same line-numbered errors as a file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rag.config import PROJECT_ROOT
from rag.errors import InputError
from rag.tuning.questions import FIELDS, Question, parse_csv_questions, parse_yaml_questions

EVAL_DIR_ENV = "RAG_EVAL_DIR"
SUFFIXES = (".yaml", ".yml", ".csv")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}$")
TABLE_SOURCE = "Edited table"  # errors read "Edited table, line 7: …" where 7 is the row number


def eval_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where question sets live: data/eval, or $RAG_EVAL_DIR (tests, other books)."""
    env = os.environ if env is None else env
    return Path(env.get(EVAL_DIR_ENV) or PROJECT_ROOT / "data" / "eval")


def list_question_sets(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)


def decode_upload(data: bytes, name: str) -> str:
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
    data = [(q.question, q.expected_sections, q.in_scope, q.category) for q in questions]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(FIELDS))
    frame.index = pd.RangeIndex(1, len(frame) + 1)  # row numbers = the lines errors name
    frame["in_scope"] = frame["in_scope"].astype(object)
    return frame


def questions_frame(questions: Sequence[Question]) -> pd.DataFrame:
    """The editable table: expected sections as one comma-separated string."""
    return _frame([{"question": q.question, "expected_sections": ", ".join(q.expected_sections),
                    "in_scope": q.in_scope, "category": q.category} for q in questions])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in ("true", "yes", "y", "1") else False if text in (
        "false", "no", "n", "0") else None


def editable_frame(text: str, name: str) -> pd.DataFrame:
    """Best-effort table of a set that failed validation, so it can be fixed in the editor;
    InputError when the text is not even a list of rows."""
    if Path(name).suffix.lower() == ".csv":
        items = list(csv.DictReader(io.StringIO(text)))
    else:
        try:
            items = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InputError(f"{name} cannot be read as YAML ({e}).") from e
        if isinstance(items, dict):
            items = items.get("questions")
    if not isinstance(items, list) or not items:
        raise InputError(f"{name} holds no list of questions to edit.")
    rows = [{"question": _cell(i.get("question")),
             "expected_sections": _cell(i.get("expected_sections")),
             "in_scope": _flag(i.get("in_scope")) if i.get("in_scope") not in (None, "") else None,
             "category": _cell(i.get("category"))}
            for i in items if isinstance(i, dict)]
    return _frame(rows)


def _blank(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    return value is None or (not isinstance(value, list | tuple) and bool(pd.isna(value)))


def questions_from_frame(frame: pd.DataFrame, source: str = TABLE_SOURCE) -> list[Question]:
    """Validate an edited table with rag.tuning.questions's rules. Each row becomes a one-line YAML
    item placed on the line equal to its row label, so errors name the row the user sees."""
    labels = list(frame.index)
    by_label = all(pd.api.types.is_integer(x) and x >= 1 for x in labels) and \
        labels == sorted(set(labels))
    numbers = [int(x) for x in labels] if by_label else list(range(1, len(frame) + 1))
    lines = ["#"] * max(numbers, default=0)
    for number, (_, row) in zip(numbers, frame.iterrows(), strict=True):
        item = {k: row.get(k) for k in FIELDS if not _blank(row.get(k))}
        if "in_scope" in item:
            item["in_scope"] = bool(item["in_scope"])
        if item:
            lines[number - 1] = f"- {json.dumps(item, ensure_ascii=False, default=str)}"
    if not any(line.startswith("-") for line in lines):
        raise InputError(f"{source}: the question set is empty; add a row.")
    return parse_yaml_questions("\n".join(lines) + "\n", source)


def serialize_questions(questions: Sequence[Question], suffix: str) -> str:
    """YAML in the sample set's layout, or CSV with the standard header."""
    if suffix.lower() == ".csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(FIELDS)
        for q in questions:
            writer.writerow([q.question, "; ".join(q.expected_sections),
                             "true" if q.in_scope else "false", q.category])
        return out.getvalue()
    lines = ["questions:"]
    for q in questions:
        lines += [f"  - question: {json.dumps(q.question, ensure_ascii=False)}",
                  f"    expected_sections: {json.dumps(list(q.expected_sections))}",
                  f"    in_scope: {'true' if q.in_scope else 'false'}"]
        if q.category:
            lines.append(f"    category: {json.dumps(q.category, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def target_path(folder: Path, name: str) -> Path:
    """A file name typed by the user, checked to stay inside the question-set folder."""
    name = name.strip()
    if not NAME_RE.match(name) or Path(name).suffix.lower() not in SUFFIXES:
        raise InputError(f"{name!r} is not a usable file name: use letters, digits, - _ . and "
                         "end it in .yaml, .yml or .csv (e.g. my-questions.yaml).")
    return Path(folder) / name


def save_question_set(questions: Sequence[Question], path: Path) -> Path:
    """Write the set, after checking that the written text reads back as the same set."""
    path = Path(path)
    text = serialize_questions(questions, path.suffix)
    again = parse_question_text(text, path.name)
    if content_hash(again) != content_hash(questions):
        raise InputError(f"{path.name}: the set would not read back unchanged; nothing written.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
