"""The audit log: every answer spooled to disk by the process that gave it (`spool`), imported
into one DuckDB file by whichever process gets there first (`importer`, `db`, `schema`), read
back as the table plus every process's pending rows (`pending`, `filters`, `queries`), archived
to Parquet (`retention`) and queried read-only (`console`); `store` ties them together, `row`
shapes a row."""

from __future__ import annotations

from rag.audit.filters import AuditFilters
from rag.audit.queries import AuditReader
from rag.audit.store import AuditStore

__all__ = [
    "AuditFilters", "AuditReader", "AuditStore"
]
