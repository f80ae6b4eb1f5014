"""A settings.toml with wrongly typed or out-of-range values: one sentence naming the key, exit 2,
never a traceback; and a title that belongs to the book being asked about."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.config import PROJECT_ROOT, load_settings
from rag.errors import ConfigError

WRONG = [  # (settings.toml text, what the message must say)
    ('[retrieval]\ntop_k = "5"', '[retrieval] top_k must be a whole number, not "5".'),
    ('[retrieval]\ntop_k = 5.5', "[retrieval] top_k must be a whole number, not 5.5."),
    ('[retrieval]\nw_dense = "0.9"', '[retrieval] w_dense must be a number, not "0.9".'),
    ('[retrieval]\nw_terms = "0.1"', '[retrieval] w_terms must be a number, not "0.1".'),
    ('[embedders.local]\nthreshold = "high"',
     '[embedders.local] threshold must be a number, not "high".'),
    ('[embedders.local]\nsource = 3', "[embedders.local] source must be text in quotes, not 3."),
    ('[budget]\ntotal_s = "5"', '[budget] total_s must be a number, not "5".'),
    ('embedders = "x"', '[embedders] must be a table of [embedders.NAME] tables, not "x".'),
    ("[embedders]\nlocal = 5", "[embedders.local] must be a table, not 5."),
    ("retrieval = 5", "[retrieval] must be a table, not 5."),
    ("[answer]\nfallback = 1", "[answer] fallback must be true or false, not 1."),
    ("[answer]\nmax_tokens = true", "[answer] max_tokens must be a whole number, not true."),
    ('[guardrails]\nhedge_words = "maybe"',
     '[guardrails] hedge_words must be a list of texts in quotes, not "maybe".'),
    ('[book]\nurl_template = "{base_url}/{nowhere}"',
     "[book] url_template names {nowhere}, which is unknown; it may only use {base_url}, "
     "{module_id}, {chapter_id}, {section_id}, {page}, {page_dir}, {source_path}."),
    ('[book]\nurl_template = "{base_url}/{"', "[book] url_template is not a valid template"),
]
OUT_OF_RANGE = [
    ("[budget]\ntotal_s = -1",
     "[budget] total_s must be more than 0 and at most 600 seconds, not -1."),
    ("[budget]\ntotal_s = 700", "[budget] total_s must be more than 0 and at most 600 seconds"),
    ("[budget]\ntotal_s = nan", "[budget] total_s must be more than 0 and at most 600 seconds"),
    ("[budget]\nretrieval_s = 0", "[budget] retrieval_s must be more than 0 and at most total_s"),
    ("[budget]\ntotal_s = 3.0\nsynthesis_s = 4",
     "[budget] synthesis_s must be more than 0 and at most total_s (3), not 4."),
    ("[answer]\nmax_tokens = -5", "[answer] max_tokens must be between 1 and 8192, not -5."),
    ("[answer]\nmax_tokens = 100000", "[answer] max_tokens must be between 1 and 8192"),
    ("[chat]\nhistory_messages = -1",
     "[chat] history_messages must be between 0 and 50, not -1."),
    ("[chat]\nrate_limit_per_minute = -3",
     "[chat] rate_limit_per_minute must be 0 or more, not -3."),
    ("[embedders.local]\nthreshold = 0.3\ngate_answer = 1.5",
     "[embedders.local] gate_answer must be between 0 and 1, not 1.5."),
    ("[embedders.cohere]\nthreshold = 0.3\ngate_answer = 0.5\ngate_caveat = 0.7",
     "[embedders.cohere] gate_caveat (0.7) must not be above gate_answer (0.5)."),
    ("[embedders.local]\nthreshold = 0.3\nlevel_high = 0.5\nlevel_medium = 0.6",
     "[embedders.local] level_medium (0.6) must not be above level_high (0.5)."),
    ("[retrieval]\nw_terms = 1.5", "[retrieval] w_terms must be between 0 and 1, not 1.5."),
    ("[retrieval]\nw_terms = 0.5\nw_authority = 0.5",
     "[retrieval] w_terms + w_authority + w_recency must be at most 0.9, not 1."),
    ('[retrieval]\nrerank = "fancy"',
     '[retrieval] rerank (or RAG_RERANK) must be one of off, offline, cohere, not "fancy".'),
    ("[retrieval]\nrerank_depth = 0", "[retrieval] rerank_depth must be between 1 and 500."),
    ('[retrieval]\nquery_types = "magic"',
     '[retrieval] query_types must be "rules" or "llm", not "magic".'),
    ("[retrieval.types.factual]\nw_dense = 0.9",
     "[retrieval.types.factual] must set w_dense and threshold."),
    ("[retrieval.types.poetry]\nw_dense = 0.9\nthreshold = 0.3",
     "[retrieval.types.poetry]: 'poetry' is not a query type"),
    ("[retrieval.types.code]\nw_dense = 0.9\nthreshold = 3",
     "[retrieval.types.code] w_dense and threshold must be numbers between 0 and 1."),
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(text + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "message"), WRONG + OUT_OF_RANGE)
def test_load_settings_names_the_key(text: str, message: str, tmp_path: Path) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(settings_file=path, env={})
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


@pytest.mark.parametrize(("text", "message"), WRONG + OUT_OF_RANGE)
def test_cli_exits_2_with_the_message_and_no_traceback(text: str, message: str,
                                                       tmp_path: Path) -> None:
    env = {**os.environ, "RAG_SETTINGS": str(write(tmp_path, text))}
    for name in ("RAG_EMBEDDER", "RAG_LLM", "RAG_BOOK", "RAG_INDEX_DIR", "COHERE_API_KEY"):
        env.pop(name, None)
    result = subprocess.run([sys.executable, "-m", "rag", "search", "what is a robot"],
                            capture_output=True, text=True, timeout=60, env=env,
                            cwd=PROJECT_ROOT)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1  # one line: the message


def test_the_shipped_file_and_valid_values_still_load(tmp_path: Path) -> None:
    load_settings(settings_file=PROJECT_ROOT / "data" / "settings.toml", env={})
    path = write(tmp_path, '[retrieval]\nw_dense = 1\ntop_k = 3\n[budget]\ntotal_s = 600\n'
                 'retrieval_s = 600\n[chat]\nhistory_messages = 0\nrate_limit_per_minute = 0\n'
                 '[book]\nurl_template = "{base_url}/x/{section_id}?a={{b}}"')
    settings = load_settings(settings_file=path, env={})
    assert (settings.w_dense, settings.budget_total_s, settings.history_messages) == (1, 600, 0)


def test_another_book_is_named_by_its_folder_not_the_files_title(tmp_path: Path) -> None:
    path = write(tmp_path, '[book]\ntitle = "Foundations of Physical AI"')
    book = tmp_path / "garden-robots"
    book.mkdir()
    assert load_settings(settings_file=path, env={}).resolved_title == \
        "Foundations of Physical AI"
    assert load_settings(settings_file=path, env={"RAG_BOOK": str(book)}).resolved_title == \
        "Garden Robots"
    assert load_settings(settings_file=path, env={}, book_dir=book).resolved_title == \
        "Garden Robots"
    explicit = load_settings(settings_file=path, env={}, book_dir=book, book_title="Mine")
    assert explicit.resolved_title == "Mine"


def test_a_docusaurus_site_is_named_by_its_config_title(tmp_path: Path) -> None:
    path = write(tmp_path, '[book]\ntitle = "Foundations of Physical AI"')
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docusaurus.config.ts").write_text(
        "const config: Config = {\n  title: 'Humanoids in Practice',\n  tagline: 'x',\n};\n")
    docs = load_settings(settings_file=path, env={"RAG_BOOK": str(site / "docs")})
    assert docs.resolved_title == "Humanoids in Practice"
    (site / "docusaurus.config.ts").unlink()
    assert load_settings(settings_file=path, env={"RAG_BOOK": str(site / "docs")}
                         ).resolved_title == "Site"
