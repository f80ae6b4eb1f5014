"""Audit log figures: record() overhead, write throughput, explorer queries at 100,000 rows, size.

    .venv/bin/python bench/audit.py [--rows 100000] [--records 1000] [--dir DIR]

Runs in a temporary folder (fsync cost is that disk's; --dir picks another) with realistic
rows: 50 candidates with scores, a ~4 KB prompt of varied text, citations and verdicts.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from rag.audit.store import AuditFilters, AuditStore  # noqa: E402
from rag.types import Response  # noqa: E402
from tests.builders import make_error_response, make_response  # noqa: E402

TARGET_MS = 200.0
STATUSES = ["success"] * 14 + ["partial"] * 2 + ["refused"] * 3 + ["error"]
WORDS = [f"{a}{b}" for a in ("re", "dense", "score", "bm", "chunk", "book", "page", "cite")
         for b in ("al", "ing", "ed", "s", "er", "ion", "ity", "ous", "ly", "ment")] * 3


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def sample_responses(n: int = 64) -> list[Response]:
    out = []
    for i in range(n):
        status = STATUSES[i % len(STATUSES)]
        if status == "error":
            out.append(make_error_response("The question is empty; type a question."))
            continue
        out.append(make_response(f"How does feature {i % 23} work in chapter {i % 7}?",
                                 status=status, score=0.35 + (i % 13) * 0.05, seed=i,
                                 n_candidates=50, prompt="", raw="",
                                 reason_codes=("low_confidence",) if status == "refused" else (),
                                 provider="anthropic" if i % 3 else "extractive",
                                 latency=(20 + i % 40, 300 + 7 * i, 330 + 8 * i)))
    return out


def varied(response: Response, rng: random.Random) -> Response:
    """The same response with its own prompt, model output and answer text (~5 KB)."""
    if response.draft is None:
        return response
    text = " ".join(rng.choices(WORDS, k=760))
    draft = dataclasses.replace(response.draft, prompt=text[:4200], raw_response=text[4200:])
    return dataclasses.replace(response, draft=draft, answer=text[4200:4600])


def bench_overhead(folder: Path, responses: list[Response], records: int) -> None:
    """Back to back (a stress test) and paced at one answer per 5 ms (still far above real use)."""
    for durability in ("fsync", "os"):
        for pause in (0.0, 0.005):
            db = folder / f"overhead-{durability}-{pause}.duckdb"
            with AuditStore(db, durability=durability) as store:
                for r in responses[:20]:
                    store.record(r)  # warm up the encoder and the secret cache
                times = []
                for i in range(records):
                    t0 = time.perf_counter()
                    store.record(responses[i % len(responses)])
                    times.append((time.perf_counter() - t0) * 1000)
                    time.sleep(pause)
            how = "back to back" if not pause else f"every {pause * 1000:.0f} ms "
            print(f"record() overhead, durability={durability:<5} {how}: p50 "
                  f"{pct(times, 0.5):6.3f} ms  p95 {pct(times, 0.95):6.3f} ms  p99 "
                  f"{pct(times, 0.99):6.3f} ms")


def bench_throughput(folder: Path, responses: list[Response], per_thread: int = 500) -> None:
    for durability in ("fsync", "os"):
        store = AuditStore(folder / f"throughput-{durability}.duckdb", durability=durability)

        def worker(n: int, store: AuditStore = store) -> None:
            for i in range(per_thread):
                store.record(responses[(n * 7 + i) % len(responses)])

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        recorded = time.perf_counter() - t0
        store.flush()
        total = time.perf_counter() - t0
        rows = store.count_logs()
        store.close()
        print(f"write throughput, durability={durability:<5} 8 threads x {per_thread}: "
              f"{rows / recorded:,.0f} rows/s recorded, {rows / total:,.0f} rows/s in DuckDB")


def build_rows(folder: Path, responses: list[Response], rows: int) -> tuple[Path, float]:
    """10,000 distinct rows through the real spool and import, then copied in SQL up to rows."""
    db = folder / "explorer.duckdb"
    base, rng = min(rows, 10_000), random.Random(7)
    with AuditStore(db, durability="os", flush_interval=3600, batch_size=10**9) as store:
        for i in range(base):
            store.record(varied(responses[i % len(responses)], rng), session_id=f"s{i % 300}")
        spool_bytes = sum(p.stat().st_size for p in store.spool_dir.glob("*.jsonl"))
        t0 = time.perf_counter()
        imported = store.flush()
        seconds = time.perf_counter() - t0
    print(f"import spool -> DuckDB: {imported:,} rows in {seconds:.2f} s "
          f"({imported / seconds:,.0f} rows/s); spool {spool_bytes / base / 1000:.1f} KB per row")
    spread = "to_microseconds((hash(log_id) % 7776000000000)::BIGINT)"  # within 90 days
    with duckdb.connect(str(db)) as con:
        con.execute(f'UPDATE audit_logs SET "timestamp" = "timestamp" - {spread}')
        con.execute("CHECKPOINT")
    size_10k = db.stat().st_size / 1e6 * 10_000 / base
    with duckdb.connect(str(db)) as con:
        copies = max(0, rows // base - 1)
        con.execute(f"""INSERT INTO audit_logs SELECT a.* REPLACE (
                            a.log_id || '-' || k AS log_id,
                            a."timestamp" - to_days(CAST(k * 36 AS INTEGER)) AS "timestamp")
                        FROM audit_logs AS a, range(1, {copies + 1}) AS r(k)""")
        con.execute("CHECKPOINT")
    return db, size_10k


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return pct(times, 0.5), pct(times, 0.95)


def query_cases(store: AuditStore) -> list[tuple[str, Callable[[], object]]]:
    sections = [f"m1/ch1#s{i}" for i in range(60)]
    narrow = AuditFilters(statuses=("refused",), min_confidence=0.3, providers=("anthropic",))
    some_id = store.query_logs(limit=1)["log_id"].iloc[0]
    return [
        ("stats", store.stats),
        ("count_logs (filtered)", lambda: store.count_logs(narrow)),
        ("query_logs page 1", lambda: store.query_logs(limit=50)),
        ("query_logs filtered", lambda: store.query_logs(narrow, limit=50)),
        ("query_logs text search", lambda: store.query_logs(AuditFilters(text="feature 7"))),
        ("get_log", lambda: store.get_log(some_id)),
        ("questions_per_day", store.questions_per_day),
        ("latency_by_stage", store.latency_by_stage),
        ("confidence_histogram", store.confidence_histogram),
        ("refusal_reasons", store.refusal_reasons),
        ("most_asked", store.most_asked),
        ("sections_cited", store.sections_cited),
        ("sections_never_cited", lambda: store.sections_never_cited(None, sections)),
    ]


def bench_queries(db: Path, runs: int) -> None:
    with AuditStore(db) as store:
        print(f"explorer queries at {store.count_logs():,} rows ({runs} runs each; "
              f"target <= {TARGET_MS:.0f} ms p95):")
        for name, fn in query_cases(store):
            fn()
            p50, p95 = timed(fn, runs)
            flag = "" if p95 <= TARGET_MS else "  OVER TARGET"
            print(f"  {name:<24} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms{flag}")
        t0 = time.perf_counter()
        moved = store.archive(older_than_days=90)
        print(f"archive of {moved:,} rows older than 90 days: {time.perf_counter() - t0:.1f} s; "
              f"stats over hot + archive p95 "
              f"{timed(lambda: store.stats(include_archive=True), runs)[1]:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--dir", help="where the temporary folder goes (default: system temp)")
    args = parser.parse_args()
    responses = sample_responses()
    rng = random.Random(1)
    realistic = [varied(r, rng) for r in responses]
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-audit-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        bench_overhead(folder, realistic, args.records)
        bench_throughput(folder, realistic)
        db, size_10k = build_rows(folder, responses, args.rows)
        print(f"file size: {size_10k:.1f} MB per 10,000 rows (DuckDB file, after checkpoint)")
        bench_queries(db, args.runs)
        print(f"total bench time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
