"""The audit log: every answer spooled to disk (`spool`), batch-imported into DuckDB (`importer`,
`db`, `schema`), read back with filters (`filters`, `queries`), archived to Parquet
(`retention`) and queried read-only (`console`); `store` ties them together, `row` shapes a row."""

from __future__ import annotations

from rag.audit.filters import AuditFilters
from rag.audit.queries import AuditReader
from rag.audit.store import AuditStore

__all__ = [
    "AuditFilters", "AuditReader", "AuditStore"
]
