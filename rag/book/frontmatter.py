"""YAML read with bounds, for chapter frontmatter and question sets.

A 392-byte frontmatter of nested aliases (`a1: &a1 [*a0, *a0, …]` seven levels deep) expands to
millions of strings: `rag ingest` ran 120 s and peaked at 12.2 GB on one. Neither a chapter nor a
question set has a use for anchors, so they are refused outright; nesting and string lengths are
capped while the document is parsed, before anything is built from it.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent

from rag.errors import InputError

MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_STRING_CHARS = 10_000
MAX_DEPTH = 20
SCALAR_KEYS = ("title", "id", "description", "module_id")  # used as text: one value each
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # as python-frontmatter uses


class BoundedYamlError(yaml.YAMLError):
    """A document refused for its shape (aliases, depth, size), with where it happened."""

    def __init__(self, problem: str, line: int) -> None:
        super().__init__(f"{problem} (line {line})")
        self.problem, self.line = problem, line


def _refuse_beyond_bounds(event: yaml.Event, depth: int) -> None:
    """Raise BoundedYamlError if this event breaks a bound; depth counts open collections."""
    line = event.start_mark.line + 1
    if isinstance(event, AliasEvent) or getattr(event, "anchor", None):
        raise BoundedYamlError("YAML anchors and aliases (&name, *name) are not allowed; "
                               "write each value out in full", line)
    if isinstance(event, ScalarEvent) and len(event.value) > MAX_STRING_CHARS:
        raise BoundedYamlError(f"a value has {len(event.value)} characters; the limit is "
                               f"{MAX_STRING_CHARS}", line)
    if depth > MAX_DEPTH:
        raise BoundedYamlError(f"lists or mappings nested deeper than {MAX_DEPTH} levels", line)


def check_yaml_bounds(text: str, loader: type = yaml.SafeLoader) -> None:
    """Raise BoundedYamlError for anchors, aliases, deep nesting or long strings.

    Walks the parser's event stream, one event at a time, so a bomb is refused before anything
    is built from it; syntax errors surface here in the loader's own wording (the C loader's
    for frontmatter, as python-frontmatter uses it).
    """
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        depth += isinstance(event, CollectionStartEvent) - isinstance(event, CollectionEndEvent)
        _refuse_beyond_bounds(event, depth)


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader applying the same bounds while it composes: one pass instead of two (a
    20,000-question set parses in 6 s; walking the events first added 4 s)."""

    _depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        opens = isinstance(event, CollectionStartEvent)
        _refuse_beyond_bounds(event, self._depth + opens)
        self._depth += opens
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= opens


def load_bounded(text: str, loader: type = _FAST_LOADER) -> Any:
    """yaml.load after check_yaml_bounds; raises yaml.YAMLError (BoundedYamlError for a bound)."""
    check_yaml_bounds(text, loader)
    return yaml.load(text, Loader=loader)  # noqa: S506 (safe loaders only)


def yaml_problem(error: Exception, first_line: int = 1) -> str:
    """A one-line description of a YAML error with the file line it points at."""
    if isinstance(error, BoundedYamlError):
        return f"{error.problem} (line {first_line + error.line - 1})"
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{problem} (line {first_line + mark.line})" if mark is not None else problem


def load_frontmatter(front: str, first_line: int) -> dict:
    """A chapter's frontmatter as a dict; InputError says what is wrong and on which line.

    first_line is the file line of the opening ---, as PyYAML counts from there.
    """
    size = len(front.encode("utf-8"))
    if size > MAX_FRONTMATTER_BYTES:
        raise InputError(f"frontmatter is {size} bytes; the limit is {MAX_FRONTMATTER_BYTES}")
    try:
        meta = load_bounded(front)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as e:
        raise InputError(f"malformed frontmatter: {yaml_problem(e, first_line)}") from e
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise InputError("malformed frontmatter: it must be key: value pairs, not a "
                         f"{type(meta).__name__}")
    for key in SCALAR_KEYS:
        if isinstance(meta.get(key), list | dict | set | tuple):
            raise InputError(f"malformed frontmatter: `{key}` must be a single value, not a "
                             f"{type(meta[key]).__name__}")
    return meta


def chapter_signals(meta: dict) -> tuple[dict, list[str]]:
    """The composite-signal fields a chapter's frontmatter may set, checked: `authority` a number
    from 0 to 1, `last_updated` a date (YAML date or ISO text). Returns the Section fields and,
    for a value that is not usable, why it was ignored."""
    out: dict = {"authority": None, "last_updated": None}
    problems: list[str] = []
    authority = meta.get("authority")
    if authority is not None:
        if isinstance(authority, (int, float)) and not isinstance(authority, bool) \
                and 0 <= authority <= 1:
            out["authority"] = float(authority)
        else:
            problems.append(f"authority {authority!r} is not a number from 0 to 1; ignored")
    updated = meta.get("last_updated")
    if updated is not None:
        try:
            out["last_updated"] = date.fromisoformat(str(updated)[:10]).isoformat()
        except ValueError:
            problems.append(f"last_updated {updated!r} is not a date (YYYY-MM-DD); ignored")
    return out, problems
