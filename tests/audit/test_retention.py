"""Archive to monthly Parquet, prune, and recovery of an interrupted archive run."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from rag.audit.schema import ARCHIVE_FILES_TABLE
from rag.audit.store import AuditFilters, AuditStore
from rag.errors import InputError
from tests.builders import make_response


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def record_at(store: AuditStore, *ages_days: float) -> list[str]:
    return [store.record(make_response(f"asked {age} days ago", seed=i,
                                       timestamp=now() - timedelta(days=age)))
            for i, age in enumerate(ages_days)]


def parquet_files(store: AuditStore) -> list[Path]:
    return sorted(store.archive_dir.glob("year=*/month=*/*.parquet"))


def test_archive_moves_old_rows_to_monthly_parquet_and_queries_still_see_them(tmp_path):
    with AuditStore(tmp_path / "audit.duckdb") as store:
        old, older, recent = record_at(store, 100, 200, 5)
        assert store.archive(older_than_days=90) == 2
        files = parquet_files(store)
        assert store.archive_dir == tmp_path / "audit" / "archive"
        months = {(now() - timedelta(days=d)).strftime("year=%Y/month=%m") for d in (100, 200)}
        assert {f.parent.relative_to(store.archive_dir).as_posix() for f in files} == months
        assert not list(store.archive_dir.rglob("*.tmp"))
        assert store.count_logs() == 1
        assert store.count_logs(include_archive=True) == 3
        assert set(store.query_logs(include_archive=True)["log_id"]) == {old, older, recent}
        assert store.stats(include_archive=True)["total"] == 3
        assert store.get_log(older)["candidate_pool"]["candidates"]  # drill-down still works
        assert store.get_log(older, include_archive=False) is None
        assert store.archive(older_than_days=90) == 0


def test_archived_rows_keep_their_values(tmp_path):
    with AuditStore(tmp_path / "audit.duckdb") as store:
        (log_id,) = record_at(store, 120)
        before = store.get_log(log_id)
        store.archive(90)
        assert store.get_log(log_id) == before
        refused = AuditFilters(statuses=("refused",))
        assert store.count_logs(refused, include_archive=True) == 0


def test_prune_deletes_old_rows_from_the_hot_table_and_the_archive(tmp_path):
    with AuditStore(tmp_path / "audit.duckdb") as store:
        record_at(store, 400, 380, 100, 3)
        store.archive(90)
        assert store.count_logs(include_archive=True) == 4
        assert store.prune(older_than_days=365) == 2
        assert store.count_logs(include_archive=True) == 2
        assert store.prune(older_than_days=365) == 0
        assert store.prune(older_than_days=1) == 2
        assert store.count_logs(include_archive=True) == 0
        assert not parquet_files(store)


def test_prune_rewrites_a_month_that_straddles_the_cutoff(tmp_path):
    with AuditStore(tmp_path / "audit.duckdb") as store:
        month = (now() - timedelta(days=200)).replace(day=1, hour=0, minute=0, second=0,
                                                      microsecond=0)
        ages = [(now() - (month + timedelta(days=d))).total_seconds() / 86400 for d in (2, 20)]
        _, kept = record_at(store, *ages)
        store.archive(0)
        (single,) = parquet_files(store)
        days = (now() - (month + timedelta(days=10))).days
        assert store.prune(older_than_days=days) == 1
        assert parquet_files(store) == [single]
        assert list(store.query_logs(include_archive=True)["log_id"]) == [kept]
        with duckdb.connect() as con:
            assert con.execute("SELECT count(*) FROM read_parquet(?)",
                               [str(single)]).fetchone()[0] == 1


@pytest.mark.parametrize("days", [-1, 1.5, "30", True])
def test_retention_refuses_bad_day_counts(tmp_path, days):
    with AuditStore(tmp_path / "audit.duckdb") as store, pytest.raises(InputError):
        store.archive(days)


def test_interrupted_archive_is_finished_or_undone_on_open(tmp_path):
    db = tmp_path / "audit.duckdb"
    with AuditStore(db) as store:
        record_at(store, 200)
        store.archive(90)
        (done,) = parquet_files(store)
        archive_dir = store.archive_dir
    committed = done.with_name("part-committed.parquet")
    uncommitted = done.with_name("part-uncommitted.parquet")
    shutil.copy(done, committed.with_name(committed.name + ".tmp"))
    shutil.copy(done, uncommitted.with_name(uncommitted.name + ".tmp"))
    with duckdb.connect(str(db)) as con:  # the crash came after this commit, before the rename
        con.execute(f"INSERT INTO {ARCHIVE_FILES_TABLE} VALUES (?, 1, ?)",
                    [committed.relative_to(archive_dir).as_posix(), now()])
    with AuditStore(db) as store:
        assert committed.exists() and not uncommitted.exists()
        assert not list(archive_dir.rglob("*.tmp"))
        assert store.count_logs(include_archive=True) == 2  # the test's duplicate copy
