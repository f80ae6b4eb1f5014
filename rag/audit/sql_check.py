"""The console's first layer: is this one read-only statement over the audit tables, and if not,
why not.

Words are checked on DuckDB's own tokens (`duckdb.tokenize`, its parser's scanner), so what is a
string literal, a quoted identifier or a comment is decided exactly as DuckDB will read it:
`LIKE '%read_csv(%'` is a read, `"read_csv"(…)` is still a function, and a nested
`/* /* */ read_csv(…) */` is a comment (a hand-made lexer, used before, ended it at the first
`*/`). Kept here, because the tokenizer cannot do it: it gives each token's start only (a token
runs to the next one's start, less the whitespace between), and it knows nothing of what a name
means (which functions read files or show server paths, which verbs write).
"""

from __future__ import annotations

from dataclasses import dataclass

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
# Table functions that read files, URLs or other databases, or run SQL built from a string.
_FILE_PREFIXES = ("read_", "parquet_", "iceberg_", "delta_", "sqlite_", "postgres_", "mysql_",
                  "load_")
_FILE_NAMES = frozenset({"glob", "sniff_csv", "query", "query_table"})
# Catalog functions and views that show server paths (database files, allowed paths, secrets).
_SERVER_PREFIXES = ("duckdb_", "pragma_")
_SERVER_NAMES = frozenset({"current_setting", "which_secret"})
_PIVOTS = frozenset({"PIVOT", "PIVOT_WIDER", "UNPIVOT", "PIVOT_LONGER"})
# Verbs no read has: a data-modifying CTE (`WITH d AS (DELETE … RETURNING *) SELECT …`) parses
# as a SELECT, and `COPY (PIVOT …) TO …` or `CREATE TABLE … AS PIVOT …` as PIVOT's MULTI.
_WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "COPY",
                     "EXPORT", "IMPORT", "ATTACH", "DETACH", "INSTALL", "LOAD", "SET", "RESET",
                     "PRAGMA", "CALL", "CHECKPOINT", "VACUUM", "USE", "TRUNCATE", "PREPARE",
                     "EXECUTE", "DEALLOCATE", "BEGIN", "COMMIT", "ROLLBACK", "ABORT",
                     "COMMENT"})
_NO_FILES = ("The console reads the audit tables only; {what} is refused. Query book_logs, "
             "audit_logs, audit_archive or audit_all instead.")
EMPTY = f"the query is empty or only a comment. Type a SELECT statement (or {ALLOWED})."


@dataclass(frozen=True)
class Token:
    kind: str  # keyword, identifier, string_const, numeric_const, operator (comments dropped)
    text: str  # as written
    start: int  # offset in the statement

    @property
    def word(self) -> str:
        """A keyword or identifier as a bare word (a quoted identifier unquoted)."""
        if self.kind == "identifier" and self.text.startswith('"'):
            return self.text[1:-1].replace('""', '"')
        return self.text if self.kind in ("keyword", "identifier") else ""


def code_tokens(sql: str) -> list[Token]:
    """DuckDB's tokens of sql, comments left out."""
    found = duckdb.tokenize(sql)
    ends = [start for start, _ in found[1:]] + [len(sql)] if found else []
    return [Token(kind.name, sql[start:end].rstrip(), start)
            for (start, kind), end in zip(found, ends, strict=True) if kind.name != "comment"]


def refuse(message: str) -> AuditError:
    return AuditError(f"Query refused: {message}")


def check_statement(sql: str) -> None:
    """Raise AuditError with the reason unless sql is one read-only statement over the tables."""
    sql = sql or ""
    code = code_tokens(sql)
    if not any(t.text.strip(" \t\r\n;") for t in code):
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


def _has_pivot(code: list[Token]) -> bool:
    return any(t.kind == "keyword" and t.text.upper() in _PIVOTS for t in code)


def _check_kind(parser: duckdb.DuckDBPyConnection, kind: str, sql: str,
                code: list[Token]) -> None:
    if kind == "EXPLAIN":
        rest = [t for t in code if t.text.upper() not in ("EXPLAIN", "ANALYZE")]
        inner = sql[rest[0].start:] if rest else ""
        kinds = [s.type.name for s in parser.extract_statements(inner)] if inner else []
        if kinds not in (["SELECT"], ["MULTI"]) or (kinds == ["MULTI"] and not _has_pivot(code)):
            raise refuse("EXPLAIN is allowed for SELECT queries only.")
    elif kind == "MULTI" and _has_pivot(code):
        return  # PIVOT without an IN list: DuckDB reads the distinct values first; still a read
    elif kind != "SELECT":
        raise refuse(_WHY.get(kind, f"{kind} statements are refused; the console is read-only. "
                                    f"Use {ALLOWED}."))


def _calls(code: list[Token], index: int) -> bool:
    return index + 1 < len(code) and code[index + 1].text.startswith("(")


def _write_refused(verb: str, first: bool) -> str:
    """Why a write verb is refused: as a statement's own verb (`COPY (PIVOT …) TO …`), or inside
    a read (a data-modifying CTE)."""
    if first:
        return _WHY.get(verb, f"{verb} statements are refused; the console is read-only. Use "
                              f"{ALLOWED}.")
    return (f"{verb} inside a query is refused; the console is read-only (a column named "
            f"{verb.lower()} can be written \"{verb.lower()}\").")


def _check_words(code: list[Token]) -> None:
    for i, token in enumerate(code):
        word = token.word.lower()
        if token.kind == "keyword" and word.upper() in _WRITES:
            raise refuse(_write_refused(word.upper(), first=i == 0))
        if _calls(code, i) and (word in _FILE_NAMES or word.startswith(_FILE_PREFIXES)
                                or word.endswith("_scan")):
            raise refuse(_NO_FILES.format(what=f"{word}() (file, URL or dynamic-SQL access)"))
        if token.kind == "keyword" and word in ("from", "join") and i + 1 < len(code) and \
                code[i + 1].kind == "string_const":
            raise refuse(_NO_FILES.format(what="reading a file named in quotes"))
        if word in _SERVER_NAMES or word.startswith(_SERVER_PREFIXES):
            raise refuse(f"{word} is refused: DuckDB's catalog functions and settings "
                         f"(duckdb_*, pragma_*, current_setting) show server paths. Use "
                         f"DESCRIBE audit_logs or SHOW TABLES to see the tables.")
