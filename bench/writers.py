"""Many writers, one audit (issue 15): the app, the API and a CLI loop answer at once into one
audit file while this process reads it like the explorer; one writer is SIGKILLed mid-run.
Passes when every answered question is in the audit exactly once.

    .venv/bin/python bench/writers.py [--seconds 60] [--api server|pipeline] [--kill app|api|cli]

Writers (each its own process, the sample book's index, the offline answerer):
  app   a Pipeline with an AuditStore answering the sample questions back to back (what the
        Streamlit app's cached pipeline does per question);
  api   `python -m rag serve` on a loopback port with a client process asking over HTTP
        (--api pipeline: a second Pipeline process instead);
  cli   `python -m rag ask QUESTION --json` in a loop (a new process per question).
Each answer's query_id is printed by the writer once the answer (and so its audit record) has
returned. This process reads meanwhile: an explorer refresh (count, first page, stats) every
0.5 s, and every 0.05 s a look-up of the answers not seen yet, to time how long an answered
question takes to become visible. The floor is the same explorer refresh once the writers have
stopped. Results go to stdout; the audit file is in a temporary folder (--keep to keep it).

Embedded Qdrant lets one process at a time open an index folder, so unless QDRANT_URL is set
each writer gets its own copy of the sample book's index (2 MB; the ONNX model is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from rag.audit.store import AuditStore  # noqa: E402
from rag.errors import AuditError  # noqa: E402

ROLES = ("app", "api", "cli")
REFRESH_S, LOOKUP_S = 0.5, 0.05
SERVER_START_S = 120.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def sample_questions() -> list[str]:
    from rag.tuning.questions import load_questions

    return [q.question for q in load_questions(ROOT / "data" / "eval" / "questions.yaml")]


def emit(query_id: str) -> None:
    print(json.dumps({"id": query_id, "t": time.time()}), flush=True)


def wait_for(go: Path) -> None:
    """Start answering only when every writer is up and the reader runs (the go file)."""
    while not go.exists():
        time.sleep(0.05)


# -- writer processes (run as `bench/writers.py --role ROLE`) ------------------------------------

def run_pipeline_writer(stop: Path, tag: str) -> None:
    """Answer the sample questions until the stop file appears, like the app does."""
    from rag.answer.pipeline import Pipeline
    from rag.config import load_settings
    from rag.index.load import load_index
    from rag.providers.registry import get_llm

    settings = load_settings()
    index, _ = load_index(settings)
    store = AuditStore(settings.audit_db)
    pipeline = Pipeline(index, settings, get_llm(settings), store)
    questions = sample_questions()
    print("ready", flush=True)
    wait_for(stop.with_name("go"))
    i = 0
    while not stop.exists():
        response = pipeline.answer(questions[i % len(questions)], session_id=tag)
        emit(str(response.metadata["query_id"]))
        i += 1
    store.close()


def run_api_client(stop: Path, url: str) -> None:
    """Ask the server one question at a time until the stop file appears."""
    questions = sample_questions()
    print("ready", flush=True)
    wait_for(stop.with_name("go"))
    i = 0
    while not stop.exists():
        body = json.dumps({"question": questions[i % len(questions)],
                           "session_id": "bench-api"}).encode()
        request = urllib.request.Request(f"{url}/v1/ask", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        i += 1
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                record = json.loads(reply.read())
        except OSError:  # the server was killed, or refused: nothing was answered
            time.sleep(0.2)
            continue
        if record.get("query_id"):
            emit(str(record["query_id"]))


# -- the run ------------------------------------------------------------------------------------

class Writer:
    """One writer process (or, for the CLI, a loop of processes) and the answers it printed."""

    def __init__(self, role: str) -> None:
        self.role, self.answers, self.proc = role, {}, None
        self.killed = False

    def start(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env, cwd=ROOT)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"the {self.role} writer did not start (exit {self.proc.poll()})")
        threading.Thread(target=self._collect, args=(self.proc,), daemon=True).start()

    def _collect(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            if line.endswith("\n") and line.startswith("{"):
                item = json.loads(line)
                self.answers[item["id"]] = item["t"]


def run_cli_loop(writer: Writer, stop: Path, env: dict[str, str]) -> None:
    questions = sample_questions()
    wait_for(stop.with_name("go"))
    i = 0
    while not stop.exists():
        proc = subprocess.Popen([sys.executable, "-m", "rag", "ask", questions[i % len(questions)],
                                 "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=env, cwd=ROOT)
        writer.proc = proc
        out, _ = proc.communicate()
        i += 1
        if proc.returncode in (0, 1) and out.strip():
            writer.answers[json.loads(out)["metadata"]["query_id"]] = time.time()


def start_server(env: dict[str, str], folder: Path) -> tuple[subprocess.Popen, str]:
    from tests.builders import free_port, start_serve, wait_healthy  # the tests' serve helpers

    port = free_port()
    log = open(folder / "server.log", "w")  # noqa: SIM115  (closed with the process)
    proc = start_serve(port, env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, SERVER_START_S, "/v1/health", folder / "server.log")
    except (RuntimeError, TimeoutError) as e:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"the API server did not come up; see {folder / 'server.log'}") from e
    return proc, url


def prepare(env: dict[str, str]) -> None:
    """Build the sample book's index if needed (and warm the model cache), unlogged."""
    done = subprocess.run([sys.executable, "-m", "rag", "ask", "What is a humanoid robot?",
                           "--no-audit", "--json"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=900)
    if done.returncode not in (0, 1):
        raise SystemExit(f"`rag ask` failed; is the sample book indexed?\n{done.stderr[-2000:]}")


def role_env(env: dict[str, str], folder: Path, role: str) -> dict[str, str]:
    """The environment of one writer: its own copy of the index unless Qdrant is a server."""
    if env.get("QDRANT_URL"):
        return env
    from rag.config import load_settings
    from rag.providers.registry import onnx_cache_dir

    settings = load_settings()
    copy = folder / f"index-{role}"
    shutil.copytree(settings.index_dir, copy, ignore=shutil.ignore_patterns("onnx"))
    return {**env, "RAG_INDEX_DIR": str(copy), "RAG_ONNX_DIR": str(onnx_cache_dir(settings))}


def read_loop(store: AuditStore, writers: list[Writer], seconds: float, kill: Writer,
              report: dict) -> None:
    """Explorer refreshes and visibility look-ups until the time is up; kill `kill` halfway."""
    refresh, lookup, visible, errors = [], [], {}, []
    (store.db_path.parent / "go").touch()
    start = time.monotonic()
    next_refresh = start
    while (now := time.monotonic()) - start < seconds:
        if not kill.killed and now - start >= seconds / 2 and kill.proc is not None:
            kill.proc.send_signal(signal.SIGKILL)
            kill.killed = True
        answered = {q: t for w in writers for q, t in list(w.answers.items())}
        unseen = [q for q in answered if q not in visible]
        try:
            began = time.perf_counter()
            found = store.query_counts(unseen) if unseen else {}
            lookup.append(time.perf_counter() - began)
            seen_at = time.time()
            visible.update({q: seen_at - answered[q] for q in found})
            if now >= next_refresh:
                began = time.perf_counter()
                store.count_logs()
                store.query_logs(limit=50)
                store.stats()
                refresh.append(time.perf_counter() - began)
                next_refresh = now + REFRESH_S
        except AuditError as e:
            errors.append(str(e))
        time.sleep(LOOKUP_S)
    report.update(refresh=refresh, lookup=lookup, visible=visible, errors=errors)


def stop_all(writers: list[Writer], stop: Path, server: subprocess.Popen | None,
             cli_thread: threading.Thread) -> None:
    stop.touch()
    for w in writers:
        if w.proc is not None and w.role != "cli":
            try:
                w.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                w.proc.kill()
    cli_thread.join(timeout=120)
    if server is not None and server.poll() is None:
        server.send_signal(signal.SIGTERM)  # a clean shutdown imports what it spooled
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def check(db: Path, writers: list[Writer]) -> dict:
    """After everyone stopped: import what is left, then count rows per answered query id."""
    with AuditStore(db) as store:
        store.flush()
        floor = []
        for _ in range(10):
            began = time.perf_counter()
            store.count_logs()
            store.query_logs(limit=50)
            store.stats()
            floor.append(time.perf_counter() - began)
    with duckdb.connect(str(db), read_only=True) as con:
        counts = dict(con.execute("SELECT query_id, count(*) FROM audit_logs GROUP BY 1")
                      .fetchall())
    answered = [q for w in writers for q in w.answers]
    spool = [p for p in db.with_name(f"{db.stem}.spool").glob("*.jsonl") if p.stat().st_size]
    return {"floor": floor, "rows": sum(counts.values()), "answered": len(answered),
            "missing": [q for q in answered if q not in counts],
            "duplicated": [q for q in answered if counts.get(q, 0) > 1],
            "unreported": len(set(counts) - set(answered)), "spool_left": len(spool)}


def print_report(args: argparse.Namespace, writers: list[Writer], report: dict, result: dict,
                 api_mode: str, elapsed: float) -> bool:
    ms = 1000.0
    print(f"writers: app, api ({api_mode}), cli; {args.kill} SIGKILLed at "
          f"{args.seconds / 2:.0f} s; run {elapsed:.1f} s")
    for w in writers:
        print(f"  {w.role:>3}: {len(w.answers):5d} answered{'  (killed)' if w.killed else ''}")
    print(f"audit rows {result['rows']}, answered {result['answered']} "
          f"({result['answered'] / elapsed:.1f} answered rows/s); missing "
          f"{len(result['missing'])}, duplicated {len(result['duplicated'])}; rows logged but "
          f"not reported (in flight at the kill) {result['unreported']}; spool segments left "
          f"{result['spool_left']}")
    r, lk, fl = report["refresh"], report["lookup"], result["floor"]
    print(f"explorer refresh during the run: p50 {pct(r, .5) * ms:.0f} ms, p95 "
          f"{pct(r, .95) * ms:.0f} ms ({len(r)} refreshes); floor after the run: p50 "
          f"{pct(fl, .5) * ms:.0f} ms, p95 {pct(fl, .95) * ms:.0f} ms")
    print(f"look-up of unseen answers: p50 {pct(lk, .5) * ms:.0f} ms, p95 "
          f"{pct(lk, .95) * ms:.0f} ms ({len(lk)} look-ups); read errors {len(report['errors'])}")
    delays = list(report["visible"].values())
    if delays:
        print(f"answered -> visible to this reader: p50 {pct(delays, .5) * ms:.0f} ms, p95 "
              f"{pct(delays, .95) * ms:.0f} ms, max {max(delays) * ms:.0f} ms "
              f"({len(delays)} answers; look-ups every {LOOKUP_S * ms:.0f} ms)")
    ok = not result["missing"] and not result["duplicated"] and not report["errors"]
    print("PASS: every answered question is in the audit exactly once" if ok else
          "FAIL: " + ("answers lost or duplicated" if result["missing"] or result["duplicated"]
                      else "reads failed: " + report["errors"][0]))
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--api", choices=("server", "pipeline"), default="server")
    parser.add_argument("--kill", choices=ROLES, default="app")
    parser.add_argument("--keep", action="store_true", help="keep the audit folder")
    parser.add_argument("--role", choices=("app", "api", "api-client"), help=argparse.SUPPRESS)
    parser.add_argument("--stop", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "api-client":
        run_api_client(args.stop, args.url)
        return 0
    if args.role:
        run_pipeline_writer(args.stop, args.role)
        return 0
    if not 5 <= args.seconds <= 600:
        parser.error("--seconds must be between 5 and 600")
    folder = Path(tempfile.mkdtemp(prefix="folio-writers-"))
    try:
        return run(args, folder)
    finally:
        if args.keep:
            print(f"audit kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace, folder: Path) -> int:
    db, stop = folder / "audit.duckdb", folder / "stop"
    env = {**os.environ, "RAG_AUDIT_DB": str(db), "HF_HUB_OFFLINE": "1",
           "RAG_RATE_LIMIT": "1000000", "PYTHONPATH": str(ROOT)}
    prepare(env)
    writers = {role: Writer(role) for role in ROLES}
    me = [sys.executable, str(Path(__file__).resolve())]
    writers["app"].start([*me, "--role", "app", "--stop", str(stop)],
                         role_env(env, folder, "app"))
    server, api_mode, api_env = None, args.api, role_env(env, folder, "api")
    if args.api == "server":
        try:
            server, url = start_server(api_env, folder)
            writers["api"].start([*me, "--role", "api-client", "--stop", str(stop), "--url", url],
                                 env)
        except RuntimeError as e:
            print(f"note: {e}; using a Pipeline process as the API writer", file=sys.stderr)
            api_mode = "pipeline"
    if api_mode == "pipeline":
        writers["api"].start([*me, "--role", "api", "--stop", str(stop)], api_env)
    cli_thread = threading.Thread(target=run_cli_loop,
                                  args=(writers["cli"], stop, role_env(env, folder, "cli")),
                                  daemon=True)
    cli_thread.start()
    kill = writers[args.kill]
    if args.kill == "api" and server is not None:
        kill = Writer("api-server")
        kill.proc = server
    report: dict = {}
    started = time.monotonic()
    with AuditStore(db) as reader:
        read_loop(reader, list(writers.values()), args.seconds, kill, report)
        stop_all(list(writers.values()), stop, server, cli_thread)
    elapsed = time.monotonic() - started
    if kill.role == "api-server":
        writers["api"].killed = kill.killed
    result = check(db, list(writers.values()))
    return 0 if print_report(args, list(writers.values()), report, result, api_mode,
                             elapsed) else 1


if __name__ == "__main__":
    sys.exit(main())
