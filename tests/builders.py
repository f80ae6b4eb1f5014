"""Builders the tests share: hand-made responses, pools and question sets, the AppTest driver,
loopback ports and a DuckDB file held by another process. Not a test module.

`python -m tests.builders DB COUNT` records COUNT answers into DB, printing each log id as soon as
record() returns (the SIGKILL test kills it mid-run)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from rag.config import PROJECT_ROOT
from rag.providers.base import Embedder
from rag.retrieval.hybrid import CandidatePool, rank_candidates
from rag.tuning.questions import Question
from rag.types import (
    Chunk,
    Citation,
    Confidence,
    Draft,
    Hit,
    Response,
    RetrievalSettings,
    Verdict,
)

SAMPLE_BOOK = PROJECT_ROOT / "data" / "book"
SAMPLE_QUESTIONS = PROJECT_ROOT / "data" / "eval" / "questions.yaml"
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
GOLDEN = Path(__file__).resolve().parent / "golden"
HAND_BOOK = ["a#1", "a#2", "a#3", "b#1", "b#2"]  # the sections of hand_set's pools


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data, or a skip when that data is not on this machine."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


def free_port() -> int:
    """A loopback port nothing listens on (yet)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def held_duckdb(path: Path) -> Iterator[subprocess.Popen]:
    """`path` opened read-write by another process for the duration, as another Folio would;
    kill() the yielded process to let go early."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('ready', flush=True); time.sleep(120)", str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=30)


MEASURE_PRELUDE = ("import atexit, resource, sys\natexit.register(lambda: print('maxrss_kb', "
                   "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))\n")
RUN_RAG = ("import runpy, sys\nsys.argv = ['rag', *sys.argv[1:]]\n"
           "runpy.run_module('rag', run_name='__main__')\n")


def run_measured(*args: str, code: str = RUN_RAG, timeout: float = 120
                 ) -> tuple[subprocess.CompletedProcess, float, int]:
    """`python -m rag ARGS` (or `python -c CODE ARGS`) with its wall time and its own peak RSS
    in KiB, which the child prints at exit (ru_maxrss of the child itself, not of the test)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURE_PRELUDE + code, *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - started
    return done, seconds, int(done.stderr.rsplit("maxrss_kb", 1)[1].split()[0])


class CountingEmbedder(Embedder):
    """The real embedder, counting the documents and queries it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.embedded, self.queries = inner, 0, 0
        self.name, self.model_id = inner.name, inner.model_id
        self.max_tokens, self.dim = inner.max_tokens, inner.dim

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return self.inner.count_tokens_batch(texts)

    def _embed_batch(self, texts: list[str], input_type: str) -> np.ndarray:
        if input_type == "document":
            self.embedded += len(texts)
        else:
            self.queries += len(texts)
        return self.inner._embed_batch(texts, input_type)


# -- PDF books, printed by Chromium at test time (no binary fixtures) -----------------------------

# A two-section chapter printed to PDF (tests/index, tests/app): bookmarks-free, so its
# sections come from font sizes; the second paragraph of "Zero Moment Point" is on page 2.
BALANCE_HTML = """<html><head><meta charset="utf-8"><title>Balance</title><style>
body{font:12pt serif} h1{font-size:26pt} h2{font-size:19pt} .turn{break-before:page}</style>
</head><body><h1>Balance Control</h1>
<p>Balance control keeps the centre of mass of a walking robot above its support polygon.</p>
<h2>Zero Moment Point</h2>
<p>The zero moment point is where the net ground reaction force acts on the sole.</p>
<p class="turn">The zero moment point must stay inside the support polygon, or the foot tips
over its edge.</p>
<h2>Capture Point</h2><p>The capture point is where the robot must step to come to rest.</p>
</body></html>"""


def print_pdf(html: str, out: Path, outline: bool = True, header_footer: bool = False) -> Path:
    """`html` printed to `out` by Debian's Chromium, or a skip when it is not installed. With
    `outline`, Chromium turns the headings into the PDF's bookmarks."""
    import shutil
    import tempfile

    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    work = Path(tempfile.mkdtemp(prefix="folio-pdf-"))
    try:
        (work / "page.html").write_text(html, encoding="utf-8")
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={work / 'profile'}", f"--print-to-pdf={out}",
             *(["--generate-pdf-document-outline"] if outline else []),
             *([] if header_footer else ["--no-pdf-header-footer"]),
             (work / "page.html").as_uri()], capture_output=True, text=True, timeout=180)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert out.is_file(), f"Chromium printed no PDF: {done.stderr[-2000:]}"
    return out


def pdf_with_bookmarks(count: int, nested: bool = False) -> bytes:
    """A one-page PDF with `count` bookmarks to its page, written directly (pypdf's
    add_outline_item takes 25 s for 20,000): "Section i", each an item of its own or, `nested`,
    every odd one the child of the one before it."""
    items = list(range(6, 6 + count))
    text = b"BT /F1 24 Tf 72 700 Td (Section 0) Tj ET BT /F1 12 Tf 72 660 Td " \
           b"(Balance control keeps the centre of mass above the support polygon.) Tj ET"
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R /Outlines 3 0 R >>",
               2: b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
               4: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
                  b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 "
                  b"/BaseFont /Helvetica >> >> >> >>",
               5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text)}
    top = items[::2] if nested else items
    objects[3] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
        top[0], top[-1], len(top))
    for n in items:
        i = n - 6
        child = nested and i % 2 == 1
        siblings = [n] if child else top
        k = 0 if child else i // 2 if nested else i
        links = b"".join([b" /Prev %d 0 R" % siblings[k - 1] if k else b"",
                          b" /Next %d 0 R" % siblings[k + 1] if k + 1 < len(siblings) else b"",
                          b" /First %d 0 R /Last %d 0 R /Count 1" % (n + 1, n + 1)
                          if nested and not child and n + 1 in items else b""])
        objects[n] = b"<< /Title (Section %d) /Parent %d 0 R /Dest [4 0 R /XYZ 0 %d 0]%s >>" % (
            i, n - 1 if child else 3, 720 - i % 2, links)
    out, offsets = bytearray(b"%PDF-1.7\n"), {}
    for n in sorted(objects):
        offsets[n] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (n, objects[n])
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in sorted(objects))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


# -- responses built straight from rag.types (no pipeline) ---------------------------------------

SETTINGS = {"w_dense": 0.85, "w_bm25": 0.15, "threshold": 0.6, "top_k": 5, "candidate_pool": 50,
            "embedder": "local", "llm": "extractive", "llm_model": "", "guardrail_mode": "hybrid",
            "book": "sample", "book_hash": "abc123"}


def make_chunk(i: int, chapter: str = "ch1", section: str | None = None) -> Chunk:
    return Chunk(chunk_id=f"c{i}", text=f"chunk text {i}", module_id="m1", chapter_id=chapter,
                 section_id=section or f"s{i}", section_title=f"Section {i}",
                 chapter_title="Chapter", heading_path=("Chapter", f"Section {i}"), stable=True,
                 page=i, ordinal=0, token_count=10)


def make_hit(text: str, section_id: str, blended: float = 0.5, chunk_id: str = "") -> Hit:
    """A selected hit of one PID-chapter section holding `text` (dense score = blended)."""
    chunk = Chunk(chunk_id=chunk_id or f"c-{section_id}", text=text, module_id="control",
                  chapter_id="pid-control", section_id=section_id, section_title=section_id.title(),
                  chapter_title="PID Control", heading_path=("PID Control",), stable=True,
                  page=None, ordinal=0, token_count=len(text.split()))
    return Hit(chunk, dense=blended, bm25_raw=0.0, bm25=0.0, blended=blended, rank=1,
               passed=True, selected=True)


def make_retrieval(question: str, n_candidates: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    chunks = tuple(make_chunk(i) for i in range(n_candidates))
    pool = CandidatePool(query=question, chunks=chunks,
                         dense=rng.uniform(0.3, 0.95, n_candidates).astype(np.float32),
                         bm25_raw=rng.uniform(0, 8, n_candidates).astype(np.float32),
                         bm25_max=8.0)
    return rank_candidates(pool, RetrievalSettings())


def make_citation(hit, marker: str = "S1") -> Citation:
    c = hit.chunk
    return Citation(marker=marker, text=f"[Source: {c.section_title}]", url="", chunk_id=c.chunk_id,
                    module_id=c.module_id, chapter_id=c.chapter_id, section_id=c.section_id,
                    section_title=c.section_title, page=c.page, excerpt=c.text,
                    confidence=hit.blended, stable=True)


def make_response(question: str = "What is a blended score?", *, status: str = "success",
                  answer: str = "It mixes dense and BM25 scores [S1].", score: float = 0.82,
                  timestamp: datetime | str | None = None, mode: str = "full-book",
                  reason_codes: tuple[str, ...] = (), provider: str = "extractive",
                  prompt: str = "Answer from the excerpts.", raw: str = "raw model text",
                  latency: tuple[float, float, float] = (40.0, 60.0, 100.0),
                  n_candidates: int = 8, seed: int = 0, cite: int = 1) -> Response:
    retrieval = make_retrieval(question, n_candidates, seed)
    level = "high" if score > 0.85 else "medium" if score >= 0.7 else "low"
    stamp = timestamp.isoformat() if isinstance(timestamp, datetime) else timestamp
    meta = {"query_id": f"q-{seed}", "timestamp": stamp or datetime.now(UTC).isoformat(),
            "question": question, "mode": mode, "mode_used": mode, "fallback_reason": None,
            "retrieval_query": question, "chunks_retrieved": len(retrieval.hits),
            "chunks_used": cite, "retrieval_latency_ms": latency[0],
            "synthesis_latency_ms": latency[1], "total_latency_ms": latency[2],
            "latency_ms": {"retrieval": latency[0], "synthesis": latency[1], "total": latency[2]},
            "llm_provider": provider, "llm_model": f"{provider}-model", "notices": ["a notice"]}
    verdicts = tuple(Verdict("confidence", code, "override", f"because {code}")
                     for code in reason_codes)
    return Response(
        answer=answer, citations=tuple(make_citation(h, f"S{i + 1}")
                                       for i, h in enumerate(retrieval.hits[:cite])),
        metadata=meta, validation={"guardrail_actions": list(reason_codes)},
        confidence=Confidence(retrieval=retrieval.best_score, generation=0.8, score=score,
                              level=level),
        status=status, retrieval=retrieval,
        draft=Draft(text=answer, markers=("S1",), generation_confidence=None, provider=provider,
                    model=f"{provider}-model", prompt=prompt, raw_response=raw),
        verdicts=verdicts, settings=dict(SETTINGS))


def make_error_response(message: str = "The question is empty; type a question.",
                        timestamp: str | None = None) -> Response:
    """What input validation returns: no retrieval, no draft, hardly any metadata."""
    meta = {"question": "", **({"timestamp": timestamp} if timestamp else {})}
    return Response(answer="", citations=(), metadata=meta, validation={},
                    confidence=Confidence(0.0, 0.0, 0.0, "low"), status="error",
                    error_message=message, error_stage="validate")


def record_forever(db: Path, count: int) -> None:
    """Record and print each returned log_id at once; the test SIGKILLs us mid-run."""
    from rag.audit.store import AuditStore

    store = AuditStore(db, flush_interval=0.02, batch_size=7)
    for i in range(count):
        log_id = store.record(make_response(f"question {i}", seed=i))
        print(log_id, flush=True)
    store.close()


# -- hand-built candidate pools for the sweep ----------------------------------------------------

def section_chunk(ref: str, n: int = 0) -> Chunk:
    chapter, _, section = ref.partition("#")
    return Chunk(chunk_id=f"{ref}/{n}", text="", module_id="m", chapter_id=chapter,
                 section_id=section, section_title=section, chapter_title=chapter,
                 heading_path=(), stable=True, page=None, ordinal=n, token_count=0)


def hand_pool(query: str, rows: list[tuple[str, float, float]], bm25_max: float) -> CandidatePool:
    """rows: (section ref, dense, raw BM25); a repeated ref is a second chunk of that section."""
    return CandidatePool(query, tuple(section_chunk(r, i) for i, (r, _, _) in enumerate(rows)),
                         np.array([d for _, d, _ in rows], dtype=np.float32),
                         np.array([b for _, _, b in rows], dtype=np.float32), bm25_max)


def hand_set() -> tuple[list[Question], list[CandidatePool]]:
    questions = [Question("How is a#2 explained?", ("a#2",), True),
                 Question("What does chapter b say?", ("b",), True),
                 Question("What is a recipe for bread?", (), False),
                 Question("Write a Python function that computes the ZMP.", (), False)]
    pools = [hand_pool(questions[0].question, [("a#1", .9, 0), ("a#2", .8, 2), ("a#2", .5, 4),
                                          ("b#1", .7, 1)], 4.0),
             hand_pool(questions[1].question, [("a#3", .6, 0), ("b#2", .5, 3), ("b#1", .4, 0)],
                       6.0),
             hand_pool(questions[2].question, [("a#1", .3, 1)], 1.0),
             hand_pool(questions[3].question, [("a#1", .9, 0)], 0.0)]
    return questions, pools


# -- AppTest ------------------------------------------------------------------------------------

APP = str(PROJECT_ROOT / "app.py")
TIMEOUT = 90


def keep_navigation_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest re-detects the legacy pages/ folder before every run, which would run page files
    without app.py on reruns. A real server decides once per process and st.navigation (plus
    pages.components.shared.ensure_router) switches that mode off, so do the same here."""
    original = PagesManager.__init__

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


def open_app(monkeypatch: pytest.MonkeyPatch, index_dir, audit_db, page: str = "",
             **env: str) -> AppTest:
    """app.py run once (optionally switched to `page`), with RAG_* pointing at temp dirs."""
    keep_navigation_mode(monkeypatch)
    monkeypatch.setenv("RAG_INDEX_DIR", str(index_dir))
    monkeypatch.setenv("RAG_AUDIT_DB", str(audit_db))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    if page:
        at.switch_page(page).run()
    return at


def markdown_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)



def open_book_page(monkeypatch, index_dir: Path, audit_db: Path, env: dict[str, str] | None = None,
                   **params: str) -> AppTest:
    """The app opened on the Book page with these query parameters (as a citation link sets)."""
    at = open_app(monkeypatch, index_dir, audit_db, **(env or {}))
    assert not at.exception, at.exception
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page("pages/book.py").run()
    assert not at.exception, at.exception
    return at

def ask(at: AppTest, question: str) -> AppTest:
    """Ask in the chat (switching to it first if needed) and fail on any uncaught exception."""
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return at


if __name__ == "__main__":
    record_forever(Path(sys.argv[1]), int(sys.argv[2]))


# -- a real `streamlit run` for the browser tests --------------------------------------------------

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium() -> str:
    """Debian's Chromium; a skip without it (a failure in CI, which installs it)."""
    import shutil

    path = shutil.which("chromium")
    if path:
        return path
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("Chromium is required in CI (apt-get install chromium, see .ci/run).")
    pytest.skip("Chromium is not installed here (Debian: apt-get install chromium); the browser "
                "test runs in CI.")


def wait_healthy(url: str, process: subprocess.Popen, timeout_s: float = 60,
                 path: str = "/_stcore/health", log: Path | None = None) -> None:
    """Wait until `url` + `path` answers 200 (Streamlit's health check by default); when the
    process exits first, the error carries the end of its `log`."""
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = f": {log.read_text()[-3000:]}" if log is not None and log.exists() else ""
            raise RuntimeError(f"{process.args[:3]} exited with code {process.returncode}{tail}")
        try:
            with urllib.request.urlopen(f"{url}{path}", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{url}{path} did not become healthy within {timeout_s:.0f} s")


def start_serve(port: int, env: dict[str, str], log, *options: str,
                **popen: Any) -> subprocess.Popen:
    """`python -m rag serve` on a loopback port, in a process group of its own (stop_group),
    its output into the open file `log`; `popen` adds to subprocess.Popen's arguments."""
    return subprocess.Popen(
        [sys.executable, "-m", "rag", "serve", "--port", str(port), "--log-level", "warning",
         *options], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True, **popen)


def stop_group(process: subprocess.Popen, timeout_s: float = 30) -> int | None:
    """SIGTERM the process group (a graceful shutdown), SIGKILL after timeout_s; the exit code."""
    import signal

    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    return process.returncode


@contextmanager
def streamlit_app(work: Path, **env: str) -> Iterator[str]:
    """`streamlit run app.py` on a free loopback port with its own index and audit file under
    `work` (env adds or, with "", removes variables); yields its URL; always terminated."""
    import signal

    port = free_port()
    environ = {**os.environ, "RAG_INDEX_DIR": str(work / "index"),
               "RAG_AUDIT_DB": str(work / "audit.duckdb"), "HF_HUB_OFFLINE": "1", **env}
    environ = {k: v for k, v in environ.items() if v != ""}
    log = open(work / "streamlit.log", "w")  # noqa: SIM115  (closed in finally)
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=PROJECT_ROOT, env=environ, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        stop_group(process, timeout_s=20)
        log.close()
        if process.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL):
            print((work / "streamlit.log").read_text()[-4000:])  # why it died, in the report


def refuse_network(context, allow) -> list[str]:
    """Route every request of a Playwright browser context: those whose URL `allow` accepts go
    on, the others are aborted and listed in the returned list (filled as the page loads)."""
    refused: list[str] = []

    def route(r) -> None:
        url = r.request.url
        if allow(url):
            r.continue_()
        else:
            refused.append(url)
            r.abort()

    context.route("**/*", route)
    return refused


def shoot(page, name: str, full_page: bool = False) -> None:
    """A screenshot of a Playwright page, tests/app/artifacts/<name>.png (git-ignored), for a
    person to look at."""
    artifacts = PROJECT_ROOT / "tests" / "app" / "artifacts"
    artifacts.mkdir(exist_ok=True)
    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=full_page)


@contextmanager
def launched_chromium():
    """Playwright driving Debian's Chromium (never `playwright install`); closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


# Book files built in code for the format readers (rag/book/formats): one small book of our own
# writing in DOCX, EPUB and a built HTML site, plus the pieces hostile-file tests assemble.
HANDBOOK_TITLE = "A Bicycle Workshop Handbook"
HANDBOOK = [  # (chapter title, chapter id, [(section title, section id, [paragraphs])])
    ("Tyres and Tubes", "tyres", [
        ("Choosing a Tyre", "choosing-a-tyre", [
            "A wider tyre rolls over rough ground with less effort than a narrow one.",
            "Tread matters only off road; on tarmac a slick tyre grips as well."]),
        ("Fixing a Puncture", "fixing-a-puncture", [
            "Find the hole by pumping the tube and listening for the hiss.",
            "Roughen the rubber around the hole before you spread the glue."]),
        ("Pressure", "pressure", [
            "A 28 mm road tyre wants about 80 psi for a rider of average weight.",
            "Lower pressure gives more grip and comfort at the cost of speed."])]),
    ("Brakes", "brakes", [
        ("Rim Brakes", "rim-brakes", [
            "Rim brakes squeeze the wheel rim between two rubber pads.",
            "Worn pads show no grooves; replace them before the metal shows."]),
        ("Disc Brakes", "disc-brakes", [
            "Disc brakes stop as well in the rain as in the dry.",
            "Keep oil away from the rotor, or the pads will glaze."]),
        ("Adjusting the Cable", "adjusting-the-cable", [
            "Turn the barrel adjuster anticlockwise to tighten a slack cable.",
            "The lever should stop a finger's width before the handlebar."])]),
    ("Gears", "gears", [
        ("Derailleurs", "derailleurs", [
            "The rear derailleur moves the chain across the cassette.",
            "Two limit screws stop the chain falling off either end."]),
        ("Indexing", "indexing", [
            "Indexing lines up each click of the shifter with one sprocket.",
            "A quarter turn of the barrel adjuster moves every gear a little."]),
        ("Chain Wear", "chain-wear", [
            "A chain stretches as its pins wear, about 0.5 mm per 100 links a year.",
            "Replace a chain at 0.75 percent wear to spare the cassette."])]),
]
HANDBOOK_TABLE = [("Tyre width", "Pressure"), ("25 mm", "90 psi"), ("28 mm", "80 psi"),
                  ("32 mm", "65 psi")]  # after the "pressure" section's paragraphs
HANDBOOK_STEPS = ["Loosen the anchor bolt.", "Pull the cable taut.", "Tighten the bolt again."]
HANDBOOK_CODE = "def gear_ratio(front: int, rear: int) -> float:\n    return front / rear"


def docx_bytes(build) -> bytes:
    """A .docx written by python-docx; `build(document)` adds its content."""
    import io

    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def handbook_docx() -> bytes:
    def build(document) -> None:
        document.core_properties.title = HANDBOOK_TITLE
        document.add_paragraph("How to keep a bicycle running, one job at a time.")
        for title, _, sections in HANDBOOK:
            document.add_heading(title, level=1)
            for section, section_id, paragraphs in sections:
                document.add_heading(section, level=2)
                for paragraph in paragraphs:
                    document.add_paragraph(paragraph)
                _docx_extra(document, section_id)

    return docx_bytes(build)


def _docx_extra(document, section_id: str) -> None:
    from docx.enum.style import WD_STYLE_TYPE

    if section_id == "pressure":
        table = document.add_table(rows=len(HANDBOOK_TABLE), cols=2)
        for r, row in enumerate(HANDBOOK_TABLE):
            for c, text in enumerate(row):
                table.cell(r, c).text = text
    elif section_id == "adjusting-the-cable":
        for step in HANDBOOK_STEPS:
            document.add_paragraph(step, style="List Number")
    elif section_id == "chain-wear":
        style = document.styles.add_style("Code", WD_STYLE_TYPE.PARAGRAPH)
        for line in HANDBOOK_CODE.split("\n"):
            document.add_paragraph(line, style=style)


def epub_bytes(chapters: list[tuple[str, str, str]], title: str = HANDBOOK_TITLE,
               toc_titles: list[str] | None = None) -> bytes:
    """An EPUB 3 (with an EPUB 2 NCX) written by ebooklib: chapters are (file name, title, body
    XHTML); the table of contents titles them `toc_titles` (default: their titles)."""
    import io
    import warnings

    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("handbook-1")
    book.set_title(title)
    book.set_language("en")
    items = []
    for file_name, chapter_title, body in chapters:
        item = epub.EpubHtml(title=chapter_title, file_name=file_name, lang="en")
        item.content = body
        book.add_item(item)
        items.append(item)
    names = toc_titles or [t for _, t, _ in chapters]
    book.toc = [epub.Link(i.file_name, name, i.id) for i, name in zip(items, names, strict=True)]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ebooklib's notices about its future defaults
        epub.write_epub(out, book)
    return out.getvalue()


def handbook_chapter_html(index: int, heading_tag: str = "h1") -> str:
    """One handbook chapter as plain semantic HTML with heading ids."""
    title, chapter_id, sections = HANDBOOK[index]
    html = [f'<{heading_tag} id="{chapter_id}">{title}</{heading_tag}>']
    for section, section_id, paragraphs in sections:
        html.append(f'<h2 id="{section_id}">{section}</h2>')
        html.extend(f"<p>{p}</p>" for p in paragraphs)
        if section_id == "pressure":
            head, *rows = HANDBOOK_TABLE
            html.append("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
                        + "</tr></thead><tbody>" + "".join(
                            "<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                            for row in rows) + "</tbody></table>")
        elif section_id == "adjusting-the-cable":
            html.append("<ol>" + "".join(f"<li>{step}</li>" for step in HANDBOOK_STEPS)
                        + "</ol>")
        elif section_id == "chain-wear":
            html.append(f'<pre><code class="language-python">{HANDBOOK_CODE}</code></pre>')
    return "\n".join(html)


def handbook_epub() -> bytes:
    return epub_bytes([(f"text/{cid}.xhtml", title, handbook_chapter_html(n))
                       for n, (title, cid, _) in enumerate(HANDBOOK)])


def zip_bytes(members: dict[str, bytes | str]) -> bytes:
    """A zip of `members` in the given order, `mimetype` stored uncompressed as EPUB wants."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in members.items():
            kind = zipfile.ZIP_STORED if path == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(path, data, compress_type=kind)
    return out.getvalue()


def site_page(title: str, main: str, pages: list[tuple[str, str]], depth: int = 0) -> str:
    """A page as mdBook 0.4 builds one: sidebar of `pages` (href, text), menu bar, the text in
    <main> with permalinked headings, previous/next links, and scripts."""
    up = "../" * depth
    links = "".join(f'<li class="chapter-item"><a href="{up}{href}">{text}</a></li>'
                    for href, text in pages)
    return f"""<!DOCTYPE HTML><html lang="en"><head><meta charset="UTF-8">
<title>{title} - {HANDBOOK_TITLE}</title><style>main {{ max-width: 40em }}</style>
<script>var path_to_root = "{up}";</script></head><body>
<nav id="sidebar" class="sidebar" aria-label="Table of contents">
<div class="sidebar-scrollbox"><ol class="chapter">{links}</ol></div></nav>
<div id="page-wrapper" class="page-wrapper"><div class="page">
<div id="menu-bar" class="menu-bar"><h1 class="menu-title">{HANDBOOK_TITLE}</h1>
<a href="{up}print.html" title="Print this book"><i class="fa fa-print"></i></a></div>
<div id="content" class="content"><main>
{main}
</main><nav class="nav-wrapper" aria-label="Page navigation">
<a rel="next" href="{up}{pages[-1][0]}" class="mobile-nav-chapters next">›</a></nav>
</div></div></div>
<!-- Livereload script (if served using the cli tool) -->
<script src="{up}book.js"></script></body></html>"""


def handbook_site() -> list[tuple[str, bytes]]:
    """The handbook as a built site: index first in its sidebar, chapters under chapters/ (so path
    order differs from the sidebar's), plus the search and 404 pages a generator writes."""
    nav = [("index.html", "Introduction"),
           *((f"chapters/{cid}.html", title) for title, cid, _ in HANDBOOK)]
    pages = [("index.html", site_page("Introduction", '<h1 id="introduction">'
              '<a class="header" href="#introduction">Introduction</a></h1>\n'
              "<p>How to keep a bicycle running, one job at a time.</p>", nav))]
    for n, (title, cid, _) in enumerate(HANDBOOK):
        main = handbook_chapter_html(n).replace(
            "</h2>", '<a class="headerlink" href="#" title="Permalink">¶</a></h2>')
        pages.append((f"chapters/{cid}.html", site_page(title, main, nav, depth=1)))
    pages.append(("404.html", site_page("Page not found", "<h1>Document not found</h1>", nav)))
    pages.append(("search.html", site_page("Search", "<h1>Search</h1>", nav)))
    return [(path, html.encode()) for path, html in pages]


@contextmanager
def uvicorn_thread(app, **options) -> Iterator[str]:
    """The ASGI `app` served by a real uvicorn (with rag serve's connection hygiene) in a thread
    of this process, on a free loopback port; yields its URL; stopped after."""
    import threading

    import uvicorn

    from rag.serve.server import GuardedH11

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, http=GuardedH11,
                                           log_level="warning", **options))
    thread = threading.Thread(target=server.run, daemon=True, name="uvicorn-test")
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)
