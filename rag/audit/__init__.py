"""The audit log: every answer spooled to disk by the process that gave it (`spool`), imported
into one DuckDB file by whichever process gets there first (`importer`, `db`, `schema`), read
back as the table plus every process's pending rows (`pending`, `filters`, `queries`), archived
to Parquet (`retention`) and queried read-only (`console`, `sql_check`); `store` ties them
together, `row` shapes a row. What cannot be imported is set aside (`quarantine`), a damaged
file moved aside (`damage`), the store's state reported (`state`), and logged text made
harmless on its way to a terminal or a spreadsheet (`safe_text`)."""

from __future__ import annotations

from rag.audit.filters import AuditFilters
from rag.audit.queries import AuditReader
from rag.audit.store import AuditStore

__all__ = [
    "AuditFilters", "AuditReader", "AuditStore"
]
