"""Logged text shown where it could act rather than be read: a terminal, where an ESC sequence in
an API question moves the cursor, recolours or retitles the window of whoever runs `rag audit
list`, and a spreadsheet, where a CSV cell starting with `=` is a formula (`=HYPERLINK(…)`).

Questions are stored exactly as asked (the audit is evidence); they are made harmless only on
the way out.
"""

from __future__ import annotations

from rag.audit.schema import COLUMNS

# C0 and C1 controls and DEL, and the format characters that reorder or hide text on screen
# (bidirectional overrides and isolates, zero-width spaces and joiners, the byte-order mark).
_UNSAFE = (*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x200B, 0x2010),
           *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF)
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_TERMINAL = {c: _NAMED.get(c) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")
             for c in _UNSAFE}
# JSON already escapes C0; the rest, left raw by ensure_ascii=False, become \uXXXX (valid JSON).
_JSON = {c: f"\\u{c:04x}" for c in _UNSAFE if c >= 0x7F}
# OWASP's list of what starts a formula (and its full-width forms, which LibreOffice reads too).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
TEXT_COLUMNS = tuple(name for name, kind in COLUMNS if kind == "VARCHAR")


def for_terminal(text: str) -> str:
    r"""Every control or reordering character shown as an escape (`\x1b`, `\n`, `\u202e`)."""
    return text.translate(_TERMINAL)


def json_for_terminal(text: str) -> str:
    """JSON text with the characters JSON leaves raw (DEL, C1, bidi) escaped as \\uXXXX."""
    return text.translate(_JSON)


def csv_cell_sql(column: str) -> str:
    """SQL for a text column in a CSV export: a cell a spreadsheet would run as a formula gets
    a leading apostrophe, which spreadsheets show as text and do not display."""
    starts = ", ".join("'" + s.replace("'", "''") + "'" for s in FORMULA_STARTS)
    return (f'CASE WHEN left("{column}", 1) IN ({starts}) THEN \'\'\'\' || "{column}" '
            f'ELSE "{column}" END')


def csv_text(value: object) -> object:
    """A text cell for a CSV a spreadsheet may open: one that would run as a formula gets a
    leading apostrophe (as csv_cell_sql does in SQL); anything else is returned as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
