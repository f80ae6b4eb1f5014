"""The console's first layer: is this one read-only statement over the audit tables, and if not,
why not. Words are checked in the code only: string literals, quoted identifiers and comments
are taken out first, so `LIKE '%read_csv(%'` is a read and `"read_csv"(…)` is still a function.
"""

from __future__ import annotations

import re

import duckdb

from rag.errors import AuditError

ALLOWED = "SELECT, WITH, DESCRIBE, SUMMARIZE, SHOW, PIVOT, UNPIVOT or EXPLAIN"
_WHY = {
    "ATTACH": "ATTACH and DETACH are refused; the console reads the audit tables only.",
    "COPY": "COPY and EXPORT are refused; use `python -m rag audit export` to write files.",
    "LOAD": "INSTALL and LOAD are refused; the console cannot add extensions.",
    "SET": "SET, RESET, USE and PRAGMA are refused; the console's settings are fixed.",
}
_WHY.update(DETACH=_WHY["ATTACH"], EXPORT=_WHY["COPY"], PRAGMA=_WHY["SET"],
            VARIABLE_SET=_WHY["SET"])
_FILE_FUNCTION = re.compile(
    r"\b(read_\w+|\w+_scan|parquet_\w+|glob|sniff_csv|iceberg_\w+|delta_\w+|query|query_table"
    r"|sqlite_\w+|postgres_\w+|mysql_\w+|load_\w+)\s*\(", re.IGNORECASE)
# Catalog functions and views that show server paths (database files, allowed paths, secrets).
_SERVER_INFO = re.compile(r"\b(duckdb_\w+|pragma_\w+|current_setting|which_secret)\b",
                          re.IGNORECASE)
_STRING_AS_TABLE = re.compile(r"\b(from|join)\s+'", re.IGNORECASE)
_PIVOT = re.compile(r"\b(un)?pivot\b", re.IGNORECASE)
_EXPLAIN = re.compile(r"^\s*explain\s+(analyze\s+)?(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_DOLLAR_TAG = re.compile(r"\$(\w*)\$")
_NO_FILES = ("The console reads the audit tables only; {what} is refused. Query book_logs, "
             "audit_logs, audit_archive or audit_all instead.")
EMPTY = f"the query is empty or only a comment. Type a SELECT statement (or {ALLOWED})."


def refuse(message: str) -> AuditError:
    return AuditError(f"Query refused: {message}")


def code_only(sql: str) -> str:
    """sql with each string literal as '', each quoted identifier as its word, comments as ' '."""
    out, i, n = [], 0, len(sql)
    while i < n:
        c, pair = sql[i], sql[i:i + 2]
        if pair == "--":
            i = _find(sql, "\n", i)
            out.append(" ")
        elif pair == "/*":
            i = _find(sql, "*/", i + 2) + 2
            out.append(" ")
        elif c == "'":
            escaped = i > 0 and sql[i - 1] in "eE" and (i < 2 or not sql[i - 2].isalnum())
            i = _end_of_quoted(sql, i, "'", backslash=escaped)
            out.append("''")
        elif c == '"':
            end = _end_of_quoted(sql, i, '"', backslash=False)
            out.append(re.sub(r"\W", "_", sql[i + 1:end - 1].replace('""', '"')) or "_")
            i = end
        elif (tag := _DOLLAR_TAG.match(sql, i)) and (i == 0 or not sql[i - 1].isalnum()):
            i = _find(sql, tag[0], tag.end()) + len(tag[0])
            out.append("''")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _find(sql: str, token: str, start: int) -> int:
    found = sql.find(token, start)
    return len(sql) if found < 0 else found


def _end_of_quoted(sql: str, start: int, quote: str, backslash: bool) -> int:
    """Index just past the closing quote ('' or "" inside is an escaped quote)."""
    i = start + 1
    while i < len(sql):
        if backslash and sql[i] == "\\":
            i += 2
        elif sql[i] == quote:
            if sql[i + 1:i + 2] != quote:
                return i + 1
            i += 2
        else:
            i += 1
    return len(sql)


def check_statement(sql: str) -> None:
    """Raise AuditError with the reason unless sql is one read-only statement over the tables."""
    code = code_only(sql or "")
    if not code.strip(" \t\r\n;"):
        raise refuse(EMPTY)
    parser = duckdb.connect(":memory:")
    try:
        statements = parser.extract_statements(sql)
        if not statements:
            raise refuse(EMPTY)
        if len(statements) != 1:
            raise refuse(f"the console runs exactly one statement; this has {len(statements)}."
                          " Remove the extra ';' and run each query separately.")
        _check_kind(parser, statements[0].type.name, sql, code)
    except duckdb.ParserException as e:
        raise AuditError(f"The query could not be parsed: {str(e).splitlines()[0]}") from e
    finally:
        parser.close()
    _check_words(code)


def _check_kind(parser: duckdb.DuckDBPyConnection, kind: str, sql: str, code: str) -> None:
    if kind == "EXPLAIN":
        inner = _EXPLAIN.match(sql)
        kinds = [s.type.name for s in parser.extract_statements(inner["rest"])] if inner else []
        if kinds not in (["SELECT"], ["MULTI"]) or (kinds == ["MULTI"] and not _PIVOT.search(code)):
            raise refuse("EXPLAIN is allowed for SELECT queries only.")
    elif kind == "MULTI" and _PIVOT.search(code):
        return  # PIVOT without an IN list: DuckDB reads the distinct values first; still a read
    elif kind != "SELECT":
        raise refuse(_WHY.get(kind, f"{kind} statements are refused; the console is read-only. "
                                    f"Use {ALLOWED}."))


def _check_words(code: str) -> None:
    if match := _FILE_FUNCTION.search(code):
        raise refuse(_NO_FILES.format(what=f"{match[1]}() (file, URL or dynamic-SQL access)"))
    if _STRING_AS_TABLE.search(code):
        raise refuse(_NO_FILES.format(what="reading a file named in quotes"))
    if match := _SERVER_INFO.search(code):
        raise refuse(f"{match[1]} is refused: DuckDB's catalog functions and settings (duckdb_*, "
                     f"pragma_*, current_setting) show server paths. Use DESCRIBE audit_logs or "
                     f"SHOW TABLES to see the tables.")
