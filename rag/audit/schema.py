"""The audit table and its numbered migrations; applied names are recorded in a table.

A migration is frozen once released: change the schema by adding `m00N_...`, never by editing an
old one, so an audit file written by any earlier Folio opens (and is upgraded) in a newer one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import duckdb

from rag.errors import AuditError

TABLE = "audit_logs"
MIGRATIONS_TABLE = "_audit_migrations"
ARCHIVE_FILES_TABLE = "_audit_archive_files"

# (column, DuckDB type) in table order, as migrated; the spool import reads JSON lines with
# these types. JSON columns hold JSON text, lists are native lists.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("log_id", "VARCHAR"), ("query_id", "VARCHAR"), ("answer_id", "VARCHAR"),
    ("session_id", "VARCHAR"), ("client_id", "VARCHAR"), ("timestamp", "TIMESTAMP"),
    ("user_query_text", "VARCHAR"), ("retrieval_query", "VARCHAR"), ("source_mode", "VARCHAR"),
    ("mode_used", "VARCHAR"), ("fallback_reason", "VARCHAR"),
    ("chunks_retrieved_count", "INTEGER"), ("chunks_used_count", "INTEGER"),
    ("chunks_returned", "JSON"), ("candidate_pool", "JSON"),
    ("retrieval_latency_ms", "DOUBLE"), ("synthesis_latency_ms", "DOUBLE"),
    ("total_latency_ms", "DOUBLE"), ("stage_latency_ms", "JSON"),
    ("llm_provider", "VARCHAR"), ("llm_model", "VARCHAR"), ("llm_prompt", "VARCHAR"),
    ("llm_response", "VARCHAR"), ("answer_text", "VARCHAR"),
    ("confidence_score", "DOUBLE"), ("confidence_level", "VARCHAR"),
    ("retrieval_confidence", "DOUBLE"), ("generation_confidence", "DOUBLE"),
    ("citations", "JSON"), ("cited_sections", "VARCHAR[]"),
    ("guardrail_actions", "JSON"), ("reason_codes", "VARCHAR[]"),
    ("validation", "JSON"), ("notices", "JSON"),
    ("status", "VARCHAR"), ("success", "BOOLEAN"), ("error_stage", "VARCHAR"),
    ("error_message", "VARCHAR"), ("settings", "JSON"), ("app_version", "VARCHAR"),
    ("book_id", "VARCHAR"), ("book_title", "VARCHAR"), ("query_type", "VARCHAR"),
    ("answer_evidence", "JSON"),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
JSON_COLUMNS = tuple(name for name, kind in COLUMNS if kind == "JSON")
LIST_COLUMNS = tuple(name for name, kind in COLUMNS if kind.endswith("[]"))

Migration = Callable[[duckdb.DuckDBPyConnection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_initial(db: duckdb.DuckDBPyConnection) -> None:
    """SPEC §7's denormalised table plus the issue's columns; one row per question."""
    db.execute("""
        CREATE TABLE audit_logs (
            log_id VARCHAR PRIMARY KEY, query_id VARCHAR, answer_id VARCHAR,
            session_id VARCHAR, client_id VARCHAR, "timestamp" TIMESTAMP NOT NULL,
            user_query_text VARCHAR, retrieval_query VARCHAR, source_mode VARCHAR,
            mode_used VARCHAR, fallback_reason VARCHAR,
            chunks_retrieved_count INTEGER, chunks_used_count INTEGER,
            chunks_returned JSON, candidate_pool JSON,
            retrieval_latency_ms DOUBLE, synthesis_latency_ms DOUBLE, total_latency_ms DOUBLE,
            stage_latency_ms JSON, llm_provider VARCHAR, llm_model VARCHAR,
            llm_prompt VARCHAR, llm_response VARCHAR, answer_text VARCHAR,
            confidence_score DOUBLE, confidence_level VARCHAR,
            retrieval_confidence DOUBLE, generation_confidence DOUBLE,
            citations JSON, cited_sections VARCHAR[], guardrail_actions JSON,
            reason_codes VARCHAR[], validation JSON, notices JSON,
            status VARCHAR NOT NULL, success BOOLEAN NOT NULL,
            error_stage VARCHAR, error_message VARCHAR, settings JSON, app_version VARCHAR
        )""")


@migration
def m002_indexes(db: duckdb.DuckDBPyConnection) -> None:
    """SPEC §7: indexes on query_id, answer_id and timestamp."""
    db.execute("CREATE INDEX audit_logs_query_id ON audit_logs (query_id)")
    db.execute("CREATE INDEX audit_logs_answer_id ON audit_logs (answer_id)")
    db.execute('CREATE INDEX audit_logs_timestamp ON audit_logs ("timestamp")')


@migration
def m003_archive_files(db: duckdb.DuckDBPyConnection) -> None:
    """Archive manifest, written in the archiving transaction so a crash never loses rows."""
    db.execute("""
        CREATE TABLE _audit_archive_files (
            path VARCHAR PRIMARY KEY, rows BIGINT NOT NULL, created_at TIMESTAMP NOT NULL
        )""")


@migration
def m004_book(db: duckdb.DuckDBPyConnection) -> None:
    """The book each question was asked of (`rag.book.parse.book_id_for` and its title), so one
    book's questions never count against another's; rows logged before stay NULL (unknown)."""
    db.execute("ALTER TABLE audit_logs ADD COLUMN book_id VARCHAR")
    db.execute("ALTER TABLE audit_logs ADD COLUMN book_title VARCHAR")


@migration
def m005_query_type(db: duckdb.DuckDBPyConnection) -> None:
    """The question's type (rag.answer.query_types: factual, conceptual, comparison,
    procedural, code, realtime) that steered its retrieval; rows logged before stay NULL."""
    db.execute("ALTER TABLE audit_logs ADD COLUMN query_type VARCHAR")


@migration
def m006_answer_evidence(db: duckdb.DuckDBPyConnection) -> None:
    """What an offline answer was made from (rag.answer.record.EVIDENCE_KEYS: the quoted units
    and their probabilities, the confidence's inputs, the passages shown under the answer, the
    quantities a refusal found unstated), so a reviewer sees why a past answer came out as it
    did; rows logged before, and Claude's answers, hold no quotes."""
    db.execute("ALTER TABLE audit_logs ADD COLUMN answer_evidence JSON")


def applied_migrations(db: duckdb.DuckDBPyConnection) -> list[str]:
    db.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
               "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)")
    return [r[0] for r in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY name")
            .fetchall()]


def apply_migrations(db: duckdb.DuckDBPyConnection,
                     migrations: list[Migration] | None = None) -> list[str]:
    """Apply the migrations not yet recorded, each in its own transaction; return their names."""
    migrations = MIGRATIONS if migrations is None else migrations
    applied = set(applied_migrations(db))
    unknown = sorted(applied - {m.__name__ for m in MIGRATIONS})
    if unknown:
        raise AuditError(f"The audit database was written by a newer Folio (unknown migrations: "
                         f"{', '.join(unknown)}); upgrade Folio or set RAG_AUDIT_DB to another "
                         f"file.")
    done = []
    for step in migrations:
        if step.__name__ in applied:
            continue
        db.begin()
        try:
            step(db)
            db.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, ?)",
                       [step.__name__, datetime.now(UTC).replace(tzinfo=None)])
            db.commit()
        except BaseException:
            db.rollback()
            raise
        done.append(step.__name__)
    return done

