"""`python -m rag ingest` and `search` as a user runs them: subprocesses, JSON, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag.index.vectors import open_store
from tests.builders import GOLDEN, PROJECT_ROOT, SAMPLE_BOOK

INGEST_KEYS = {"book", "files", "sections", "chunks", "embedded", "reused", "removed",
               "unstable_ids", "skipped_files", "seconds"}
SETTINGS_KEYS = {"w_dense", "w_bm25", "threshold", "top_k", "candidate_pool", "embedder"}
ENTRY_KEYS = {"chunk_id", "module_id", "chapter_id", "section_id", "section_title", "stable",
              "page", "dense", "bm25_raw", "bm25", "blended", "passed", "rank", "text"}


def rag_cli(*args: str | bytes | Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "QDRANT_"))}
    env.update(HF_HUB_OFFLINE="1", RAG_SETTINGS=str(PROJECT_ROOT / "data" / "settings.toml"))
    argv = [a if isinstance(a, bytes) else str(a) for a in args]
    return subprocess.run([sys.executable, "-m", "rag", *argv], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def assert_user_error(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.fixture(scope="module")
def cli_index(sample_index, sample_settings, tmp_path_factory) -> Path:
    """A copy of the session's built sample index: this process holds the original's lock."""
    target = tmp_path_factory.mktemp("cli") / "index"
    shutil.copytree(sample_settings.index_dir, target, ignore=shutil.ignore_patterns(".lock"))
    return target


@pytest.fixture(scope="module")
def search_result(cli_index) -> dict:
    result = rag_cli("search", "How does a Kalman filter weigh its prediction against a "
                     "measurement?", "--book", SAMPLE_BOOK, "--index", cli_index,
                     "--top-k", "3", "--dense-weight", "0.85", "--threshold", "0.4", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_ingest_json_on_an_up_to_date_index(cli_index) -> None:
    result = rag_cli("ingest", "--book", SAMPLE_BOOK, "--index", cli_index, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert INGEST_KEYS <= set(data)
    assert data["book"] == str(SAMPLE_BOOK)
    assert (data["embedded"], data["removed"]) == (0, 0)
    assert data["reused"] == data["chunks"] > 0 and data["files"] == 20
    assert data["unstable_ids"] >= 1 and data["skipped_files"] == []
    assert isinstance(data["seconds"], float)


@pytest.mark.slow
def test_ingest_json_reports_skipped_files(tmp_path: Path) -> None:
    result = rag_cli("ingest", "--book", GOLDEN / "books" / "malformed", "--index",
                     tmp_path / "index", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["files"], data["sections"], data["chunks"], data["embedded"]) == (1, 1, 1, 1)
    assert [set(f) for f in data["skipped_files"]] == [{"path", "reason"}] * 3
    assert {f["path"] for f in data["skipped_files"]} == {
        "part/broken-frontmatter.md", "part/latin1.md", "part/list-frontmatter.md"}


@pytest.mark.slow
def test_ingest_text_output_names_what_to_fix(tmp_path: Path) -> None:
    result = rag_cli("ingest", "--book", GOLDEN / "books" / "duplicates", "--index",
                     tmp_path / "index")
    assert result.returncode == 0, result.stderr
    assert "skipped mod/b.md: chapter id 'shared'" in result.stdout
    assert "duplicate: mod/anchors.md: anchor {#same} on line 10 repeats line 6" in result.stdout
    assert "sections have derived anchors" in result.stdout and "--report lists them" in \
        result.stdout
    report = rag_cli("ingest", "--report", "--book", GOLDEN / "books" / "duplicates", "--index",
                     tmp_path / "index")
    assert report.returncode == 0, report.stderr
    assert "  derived: mod/anchors.md" in report.stdout


def test_strict_stops_before_indexing_with_exit_2(tmp_path: Path) -> None:
    result = rag_cli("ingest", "--book", GOLDEN / "books" / "duplicates", "--index",
                     tmp_path / "index", "--strict", "--json")
    assert_user_error(result, "--strict: nothing was indexed")
    assert "mod/b.md: chapter id 'shared' in module 'mod' is already used by mod/a.md" \
        in result.stderr
    assert "anchor {#same} on line 10 repeats line 6" in result.stderr
    assert not (tmp_path / "index").exists()


def test_strict_passes_a_clean_book(cli_index) -> None:
    result = rag_cli("ingest", "--book", SAMPLE_BOOK, "--index", cli_index, "--strict")
    assert result.returncode == 0, result.stderr


def test_missing_book_is_exit_2(tmp_path: Path) -> None:
    for command in (["ingest"], ["search", "balance"]):
        result = rag_cli(*command, "--book", tmp_path / "nowhere", "--index", tmp_path / "i")
        assert_user_error(result, "does not exist; pass --book DIR or set RAG_BOOK")


def test_empty_book_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "book").mkdir()
    result = rag_cli("ingest", "--book", tmp_path / "book", "--index", tmp_path / "i")
    assert_user_error(result, "has no Markdown (.md, .mdx), PDF, DOCX, EPUB or HTML files")


@pytest.mark.parametrize(("query", "message"), [
    ("   ", "The question is empty"),
    ("x" * 1001, "the limit is 1000"),
    (b"caf\xe9 \xff robots", "not valid UTF-8"),  # raw bytes on the command line
])
def test_bad_query_is_exit_2(cli_index, query: str | bytes, message: str) -> None:
    result = rag_cli("search", query, "--book", SAMPLE_BOOK, "--index", cli_index, "--json")
    assert_user_error(result, message)


def test_bad_weight_is_exit_2(cli_index) -> None:
    result = rag_cli("search", "balance", "--book", SAMPLE_BOOK, "--index", cli_index,
                     "--dense-weight", "1.4")
    assert_user_error(result, "Dense weight 1.4 must be between 0 and 1")


def test_search_json_shape(search_result: dict) -> None:
    data = search_result
    assert {"query", "settings", "candidates", "hits"} <= set(data)
    assert data["query"].startswith("How does a Kalman filter")
    assert set(data["settings"]) >= SETTINGS_KEYS
    s = data["settings"]
    assert (s["w_dense"], s["w_bm25"], s["threshold"], s["top_k"], s["embedder"]) == \
        (0.85, 0.15, 0.4, 3, "local")
    assert s["candidate_pool"] == 50
    for entry in data["candidates"] + data["hits"]:
        assert ENTRY_KEYS <= set(entry)


def test_search_json_candidates_sorted_and_hits_consistent(search_result: dict) -> None:
    candidates, hits = search_result["candidates"], search_result["hits"]
    blended = [c["blended"] for c in candidates]
    assert blended == sorted(blended, reverse=True) and len(candidates) >= 50
    assert [c["rank"] for c in candidates] == list(range(1, len(candidates) + 1))
    assert 1 <= len(hits) <= 3
    assert all(h["passed"] and h["blended"] >= search_result["settings"]["threshold"]
               for h in hits)
    assert len({(h["chapter_id"], h["section_id"]) for h in hits}) == len(hits)
    assert hits[0]["chapter_id"] == "sensor-fusion" and hits[0]["section_id"] == "kalman-intuition"
    settings = search_result["settings"]
    w, w_terms = settings["w_dense"], settings["w_terms"]
    assert search_result["query_type"] == "conceptual" and settings["rerank"] == "off"
    for c in candidates:  # the blend as shown: (1 - signal weights) x hybrid + w x term match
        hybrid = w * c["dense"] + (1 - w) * c["bm25"]
        assert c["blended"] == pytest.approx((1 - w_terms) * hybrid + w_terms * c["terms"],
                                             abs=2e-6)


@pytest.mark.slow
def test_search_text_output(cli_index) -> None:
    result = rag_cli("search", "What does a lidar do badly on a legged robot?", "--book",
                     SAMPLE_BOOK, "--index", cli_index, "--threshold", "0.3")
    assert result.returncode == 0, result.stderr
    assert "exteroceptive-sensing#lidar" in result.stdout
    assert "(threshold 0.3, * = selected)" in result.stdout


def test_index_in_use_by_this_process_is_refused_to_the_cli(tmp_path: Path) -> None:
    store = open_store(tmp_path / "index")
    try:
        result = rag_cli("ingest", "--book", GOLDEN / "books" / "ids", "--index",
                         tmp_path / "index")
    finally:
        store.close()
    assert result.returncode == 1
    assert "in use by another Folio process" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_built_index_held_by_another_process_is_searched_through_a_copy(sample_index,
                                                                         sample_index_dir
                                                                         ) -> None:
    """The app (here: this test process) holds the embedded store; `rag search` and `rag ask`
    in another process answer from a read-only copy instead of failing, and say so."""
    assert sample_index.store.copy_of == ""  # this process holds the real store
    question = "What does a lidar do badly on a legged robot?"
    for command in (("search", question), ("ask", question, "--no-audit")):
        result = rag_cli(*command, "--book", SAMPLE_BOOK, "--index", sample_index_dir, "--json")
        assert result.returncode == 0, result.stderr
        assert "in use by another Folio process: searching a read-only copy" in result.stderr
        assert '"section_id": "lidar"' in result.stdout  # found, and cited by `ask`


def test_a_copy_of_the_store_refuses_to_be_written(sample_index, sample_index_dir) -> None:
    probe = ("import sys, numpy as np\nfrom rag.index.vectors import open_store\n"
             "from rag.errors import BookIndexError\n"
             "store = open_store(sys.argv[1], read_only=True)\nprint('copy of', store.copy_of)\n"
             "try:\n    store.upsert('x', ['a'], np.zeros((1, 3), 'float32'), [{}])\n"
             "except BookIndexError as e:\n    print('refused:', e)")
    out = subprocess.run([sys.executable, "-c", probe, str(sample_index_dir)], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "copy of " + str((sample_index_dir / "qdrant").resolve()) in out.stdout
    assert "refused: The index at" in out.stdout and "in use by another Folio process" in out.stdout
