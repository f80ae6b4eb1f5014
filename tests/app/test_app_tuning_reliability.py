"""The tuning page's retrieval reliability table shows "—", never None, for a confidence level
no question reached (a three-question set leaves most levels empty)."""

from __future__ import annotations

import shutil

import pytest

from rag.config import PROJECT_ROOT
from tests.builders import open_app

pytestmark = pytest.mark.slow
SMALL_SET = """questions:
  - question: "Why do most humanoids use absolute encoders rather than incremental ones?"
    expected_sections: ["proprioceptive-sensing#incremental-vs-absolute"]
  - question: "What does an incremental encoder output?"
    expected_sections: ["proprioceptive-sensing"]
  - question: "Who won the football World Cup in 1998?"
    in_scope: false
"""


def test_an_empty_level_reads_as_a_dash(sample_settings, sample_index, monkeypatch, tmp_path):
    shutil.copy(PROJECT_ROOT / "data" / "settings.toml", tmp_path / "settings.toml")
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "small.yaml").write_text(SMALL_SET, encoding="utf-8")
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb",
                  page="pages/tuning.py", RAG_SETTINGS=str(tmp_path / "settings.toml"),
                  RAG_EVAL_DIR=str(tmp_path / "eval"))
    next(b for b in at.button if b.key == "tuning_run").click().run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if {"level", "rate"} <= set(d.value.columns))
    empty = table[table["answered"] == 0]
    assert len(empty) >= 1  # three questions cannot fill every level
    assert list(empty["rate"]) == ["—"] * len(empty)
    answered = table[table["answered"] > 0]
    assert all(rate.endswith("%") for rate in answered["rate"])
    assert not table.isna().any().any()
