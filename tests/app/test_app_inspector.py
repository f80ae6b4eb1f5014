"""The retrieval inspector through AppTest: its table is exactly rag's ranking."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rag.retrieval.hybrid import collect_candidates, rank_candidates
from rag.types import RetrievalSettings
from tests.builders import markdown_text, open_app

QUESTION = "Why does a humanoid's heading estimate drift even though it can measure gravity?"
COMPARED = ["rank", "chunk_id", "dense", "bm25_raw", "bm25", "blended", "passed", "selected"]
pytestmark = pytest.mark.slow


@pytest.fixture()
def inspector(sample_settings, sample_index, monkeypatch):
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db,
                  page="pages/inspector.py")
    assert not at.exception, at.exception
    at.text_input(key="inspector_question").input(QUESTION).run()
    assert not at.exception, at.exception
    return at


def expected(index, settings: RetrievalSettings):
    return rank_candidates(collect_candidates(index, QUESTION, settings.candidate_pool), settings)


def assert_table_matches(table, retrieval) -> None:
    assert len(table) == len(retrieval.candidates)
    for row, hit in zip(table.to_dict("records"), retrieval.candidates, strict=True):
        assert row["chunk_id"] == hit.chunk.chunk_id
        assert row["rank"] == hit.rank
        for name in ("dense", "bm25_raw", "bm25", "blended"):
            assert row[name] == pytest.approx(getattr(hit, name), abs=1e-6)
        assert (row["passed"], row["selected"]) == (hit.passed, hit.selected)
        assert row["reason"] == hit.reason.replace("_", " ").replace("top k", "top-k")


def test_the_table_matches_rag_for_the_active_settings(inspector, sample_settings, sample_index):
    assert_table_matches(inspector.dataframe[0].value,
                         expected(sample_index, sample_settings.retrieval))
    assert "in the final top-k" in markdown_text(inspector)


def test_moving_sliders_reranks_like_rag(inspector, sample_settings, sample_index):
    inspector.slider(key="insp_w").set_value(0.5).run()
    inspector.slider(key="insp_t").set_value(0.4).run()
    inspector.slider(key="insp_k").set_value(3).run()
    settings = dataclasses.replace(sample_settings.retrieval, w_dense=0.5, threshold=0.4,
                                   top_k=3)
    assert_table_matches(inspector.dataframe[0].value, expected(sample_index, settings))
    assert any("BM25 weight = 1 − dense = **0.50**" in c.value for c in inspector.caption)


def test_a_new_pool_size_collects_candidates_again(inspector, sample_settings, sample_index):
    inspector.select_slider(key="insp_pool").set_value(10).run()
    settings = dataclasses.replace(sample_settings.retrieval, candidate_pool=10)
    assert_table_matches(inspector.dataframe[0].value, expected(sample_index, settings))


def test_selecting_a_candidate_shows_its_text_with_query_terms_marked(inspector):
    inspector.session_state["inspector_table"] = {
        "selection": {"rows": [2], "columns": [], "cells": []}}
    inspector.run()
    text = markdown_text(inspector)
    assert "Selected row: #3" in text
    assert "<mark>" in text and "folio-chunk" in text


def test_the_chart_has_both_contributions_and_the_threshold(inspector, sample_settings):
    figure = json.loads(inspector.get("plotly_chart")[0].proto.spec)
    assert [trace["name"] for trace in figure["data"]] == ["dense × weight", "BM25 × weight"]
    assert figure["layout"]["barmode"] == "stack"
    line = figure["layout"]["shapes"][0]
    threshold = sample_settings.threshold
    assert line["x0"] == line["x1"] == pytest.approx(threshold)
    assert figure["layout"]["annotations"][0]["text"] == f"threshold {threshold:.2f}"


def test_compare_marks_rank_changes(inspector, sample_settings, sample_index):
    inspector.toggle(key="insp_compare").set_value(True).run()
    inspector.slider(key="insp_w_b").set_value(0.3).run()
    assert not inspector.exception
    left, right = inspector.dataframe[0].value, inspector.dataframe[1].value
    b = expected(sample_index, dataclasses.replace(sample_settings.retrieval, w_dense=0.3))
    assert list(right["chunk_id"][:len(b.candidates)]) == [h.chunk.chunk_id
                                                           for h in b.candidates]
    assert set(right["change"]) <= {"=", "new", "dropped"} | {
        c for c in right["change"] if c[:1] in "↑↓"}
    assert (right["change"] != "=").any()
    assert len(left) == len(b.candidates)


def test_new_active_settings_become_the_defaults(inspector, monkeypatch):
    monkeypatch.setenv("RAG_DENSE_WEIGHT", "0.61")
    inspector.run()
    assert not inspector.exception
    assert any("Dense 0.61 · BM25 0.39" in c.value for c in inspector.sidebar.caption)
    assert inspector.slider(key="insp_w").value == pytest.approx(0.61)
