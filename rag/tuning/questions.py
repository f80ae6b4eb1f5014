"""Labelled question sets (YAML or CSV): parsed, validated with line numbers, checked against
the book's sections. An expected entry `chapter_id#section_id` names one section; a bare
`chapter_id` names a whole chapter. How a ranking is scored against them is in metrics.py."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag.book.frontmatter import BoundedYamlError, load_bounded
from rag.errors import InputError
from rag.tuning.key_facts import WORDING_SEPARATOR, wordings
from rag.tuning.metrics import match_mask

FIELDS = ("question", "expected_sections", "in_scope", "category")
OPTIONAL_FIELDS = ("key_facts", "id", "notes", "from_audit")
MAX_KEY_FACTS, MAX_KEY_FACT_CHARS, MAX_WORDINGS = 3, 120, 4
ENTRY_RE = re.compile(r"^[^\s#,;|]+(#[^\s#,;|]*)?$")
SPLIT_RE = re.compile(r"[\s,;|]+")
MAX_EXPECTED = 32  # entries are bits of an int64 mask in the sweep
MAX_QUESTION_CHARS = 1000
# The shipped sets hold 38-103 questions, ~250-300 bytes and 16 YAML events each. The limits
# bound parsing at any content: 5 MB of `- a` took 140 s and 892 MB when only the bytes were
# capped (1.25M values); now no set is parsed past MAX_YAML_EVENTS (~2 s with libyaml's
# parser, measured on this machine under load: 200k events 2.7 s).
MAX_SET_BYTES = 2_000_000  # 5,000 questions at 400 bytes
MAX_QUESTIONS = 5_000  # 50x the largest shipped set; a sweep over it takes minutes
MAX_YAML_EVENTS = 40 * MAX_QUESTIONS  # 16 per shipped question; room for long lists
MAX_NUMBER_DIGITS = 30  # int() of 4,300+ digits raises ValueError; no field needs 30
LOG_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")  # an audit log_id, as `from_audit` names it
TRUE_WORDS, FALSE_WORDS = ("true", "yes", "y", "1"), ("false", "no", "n", "0")


@dataclass(frozen=True)
class Question:
    question: str
    expected_sections: tuple[str, ...]
    in_scope: bool
    category: str = ""
    line: int = 0  # where it starts in its file, for messages
    key_facts: tuple[str, ...] = ()  # strings a correct answer must contain (see answer_check)
    from_audit: str = ""  # the audit log_id the question was labelled from, if any


class _SetLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's safe loader (8x the pure-Python one: 0.05 s against 0.41 s for the sample
    set) that counts the events check_yaml_bounds walks, remembers the line every mapping
    starts on, and refuses numbers no field can hold. Anchors, nesting and long strings are
    refused by check_yaml_bounds (`in_scope: *a8` expanded to a MemoryError)."""

    events = 0

    def get_event(self):  # called once per event by yaml.parse, i.e. check_yaml_bounds only
        event = super().get_event()
        self.events += 1
        if self.events > MAX_YAML_EVENTS:
            raise BoundedYamlError(f"more than {MAX_YAML_EVENTS:,} values; a question set "
                                   f"holds at most {MAX_QUESTIONS:,} questions",
                                   event.start_mark.line + 1)
        return event

    def construct_mapping(self, node, deep=False):
        mapping = super().construct_mapping(node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping

    def construct_yaml_int(self, node):
        digits = sum(c.isdigit() for c in node.value)
        if digits > MAX_NUMBER_DIGITS:
            raise BoundedYamlError(f"a number with {digits:,} digits; values are true/false, "
                                   "text or numbers of at most "
                                   f"{MAX_NUMBER_DIGITS} digits", node.start_mark.line + 1)
        return super().construct_yaml_int(node)


_SetLoader.add_constructor("tag:yaml.org,2002:int", _SetLoader.construct_yaml_int)


def load_set_yaml(text: str, source: str) -> Any:
    """A question set's YAML, bounded (size first, then values, nesting, anchors, numbers) and
    each mapping tagged with its `__line__`; InputError names the file and the line."""
    _check_size(text, source)
    try:
        return load_bounded(text, _SetLoader)
    except BoundedYamlError as e:
        raise InputError(f"{source}, line {e.line}: {e.problem}.") from e
    except yaml.YAMLError as e:
        mark, context = getattr(e, "problem_mark", None), getattr(e, "context_mark", None)
        # PyYAML places errors at end-of-stream one line past the text; name the last line.
        where = f", line {min(mark.line + 1, len(text.splitlines()) or 1)}" if mark else ""
        started = (f", in the {e.context.removeprefix('while parsing a ')} starting on line "
                   f"{context.line + 1}") if context and getattr(e, "context", None) else ""
        raise InputError(f"{source}{where}: not valid YAML "
                         f"({getattr(e, 'problem', None) or e}{started}).") from e


def load_questions(path: Path) -> list[Question]:
    """A question set from .yaml/.yml or .csv; errors name the file and the line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Question set {path} does not exist.")
    if path.stat().st_size > MAX_SET_BYTES:  # refused before it is read into memory
        raise InputError(f"{path}: the file is {path.stat().st_size:,} bytes; the limit is "
                         f"{MAX_SET_BYTES:,}. Split the question set into smaller files.")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text; save it as UTF-8 and try again.") from e
    if path.suffix.lower() in (".yaml", ".yml"):
        return parse_yaml_questions(text, str(path))
    if path.suffix.lower() == ".csv":
        return parse_csv_questions(text, str(path))
    raise InputError(f"{path}: question sets are .yaml, .yml or .csv files.")


def _check_size(text: str, source: str) -> None:
    size = len(text.encode("utf-8"))
    if size > MAX_SET_BYTES:
        raise InputError(f"{source}: the file is {size:,} bytes; the limit is "
                         f"{MAX_SET_BYTES:,}. Split the question set into smaller files.")


def _check_count(count: int, source: str) -> None:
    if count > MAX_QUESTIONS:
        raise InputError(f"{source}: {count:,} questions; the limit is {MAX_QUESTIONS:,}. "
                         "Split the question set into smaller files.")


def parse_yaml_questions(text: str, source: str = "questions.yaml") -> list[Question]:
    data = load_set_yaml(text, source)
    if isinstance(data, dict) and "questions" in data:
        data = data["questions"]
    if not isinstance(data, list):
        raise InputError(f"{source}: expected a list of questions (or a `questions:` key "
                         "holding one).")
    _check_count(len(data), source)
    rows = []
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise InputError(f"{source}: item {number} is not a mapping with a `question` key.")
        rows.append((item.pop("__line__", 0), item))
    return _validate_rows(rows, source)


def parse_csv_questions(text: str, source: str = "questions.csv") -> list[Question]:
    """Header row with at least `question`; expected sections separated by ; , | or spaces."""
    _check_size(text, source)
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "question" not in [f.strip() for f in reader.fieldnames]:
        raise InputError(f"{source}, line 1: the header must name the columns "
                         f"{', '.join(FIELDS)}.")
    rows = []
    try:
        for row in reader:
            if None in row:
                raise InputError(f"{source}, line {reader.line_num}: more values than header "
                                 "columns (quote values that contain commas).")
            cleaned = {k.strip(): (v or "").strip() for k, v in row.items()}
            if any(cleaned.values()):
                _check_count(len(rows) + 1, source)
                rows.append((reader.line_num, {k: v for k, v in cleaned.items() if v != ""}))
    except csv.Error as e:
        raise InputError(f"{source}, line {reader.line_num}: {e}.") from e
    return _validate_rows(rows, source)


def _validate_rows(rows: list[tuple[int, dict[str, Any]]], source: str) -> list[Question]:
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for line, raw in rows:
        question = _make_question(raw, f"{source}, line {line}", line)
        key = " ".join(question.question.lower().split())
        if key in seen:
            raise InputError(f"{source}, line {line}: repeats the question on line {seen[key]}.")
        seen[key] = line
        questions.append(question)
    if not questions:
        raise InputError(f"{source}: the question set is empty.")
    return questions


def _make_question(raw: dict[str, Any], where: str, line: int) -> Question:
    unknown = sorted(set(raw) - set(FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; the fields "
                         f"are {', '.join(FIELDS + OPTIONAL_FIELDS)}.")
    text = raw.get("question")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: `question` must be non-empty text.")
    if len(text.strip()) > MAX_QUESTION_CHARS:
        raise InputError(f"{where}: the question has {len(text.strip())} characters; the limit "
                         f"is {MAX_QUESTION_CHARS}.")
    expected = _parse_expected(raw.get("expected_sections"), where)
    in_scope = _parse_bool(raw.get("in_scope"), bool(expected), where)
    if in_scope and not expected:
        raise InputError(f"{where}: an in-scope question needs `expected_sections` "
                         "(or set `in_scope: false`).")
    if not in_scope and expected:
        raise InputError(f"{where}: an out-of-scope question cannot have expected sections.")
    category = raw.get("category") or ""
    key_facts = _parse_key_facts(raw.get("key_facts"), where)
    if key_facts and not in_scope:
        raise InputError(f"{where}: an out-of-scope question cannot have key facts.")
    from_audit = raw.get("from_audit")
    if from_audit is not None and not LOG_ID_RE.match(str(from_audit)):
        raise InputError(f"{where}: `from_audit` must be the log_id of an audited question.")
    return Question(text.strip(), expected, in_scope, str(category).strip(), line, key_facts,
                    str(from_audit or ""))


def _parse_key_facts(value: Any, where: str) -> tuple[str, ...]:
    """1-3 short strings (YAML list, or `;`-separated in CSV); absent means "not labelled".
    A fact may list up to MAX_WORDINGS wordings separated by " | " (any one counts)."""
    if value is None or value == "":
        return ()
    items = value.split(";") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise InputError(f"{where}: `key_facts` must be a list of short strings.")
    facts = tuple(dict.fromkeys(" ".join(i.split()) for i in items if i.strip()))
    if len(facts) > MAX_KEY_FACTS:
        raise InputError(f"{where}: at most {MAX_KEY_FACTS} key facts per question.")
    for fact in facts:
        said = wordings(fact)
        if len(said) < fact.count(WORDING_SEPARATOR) + 1:
            raise InputError(f"{where}: key fact {fact[:40]!r} has an empty wording; separate "
                             "the wordings of one fact with ' | '.")
        if len(said) > MAX_WORDINGS:
            raise InputError(f"{where}: key fact {fact[:40]!r}… has more than {MAX_WORDINGS} "
                             "wordings.")
        long = [w for w in said if len(w) > MAX_KEY_FACT_CHARS]
        if long:
            raise InputError(f"{where}: key fact {long[0][:40]!r}… is longer than "
                             f"{MAX_KEY_FACT_CHARS} characters; a key fact is a short phrase.")
    return facts


def _parse_expected(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = SPLIT_RE.split(value.strip()) if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise InputError(f"{where}: `expected_sections` must be a list of "
                         "`chapter_id#section_id` or `chapter_id` strings.")
    entries = tuple(dict.fromkeys(i.strip() for i in items if i.strip()))
    bad = [e for e in entries if not ENTRY_RE.match(e)]
    if bad:
        raise InputError(f"{where}: {bad[0]!r} is not `chapter_id#section_id` or `chapter_id`.")
    if len(entries) > MAX_EXPECTED:
        raise InputError(f"{where}: at most {MAX_EXPECTED} expected sections per question.")
    return entries


def _parse_bool(value: Any, default: bool, where: str) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in TRUE_WORDS:
        return True
    if str(value).strip().lower() in FALSE_WORDS:
        return False
    raise InputError(f"{where}: `in_scope` must be true or false, not {value!r}.")


def unknown_entries(questions: Iterable[Question], section_refs: Iterable[str]) -> list[str]:
    """Expected entries that match no section of the book (typos or renamed anchors)."""
    refs = set(section_refs)
    out = []
    for q in questions:
        for entry in q.expected_sections:
            if not any(match_mask((entry,), ref) for ref in refs):
                out.append(f"line {q.line}: {entry!r} matches no section of this book")
    return out
