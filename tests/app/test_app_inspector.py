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
    assert "**At dense 0.50 · threshold 0.40 · top-k 3:" in markdown_text(inspector)


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
    # the active settings weigh term match in (w_terms), so its part is stacked too
    names = ["dense × weight", "BM25 × weight"] + (["term match × weight"]
                                                   if sample_settings.w_terms else [])
    assert [trace["name"] for trace in figure["data"]] == names
    # stacked; "relative" draws a negative part (a section of another numbered part) leftwards
    assert figure["layout"]["barmode"] == "relative"
    assert figure["layout"]["xaxis"]["range"][0] == 0  # no negative part for this question
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



def weight_used(at) -> float:
    """The dense weight the single view's ranking was made with, as its caption states it."""
    caption = next(c.value for c in at.caption if c.value.startswith("BM25 weight"))
    return round(1 - float(caption.rsplit("**", 2)[-2]), 2)


def shown(at, key: str, before: float) -> float:
    """What a browser's slider shows after a run. Streamlit's frontend keeps the value it has
    unless the server's element says set_value; then it moves to the element's value."""
    proto = at.slider(key=key).proto
    return proto.value[0] if proto.set_value else before


def test_reset_moves_every_slider_and_they_stay_in_step(inspector, sample_settings,
                                                       sample_index):
    """After "Reset to active settings" each slider shows the value the table was ranked with,
    and the next change to another control does not bring the old values back."""
    s = sample_settings.retrieval
    moved = {"insp_w": 0.4, "insp_t": 0.5, "insp_k": 3}
    for key, value in moved.items():
        inspector.slider(key=key).set_value(value).run()
    next(b for b in inspector.button if b.label == "Reset to active settings").click().run()
    assert not inspector.exception
    active = {"insp_w": s.w_dense, "insp_t": s.threshold, "insp_k": s.top_k}
    browser = {key: shown(inspector, key, moved[key]) for key in moved}
    assert browser == pytest.approx(active)
    assert weight_used(inspector) == pytest.approx(s.w_dense)
    assert_table_matches(inspector.dataframe[0].value, expected(sample_index, s))

    for key, value in browser.items():  # the browser sends what it shows with the next change
        inspector.slider(key=key).set_value(value)
    inspector.slider(key="insp_k").set_value(4).run()
    browser = {key: shown(inspector, key, browser[key]) for key in ("insp_w", "insp_t")}
    assert browser == pytest.approx({"insp_w": s.w_dense, "insp_t": s.threshold})
    assert weight_used(inspector) == pytest.approx(s.w_dense)
    assert_table_matches(inspector.dataframe[0].value,
                         expected(sample_index, dataclasses.replace(s, top_k=4)))


def test_the_text_view_and_reasons_are_words_not_raw_codes(sample_settings, sample_index,
                                                           monkeypatch):
    """The chunk reader renders the book's markdown (no `**stance phase**`) and names why a
    candidate was left out in words ("beyond top-k", never "beyond_top_k")."""
    question = "What is the stance phase of a gait cycle?"
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db,
                  page="pages/inspector.py")
    at.text_input(key="inspector_question").input(question).run()
    ranked = rank_candidates(collect_candidates(sample_index, question,
                                                sample_settings.candidate_pool),
                             sample_settings.retrieval)
    bold = next(h.rank - 1 for h in ranked.candidates if "**stance phase**" in h.chunk.text)
    at.session_state["inspector_table"] = {"selection": {"rows": [bold], "columns": [],
                                                         "cells": []}}
    at.run()
    reader = next(m.value for m in at.markdown if "folio-chunk" in m.value)
    assert "**" not in reader and "<strong><mark>stance</mark>" in reader
    left_out = next(h for h in ranked.candidates if h.reason == "beyond_top_k")
    at.session_state["inspector_table"] = {"selection": {"rows": [left_out.rank - 1],
                                                         "columns": [], "cells": []}}
    at.run()
    captions = [c.value for c in at.caption if c.value.startswith(("Defaults", "dense"))]
    assert len(captions) == 2 and "beyond top-k" in captions[1]
    assert not [w for c in captions for w in c.split("`")[0].split() if "_" in w], captions


def test_term_match_and_reranking_show_as_their_own_columns(inspector, sample_settings,
                                                            sample_index):
    """The signal and re-rank columns hold exactly rag's numbers, and the blended score is the
    sum of the parts the chart stacks."""
    inspector.slider(key="insp_terms").set_value(0.2).run()
    inspector.selectbox(key="insp_rerank").set_value("offline").run()
    assert not inspector.exception, inspector.exception
    from rag.retrieval.rerank import rerank

    s = dataclasses.replace(sample_settings.retrieval, w_terms=0.2, rerank="offline")
    pool = collect_candidates(sample_index, QUESTION, s.candidate_pool)
    want = rerank(rank_candidates(pool, s), pool, sample_index)
    table = inspector.dataframe[0].value
    assert_table_matches(table, want)
    for row, hit in zip(table.to_dict("records"), want.candidates, strict=True):
        assert row["terms"] == pytest.approx(hit.terms, abs=1e-6)
        shown = (1 - 0.2) * (s.w_dense * hit.dense + s.w_bm25 * hit.bm25) + 0.2 * hit.terms
        assert row["blended"] == pytest.approx(shown, abs=1e-5)
        if hit.rerank is None:
            assert row["rerank"] != row["rerank"] or row["rerank"] is None  # NaN / empty
        else:
            assert row["rerank"] == pytest.approx(hit.rerank, abs=1e-6)
            assert row["rank_before"] == hit.rank_before
    assert any(h.rerank is not None for h in want.candidates)
    assert "Question type: **Conceptual** (rules)" in " ".join(c.value
                                                               for c in inspector.caption)


def test_reset_brings_the_stage_controls_back(inspector, sample_settings):
    inspector.slider(key="insp_terms").set_value(0.5).run()
    inspector.selectbox(key="insp_rerank").set_value("offline").run()
    next(b for b in inspector.button if b.label == "Reset to active settings").click().run()
    assert inspector.slider(key="insp_terms").value == sample_settings.w_terms
    assert inspector.selectbox(key="insp_rerank").value == sample_settings.rerank
