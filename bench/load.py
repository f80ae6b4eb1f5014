"""Load on the HTTP API over loopback: N concurrent clients asking the sample questions for T s.

    .venv/bin/python bench/load.py                    # 100 clients, 60 s, its own server
    .venv/bin/python bench/load.py --seconds 10 --clients 20
    .venv/bin/python bench/load.py --url http://127.0.0.1:8000 --key TOKEN   # a running server
    .venv/bin/python bench/load.py --baseline a43dd13   # that commit's server, then this one

With --baseline REV the same load runs first against the server of commit REV (its files taken
with `git archive` into a temporary folder, run with the same virtualenv and a copy of the same
index), then against this tree's, and both reports are printed with the ratios: a before and
after measured in the same run, on the same machine load.

Without --url it starts `python -m rag serve` on a free loopback port with the offline answerer,
a copy of the index (embedded Qdrant admits one process per folder), a fresh audit file and one
API key per client, so each client has its own rate limit (RAG_RATE_LIMIT, default 100/min):
429s then appear only when a client really asks faster than that. Each client asks in turn, one
question at a time, alternating JSON and Server-Sent Events answers.

Bounded: no request starts after --seconds or after --max-requests; one in flight may take at
most --timeout more seconds. Loopback only: another host is refused.

Reports throughput, p50/p95 latency (JSON and SSE), time to the first SSE byte, HTTP errors by
status (429s apart), transport errors, answers whose record says status "error", and (own
server) whether the audit holds exactly one row per answered question and the CPU time the
server's processes spent per answered question.
Target: 0 errors other than 429s the limits call for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from rag.serve.auth import is_loopback  # noqa: E402
from tests.builders import free_port, stop_group, wait_healthy  # noqa: E402

QUESTIONS = ROOT / "data" / "eval" / "questions.yaml"
START_TIMEOUT_S = 180.0


@dataclass
class Tally:
    latency_ms: dict[str, list[float]] = field(default_factory=lambda: {"json": [], "sse": []})
    first_byte_ms: list[float] = field(default_factory=list)
    http_status: Counter[int] = field(default_factory=Counter)
    record_status: Counter[str] = field(default_factory=Counter)
    transport: Counter[str] = field(default_factory=Counter)
    started: int = 0

    @property
    def answered(self) -> int:
        return self.http_status[200]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def load_questions(path: Path) -> list[str]:
    import yaml

    return [q["question"] for q in yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]]


def final_status(text: str) -> str:
    """The record's status from an SSE body ("no final event" when the stream broke off)."""
    for block in text.split("\n\n"):
        if block.startswith("event: final"):
            return json.loads(block.split("data: ", 1)[1])["status"]
        if block.startswith("event: error"):
            return "stream error"
    return "no final event"


async def ask_json(client: httpx.AsyncClient, body: dict, tally: Tally) -> None:
    t0 = time.perf_counter()
    reply = await client.post("/v1/ask", json=body)
    tally.http_status[reply.status_code] += 1
    if reply.status_code == 200:
        tally.latency_ms["json"].append((time.perf_counter() - t0) * 1000)
        tally.record_status[reply.json()["status"]] += 1


async def ask_sse(client: httpx.AsyncClient, body: dict, tally: Tally) -> None:
    t0 = time.perf_counter()
    first = None
    chunks = []
    async with client.stream("POST", "/v1/ask", json={**body, "stream": True}) as reply:
        async for chunk in reply.aiter_bytes():
            if first is None:
                first = time.perf_counter()
            chunks.append(chunk)
    tally.http_status[reply.status_code] += 1
    if reply.status_code == 200:
        tally.latency_ms["sse"].append((time.perf_counter() - t0) * 1000)
        tally.first_byte_ms.append(((first or time.perf_counter()) - t0) * 1000)
        tally.record_status[final_status(b"".join(chunks).decode())] += 1


async def one_client(number: int, url: str, token: str, questions: list[str], deadline: float,
                     budget: list[int], timeout_s: float, tally: Tally) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout_s) as client:
        turn = number
        while time.monotonic() < deadline and budget[0] > 0:
            budget[0] -= 1
            tally.started += 1
            body = {"question": questions[turn % len(questions)], "session_id": f"load-{number}"}
            try:
                if turn % 2:
                    await ask_sse(client, body, tally)
                else:
                    await ask_json(client, body, tally)
            except httpx.HTTPError as e:
                tally.transport[type(e).__name__] += 1
            turn += 1


async def run_load(url: str, tokens: list[str], clients: int, seconds: float, max_requests: int,
                   timeout_s: float) -> tuple[Tally, float]:
    questions = load_questions(QUESTIONS)
    tally = Tally()
    budget = [max_requests]
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(*(one_client(i, url, tokens[i % len(tokens)] if tokens else "",
                                      questions, deadline, budget, timeout_s, tally)
                           for i in range(clients)))
    return tally, time.monotonic() - started


def group_cpu_s(pgid: int) -> float:
    """User + system CPU seconds of every live process in a process group (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # after ")": state ppid pgrp ... utime(12) stime(13)
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def checkout(rev: str, into: Path) -> Path:
    """The files of commit `rev` (git archive: the repository is only read)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


class OwnServer:
    """`python -m rag serve` (from `root`) on a copy of the index, one key per client; stopped
    on exit."""

    def __init__(self, clients: int, index_dir: Path, concurrency: int | None,
                 root: Path = ROOT) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="folio-load-"))
        shutil.copytree(index_dir, self.work / "index", ignore=shutil.ignore_patterns(".lock"))
        self.tokens = [secrets.token_urlsafe(24) for _ in range(clients)]
        self.audit_db = self.work / "audit.duckdb"
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "RAG_INDEX_DIR": str(self.work / "index"), "RAG_LLM": "extractive",
               "RAG_AUDIT_DB": str(self.audit_db), "HF_HUB_OFFLINE": "1",
               "RAG_API_KEYS": ",".join(f"load-{i:03d}:{t}" for i, t in enumerate(self.tokens))}
        options = ("--concurrency", str(concurrency)) if concurrency else ()
        self.log = open(self.work / "serve.log", "w")  # noqa: SIM115  (closed in stop)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rag", "serve", "--port", str(port), "--log-level", "warning",
             *options], cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)

    def cpu_s(self) -> float:
        return group_cpu_s(self.process.pid)

    def wait_healthy(self) -> float:
        """Seconds until the server answered its health check."""
        t0 = time.monotonic()
        try:
            wait_healthy(self.url, self.process, START_TIMEOUT_S, "/v1/health",
                         self.work / "serve.log")
        except (RuntimeError, TimeoutError) as e:
            raise SystemExit(f"the server did not come up: {e}") from e
        return time.monotonic() - t0

    def stop(self) -> None:
        stop_group(self.process, timeout_s=60)
        self.log.close()

    def audit_rows(self) -> int:
        from rag.audit.store import AuditStore

        with AuditStore(self.audit_db) as store:
            store.flush()
            return store.count_logs()

    def cleanup(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)


def summary(tally: Tally, seconds: float, clients: int, cpu_s: float | None = None) -> dict:
    both = tally.latency_ms["json"] + tally.latency_ms["sse"]
    errors = {str(k): v for k, v in sorted(tally.http_status.items()) if k not in (200, 429)}
    return {
        "clients": clients, "seconds": round(seconds, 1), "requests": tally.started,
        "answered": tally.answered, "throughput_per_s": round(tally.answered / seconds, 2),
        "latency_ms": {kind: {"p50": round(percentile(v, 50)), "p95": round(percentile(v, 95)),
                              "n": len(v)}
                       for kind, v in (("all", both), *tally.latency_ms.items())},
        "sse_first_byte_ms": {"p50": round(percentile(tally.first_byte_ms, 50)),
                              "p95": round(percentile(tally.first_byte_ms, 95))},
        "http_errors": errors, "rate_limited_429": tally.http_status[429],
        "transport_errors": dict(tally.transport),
        "record_status": dict(tally.record_status),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "server_cpu_ms_per_answer": round(cpu_s * 1000 / tally.answered, 1)
        if cpu_s is not None and tally.answered else None,
    }


def print_report(report: dict) -> None:
    lat = report["latency_ms"]
    print(f"{report['clients']} clients for {report['seconds']} s: {report['answered']} answered "
          f"of {report['requests']} requests, {report['throughput_per_s']}/s")
    for kind in ("all", "json", "sse"):
        print(f"  latency {kind:>4}: p50 {lat[kind]['p50']} ms, p95 {lat[kind]['p95']} ms "
              f"(n={lat[kind]['n']})")
    fb = report["sse_first_byte_ms"]
    print(f"  first SSE byte: p50 {fb['p50']} ms, p95 {fb['p95']} ms")
    print(f"  HTTP errors (not 429): {report['http_errors'] or 0}; 429: "
          f"{report['rate_limited_429']}; transport errors: {report['transport_errors'] or 0}")
    print(f"  record status: {report['record_status']}; load average {report['load_average']}")
    if report.get("server_cpu_ms_per_answer") is not None:
        print(f"  server CPU per answered question: {report['server_cpu_ms_per_answer']} ms")
    if "audit_rows" in report:
        print(f"  audit rows: {report['audit_rows']} for {report['answered']} answered")


def measure(args: argparse.Namespace, root: Path = ROOT) -> dict:
    """One load run: against --url, or a server started from `root`."""
    if args.url:
        tally, seconds = asyncio.run(run_load(args.url, [args.key], args.clients, args.seconds,
                                              args.max_requests, args.timeout))
        return summary(tally, seconds, args.clients)
    server = OwnServer(args.clients, args.index, args.concurrency, root)
    try:
        print(f"server ({root.name}) ready in {server.wait_healthy():.1f} s", file=sys.stderr)
        cpu_before = server.cpu_s()
        tally, seconds = asyncio.run(run_load(server.url, server.tokens, args.clients,
                                              args.seconds, args.max_requests, args.timeout))
        report = summary(tally, seconds, args.clients, server.cpu_s() - cpu_before)
        server.stop()
        try:
            report["audit_rows"] = server.audit_rows()
        except Exception as e:  # noqa: BLE001  (the figures above still stand)
            report["audit_rows"] = f"not counted: {type(e).__name__}: {e}"
    finally:
        server.stop()
        server.cleanup()
    return report


def compare(before: dict, after: dict) -> dict:
    def ratio(a: float, b: float) -> float | None:
        return round(b / a, 2) if a else None

    return {"throughput_x": ratio(before["throughput_per_s"], after["throughput_per_s"]),
            "p95_ms": [before["latency_ms"]["all"]["p95"], after["latency_ms"]["all"]["p95"]],
            "cpu_ms_per_answer": [before.get("server_cpu_ms_per_answer"),
                                  after.get("server_cpu_ms_per_answer")]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=100_000)
    parser.add_argument("--timeout", type=float, default=60.0, help="per request, seconds")
    parser.add_argument("--url", help="a running server on this machine (default: start one)")
    parser.add_argument("--key", default="", help="bearer token for --url")
    parser.add_argument("--index", type=Path, default=ROOT / "data" / "index",
                        help="index to copy for the server this starts")
    parser.add_argument("--concurrency", type=int, help="the started server's --concurrency")
    parser.add_argument("--baseline", metavar="REV", help="first measure the server of this "
                        "commit, then this tree's (same run, same load)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if not (1 <= args.clients <= 1000 and 0 < args.seconds <= 600 and args.max_requests > 0):
        parser.error("--clients 1-1000, --seconds up to 600 and --max-requests > 0")
    if args.url and not is_loopback(urlparse(args.url).hostname or ""):
        parser.error(f"{args.url} is not a loopback address; this generator stays on this machine")
    if args.baseline and args.url:
        parser.error("--baseline starts both servers itself; leave out --url")
    reports = {}
    if args.baseline:
        folder = Path(tempfile.mkdtemp(prefix="folio-baseline-"))
        try:
            reports[f"before ({args.baseline})"] = measure(
                args, checkout(args.baseline, folder / "tree"))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    reports["after (this tree)" if args.baseline else "this tree"] = measure(args)
    if args.json:
        if args.baseline:
            reports["comparison"] = compare(*reports.values())
        print(json.dumps(reports, indent=2))
    else:
        for name, report in reports.items():
            print(f"== {name}")
            print_report(report)
        if args.baseline:
            print(f"== comparison: {compare(*reports.values())}")
    clean = all(not r["http_errors"] and not r["transport_errors"] for r in reports.values())
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
