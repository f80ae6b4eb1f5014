"""The console's child process: runs one checked statement under hard memory and write limits.

Run as a script (`python console_worker.py`), so it imports only duckdb and the standard
library (~80 MB resident instead of ~250 MB with pandas). It reads one JSON request on stdin
and writes one pickled reply on stdout. DuckDB's memory_limit does not cover strings built by
repeat() and friends, and its interrupt is checked only between chunks, so the limits that hold
are the operating system's: RLIMIT_AS (an allocation past it fails inside DuckDB) here, and a
kill by the parent at the deadline. Landlock, where the kernel has it, makes the whole process
unable to create, write or truncate any file, so a statement the checks missed cannot touch the
archive's Parquet files either (DuckDB's allowed_paths permits writing to an allowed file).
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import resource
import sys
import threading
import time

import duckdb

# DuckDB settings: no Python-variable scans, no extension loading, no spill files, one thread
# (two threads doubled the peak of string-building queries).
CONFIG = {"python_enable_replacements": False, "autoload_known_extensions": False,
          "autoinstall_known_extensions": False, "temp_directory": "", "threads": 1,
          "allow_persistent_secrets": False}
_SYS_CREATE_RULESET, _SYS_RESTRICT_SELF, _PR_SET_NO_NEW_PRIVS = 444, 446, 38
# Landlock rights that change the file system: write, remove, make, refer (ABI 2), truncate (3).
_WRITE_RIGHTS = {1: 0b1_1111_1111_0010, 2: 1 << 13, 3: 1 << 14}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def forbid_writes() -> bool:
    """Landlock: this process may no longer create, write or truncate files. False if absent."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return False
    rights = sum(bits for level, bits in _WRITE_RIGHTS.items() if abi >= level)
    attr = ctypes.c_uint64(rights)
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8),
                      ctypes.c_uint32(0))
    if fd < 0 or libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) == 0


def open_sandbox(request: dict) -> duckdb.DuckDBPyConnection:
    """In-memory DuckDB, audit file attached READ_ONLY, archive files the only readable paths."""
    config = dict(CONFIG, memory_limit=f"{request['memory_mb']}MB")
    con = duckdb.connect(":memory:", config=config)
    _attach(con, request)
    if request.get("pending"):
        _pending_view(con, request["pending"])
    files = request["archive_files"]
    if files:
        listed = ", ".join(_literal(f) for f in files)
        con.execute(f"CREATE TEMP VIEW audit_archive AS SELECT * FROM read_parquet([{listed}], "
                    "hive_partitioning = false, union_by_name = true)")
        con.execute(f"SET allowed_paths = [{listed}]")
    else:
        con.execute("CREATE TEMP VIEW audit_archive AS SELECT * FROM audit_logs WHERE false")
    con.execute("CREATE TEMP VIEW audit_all AS SELECT * FROM audit_logs "
                "UNION ALL BY NAME SELECT * FROM audit_archive")
    if request.get("book_id") is not None:
        _book_view(con, request["book_id"])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def _book_view(con: duckdb.DuckDBPyConnection, book_id: str) -> None:
    """book_logs: the current book's rows of audit_all ("" selects rows with no book)."""
    columns = {r[0] for r in con.execute("DESCRIBE audit_all").fetchall()}
    where = (f"coalesce(book_id, '') = {_literal(book_id)}" if "book_id" in columns
             else "false")  # a file no Folio with books has migrated yet
    con.execute(f"CREATE TEMP VIEW book_logs AS SELECT * FROM audit_all WHERE {where}")


def _pending_view(con: duckdb.DuckDBPyConnection, pending: dict) -> None:
    """`audit_logs`: the table plus spooled rows not imported yet (rag.audit.pending). With the
    file attached no importer can delete a segment, so the ones still here can all be read.
    Read here rather than by DuckDB's read_text, which refuses a whole file for one line that
    is not UTF-8 (a torn or foreign line, which the importer quarantines)."""
    texts = {}
    for name in pending["files"]:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            continue  # imported meanwhile, or no regular file (the importer moves those)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        texts[os.path.basename(name)] = _utf8_lines(data[:data.rfind(b"\n") + 1])
    if not texts:
        return
    con.execute(f"CREATE TEMP TABLE _audit_pending AS {pending['select']}",
                [list(texts), list(texts.values())])
    con.execute(f"CREATE TEMP VIEW audit_logs AS SELECT * FROM {pending['hot']}")


def _utf8_lines(data: bytes) -> str:
    """The complete lines as text, a line that is not UTF-8 left out (as rag.audit.spool's
    decode_lines does; this script imports nothing from rag)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        lines = []
        for line in data.split(b"\n"):
            try:
                lines.append(line.decode("utf-8"))
            except UnicodeDecodeError:
                lines.append("")
        return "\n".join(lines)


def run_here(request: dict) -> dict:
    """The request with every path relative to the audit file's folder, made the working
    directory: the catalog (information_schema.views, EXPLAIN) then names no server folder."""
    folder = os.path.dirname(os.path.abspath(request["db_path"]))
    os.chdir(folder)
    pending = request.get("pending")
    return dict(request, db_path=os.path.basename(request["db_path"]),
                archive_files=[os.path.relpath(f, folder) for f in request["archive_files"]],
                pending=pending and dict(pending, files=[os.path.relpath(f, folder)
                                                         for f in pending["files"]]))


def _attach(con: duckdb.DuckDBPyConnection, request: dict) -> None:
    deadline = time.monotonic() + request["wait_s"]
    while True:
        try:
            con.execute(f"ATTACH {_literal(request['db_path'])} AS audit (READ_ONLY)")
            con.execute("USE audit")
            return
        except duckdb.IOException as e:
            locked = any(m in str(e).lower() for m in request["lock_markers"])
            if not locked or time.monotonic() >= deadline:
                raise
        time.sleep(0.1)


def limit_memory(extra_mb: int) -> None:
    """Address space capped at what is mapped now plus extra_mb."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    cap = mapped + (extra_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _damaged(request: dict, error: duckdb.Error) -> bool:
    detail = str(error).lower()
    return any(m in detail for m in request["damage_markers"]) or (
        isinstance(error, duckdb.IOException) and request["db_path"].lower() in detail)


def run(request: dict) -> dict:
    sandboxed = forbid_writes()  # before DuckDB starts any thread: Landlock binds new threads
    request = run_here(request)
    try:
        con = open_sandbox(request)
    except duckdb.Error as e:
        code = "damaged" if _damaged(request, e) else "open"
        return {"error": code, "kind": type(e).__name__, "detail": str(e).splitlines()[0]}
    limit_memory(request["memory_mb"])
    timer = threading.Timer(request["timeout_s"], con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        cursor = con.execute(request["sql"])
        rows = cursor.fetchmany(request["max_rows"] + 1)
        columns = [d[0] for d in cursor.description]
    except duckdb.InterruptException:
        return {"error": "time"}
    except duckdb.PermissionException:
        return {"error": "permission"}
    except (duckdb.OutOfMemoryException, MemoryError):
        return {"error": "memory"}
    except duckdb.Error as e:
        detail = str(e).splitlines()[0]
        if _damaged(request, e):  # the audit file's blocks cannot be read
            return {"error": "damaged", "detail": detail}
        if "bad_alloc" in detail or "allocate" in detail.lower():
            return {"error": "memory"}
        return {"error": "failed", "detail": detail}
    finally:
        timer.cancel()
    return {"columns": columns, "rows": rows, "sandboxed": sandboxed}


def main() -> int:
    request = json.loads(sys.stdin.buffer.read())
    try:
        reply = pickle.dumps(run(request), protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        reply = pickle.dumps({"error": "memory"})
    if len(reply) > request["max_reply_bytes"]:
        reply = pickle.dumps({"error": "large"})
    sys.stdout.buffer.write(reply)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    # _exit: DuckDB's teardown at interpreter exit sometimes aborts after the reply is written
    os._exit(main())
