"""The tuning page's question-set table: a set shown as an editable frame, a broken file opened
best-effort so it can be fixed, and an edited frame validated with rag.tuning.questions's rules
(errors name the row the user sees)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rag.errors import InputError
from rag.tuning.questions import FIELDS, Question, load_set_yaml, parse_yaml_questions

COLUMNS = (*FIELDS, "key_facts")  # key facts edited as one "; "-separated cell
TABLE_SOURCE = "Edited table"  # errors read "Edited table, line 7: …" where 7 is the row number


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.index = pd.RangeIndex(1, len(frame) + 1)  # row numbers = the lines errors name
    frame["in_scope"] = frame["in_scope"].astype(object)
    return frame


def questions_frame(questions: Sequence[Question]) -> pd.DataFrame:
    """The editable table: expected sections as one comma-separated string."""
    return _frame([{"question": q.question, "expected_sections": ", ".join(q.expected_sections),
                    "in_scope": q.in_scope, "category": q.category,
                    "key_facts": "; ".join(q.key_facts)} for q in questions])


def _cell(value: Any, separator: str = ", ") -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return separator.join(str(v) for v in value)
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
        items = load_set_yaml(text, name)  # bounded as a set is: a broken file may be a bomb
        if isinstance(items, dict):
            items = items.get("questions")
    if not isinstance(items, list) or not items:
        raise InputError(f"{name} holds no list of questions to edit.")
    rows = [{"question": _cell(i.get("question")),
             "expected_sections": _cell(i.get("expected_sections")),
             "in_scope": _flag(i.get("in_scope")) if i.get("in_scope") not in (None, "") else None,
             "category": _cell(i.get("category")),
             "key_facts": _cell(i.get("key_facts"), "; ")}
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
        item = {k: row.get(k) for k in COLUMNS if not _blank(row.get(k))}
        if "in_scope" in item:
            item["in_scope"] = bool(item["in_scope"])
        if "key_facts" in item:
            item["key_facts"] = [f.strip() for f in str(item["key_facts"]).split(";") if f.strip()]
        if item:
            lines[number - 1] = f"- {json.dumps(item, ensure_ascii=False, default=str)}"
    if not any(line.startswith("-") for line in lines):
        raise InputError(f"{source}: the question set is empty; add a row.")
    return parse_yaml_questions("\n".join(lines) + "\n", source)
