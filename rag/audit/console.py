"""The reviewers' SQL console: one read-only statement over the audit tables, sandboxed.

Two layers: the statement is checked before it runs (one statement, SELECT-like, no file or URL
functions) so the refusal says why; and it runs on its own in-memory DuckDB that attaches the
audit file READ_ONLY, then disables external access and locks its configuration, so anything the
check misses still cannot write, read files, reach the network or load extensions.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import duckdb
import pandas as pd

from rag.audit.db import LOCK_POLL_S, busy_error, connect, is_lock_error
from rag.audit.filters import archive_files
from rag.errors import AuditError

ALLOWED = "SELECT, WITH, DESCRIBE, SUMMARIZE, SHOW or EXPLAIN"
MAX_ROWS_LIMIT = 100_000
CONSOLE_MEMORY = "1GB"
# No Python-variable scans, no extension downloads, no spill files written anywhere.
CONSOLE_CONFIG = {"python_enable_replacements": False, "autoload_known_extensions": False,
                  "autoinstall_known_extensions": False, "memory_limit": CONSOLE_MEMORY,
                  "temp_directory": "", "threads": 2}
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
_STRING_AS_TABLE = re.compile(r"\b(from|join)\s+'", re.IGNORECASE)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_EXPLAIN = re.compile(r"^\s*explain\s+(analyze\s+)?(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_NO_FILES = ("The console reads the audit tables only; {what} is refused. Query audit_logs, "
             "audit_archive or audit_all instead.")


def _refuse(message: str) -> AuditError:
    return AuditError(f"Query refused: {message}")


def check_statement(sql: str) -> None:
    """Raise AuditError with the reason unless sql is one read-only statement over the tables."""
    if not sql or not sql.strip():
        raise _refuse(f"the query is empty; type one {ALLOWED} statement.")
    parser = duckdb.connect(":memory:")
    try:
        statements = parser.extract_statements(sql)
        if len(statements) != 1:
            raise _refuse(f"the console runs exactly one statement; this has {len(statements)}."
                          " Remove the extra ';' and run each query separately.")
        kind = statements[0].type.name
        if kind == "EXPLAIN":
            inner = _EXPLAIN.match(sql)
            kinds = [s.type.name for s in parser.extract_statements(inner["rest"])] if inner else []
            if kinds != ["SELECT"]:
                raise _refuse("EXPLAIN is allowed for SELECT queries only.")
        elif kind != "SELECT":
            raise _refuse(_WHY.get(kind, f"{kind} statements are refused; the console is "
                                         f"read-only. Use {ALLOWED}."))
    except duckdb.ParserException as e:
        raise AuditError(f"The query could not be parsed: {str(e).splitlines()[0]}") from e
    finally:
        parser.close()
    _check_file_access(sql)


def _check_file_access(sql: str) -> None:
    if match := _FILE_FUNCTION.search(sql):
        raise _refuse(_NO_FILES.format(what=f"{match[1]}() (file, URL or dynamic-SQL access)"))
    if _STRING_AS_TABLE.search(sql):
        raise _refuse(_NO_FILES.format(what="reading a file named in quotes"))
    if _URL.search(sql):
        raise _refuse(_NO_FILES.format(what="URL access"))


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def open_console(db_path: Path, archive_dir: Path,
                 wait_s: float = 0.0) -> duckdb.DuckDBPyConnection:
    """In-memory DuckDB with the audit file attached READ_ONLY and the sandbox locked."""
    con = connect(Path(":memory:"), 0.0, config=dict(CONSOLE_CONFIG))
    try:
        _attach(con, db_path, wait_s)
        files = archive_files(archive_dir)
        if files:
            listed = ", ".join(_literal(f) for f in files)
            con.execute(f"CREATE TEMP VIEW audit_archive AS SELECT * FROM read_parquet([{listed}],"
                        " hive_partitioning = false, union_by_name = true)")
            con.execute(f"SET allowed_directories = [{_literal(str(archive_dir) + '/')}]")
        else:
            con.execute("CREATE TEMP VIEW audit_archive AS SELECT * FROM audit_logs WHERE false")
        con.execute("CREATE TEMP VIEW audit_all AS SELECT * FROM audit_logs "
                    "UNION ALL BY NAME SELECT * FROM audit_archive")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _attach(con: duckdb.DuckDBPyConnection, db_path: Path, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            con.execute(f"ATTACH {_literal(str(db_path))} AS audit (READ_ONLY)")
            con.execute("USE audit")
            return
        except duckdb.Error as e:
            if not is_lock_error(e):
                raise AuditError(f"The console cannot open {db_path}: "
                                 f"{str(e).splitlines()[0]}") from e
            if time.monotonic() >= deadline:
                raise busy_error(db_path, e) from e
        time.sleep(LOCK_POLL_S)


def run_console_query(db_path: Path, archive_dir: Path, sql: str, max_rows: int = 1000,
                      timeout_s: float = 5.0, wait_s: float = 0.0) -> pd.DataFrame:
    """At most max_rows rows (df.attrs['truncated'] says if there were more) within timeout_s."""
    if not 1 <= max_rows <= MAX_ROWS_LIMIT or not 0 < timeout_s <= 300:
        raise AuditError(f"The row cap must be 1-{MAX_ROWS_LIMIT} and the time limit 0-300 s.")
    check_statement(sql)
    con = open_console(db_path, archive_dir, wait_s)
    timer = threading.Timer(timeout_s, _interrupt, [con])
    timer.start()
    try:
        cursor = con.execute(sql)
        rows = cursor.fetchmany(max_rows + 1)
        columns = [d[0] for d in cursor.description]
    except duckdb.InterruptException as e:
        raise AuditError(f"The query ran longer than {timeout_s:g} s and was stopped; narrow it "
                         f"with WHERE or LIMIT.") from e
    except duckdb.PermissionException as e:
        raise _refuse(_NO_FILES.format(what="file, URL and extension access")) from e
    except duckdb.OutOfMemoryException as e:
        raise AuditError(f"The query needs more than {CONSOLE_MEMORY} of memory; select fewer "
                         f"columns or add WHERE or LIMIT.") from e
    except duckdb.Error as e:
        raise AuditError(f"The query failed: {str(e).splitlines()[0]}") from e
    finally:
        timer.cancel()
        con.close()
    frame = pd.DataFrame.from_records(rows[:max_rows], columns=columns)
    frame.attrs["truncated"] = len(rows) > max_rows
    return frame


def _interrupt(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.interrupt()
    except duckdb.Error:
        pass
