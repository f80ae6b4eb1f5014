"""Settings: defaults < settings.toml < environment < explicit overrides; secrets stay out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import rag.config
from rag.config import DEFAULT_SETTINGS_FILE, Settings, get_secret, load_settings
from rag.errors import ConfigError

FILE = """
[book]
title = "Test Book"

[retrieval]
w_dense = 0.7
top_k = 3
candidate_pool = 40

[embedders.local]
threshold = 0.42
gate_answer = 0.72
gate_caveat = 0.52
source = "sweep of 2024-05-01"

[embedders.cohere]
threshold = 0.61
source = "original design"

[answer]
llm = "extractive"
max_tokens = 512

[guardrails]
mode = "strict"
hedge_words = ["perhaps"]
"""


@pytest.fixture(autouse=True)
def no_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No keys in the environment and a project root whose secrets.toml this test controls."""
    for name in ("COHERE_API_KEY", "ANTHROPIC_API_KEY", "QDRANT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "project"
    (root / ".streamlit").mkdir(parents=True)
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", root)
    return root


@pytest.fixture
def settings_file(tmp_path: Path) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(FILE)
    return path


def test_defaults_without_a_file_or_environment(tmp_path: Path) -> None:
    s = load_settings(settings_file=tmp_path / "absent.toml", env={})
    assert (s.w_dense, s.threshold, s.top_k, s.candidate_pool) == (0.85, 0.60, 5, 50)
    assert (s.embedder, s.llm, s.guardrail_mode) == ("local", "extractive", "hybrid")
    assert s.retrieval.w_bm25 == pytest.approx(0.15)


def test_file_overrides_defaults(settings_file: Path) -> None:
    s = load_settings(settings_file=settings_file, env={})
    assert (s.book_title, s.w_dense, s.top_k, s.candidate_pool) == ("Test Book", 0.7, 3, 40)
    assert (s.llm_max_tokens, s.guardrail_mode, s.hedge_words) == (512, "strict", ("perhaps",))
    assert s.llm_model == Settings().llm_model  # keys the file leaves out keep their defaults


def test_environment_overrides_file(settings_file: Path, tmp_path: Path) -> None:
    env = {"RAG_DENSE_WEIGHT": "0.6", "RAG_TOP_K": "4", "RAG_BOOK": str(tmp_path / "b"),
           "RAG_INDEX_DIR": str(tmp_path / "i"), "RAG_EMBEDDER": "cohere",
           "QDRANT_URL": "http://localhost:6333"}
    s = load_settings(settings_file=settings_file, env=env)
    assert (s.w_dense, s.top_k, s.embedder) == (0.6, 4, "cohere")
    assert (s.book_dir, s.index_dir) == (tmp_path / "b", tmp_path / "i")
    assert s.qdrant_url == "http://localhost:6333"
    assert s.candidate_pool == 40  # still from the file


def test_explicit_overrides_beat_environment(settings_file: Path, tmp_path: Path) -> None:
    env = {"RAG_DENSE_WEIGHT": "0.6", "RAG_TOP_K": "4", "RAG_BOOK": str(tmp_path / "env")}
    s = load_settings(settings_file=settings_file, env=env, w_dense=0.5,
                      book_dir=tmp_path / "flag", top_k=None)
    assert (s.w_dense, s.book_dir) == (0.5, tmp_path / "flag")
    assert s.top_k == 4  # a flag left unset (None) does not hide the environment


def test_rag_settings_names_another_file(settings_file: Path) -> None:
    s = load_settings(env={"RAG_SETTINGS": str(settings_file)})
    assert s.settings_file == settings_file and s.top_k == 3


def test_shipped_settings_file_loads() -> None:
    s = load_settings(env={})
    assert s.settings_file == DEFAULT_SETTINGS_FILE
    assert "local" in s.embedder_defaults


def test_invalid_toml_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "settings.toml"
    bad.write_text("[retrieval\nw_dense = 0.7\n")
    with pytest.raises(ConfigError, match=r"settings\.toml is not valid TOML .*fix or delete it"):
        load_settings(settings_file=bad, env={})


@pytest.mark.parametrize(("name", "value"), [("RAG_TOP_K", "five"),
                                             ("RAG_DENSE_WEIGHT", "high"),
                                             ("RAG_THRESHOLD", "0,5")])
def test_unparseable_environment_value_is_a_config_error(name: str, value: str,
                                                         tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"{name}='{value}' is not a valid"):
        load_settings(settings_file=tmp_path / "absent.toml", env={name: value})


@pytest.mark.parametrize(("change", "message"), [
    ({"w_dense": 1.5}, "Dense weight 1.5 must be between 0 and 1"),
    ({"threshold": -0.1}, "Threshold -0.1 must be between 0 and 1"),
    ({"top_k": 0}, "Top_k 0 must be between 1 and 50"),
    ({"candidate_pool": 2, "top_k": 5}, "Candidate pool must be between top_k and 1000"),
    ({"guardrail_mode": "lenient"}, "must be strict, permissive or hybrid"),
])
def test_out_of_range_values_are_refused(change: dict, message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(settings_file=tmp_path / "absent.toml", env={}, **change)


def test_threshold_and_gates_come_from_the_embedder_section(settings_file: Path) -> None:
    local = load_settings(settings_file=settings_file, env={})
    assert (local.threshold, local.gate_answer, local.gate_caveat) == (0.42, 0.72, 0.52)
    assert local.threshold_source == "sweep of 2024-05-01"
    cohere = load_settings(settings_file=settings_file, env={"RAG_EMBEDDER": "cohere"})
    assert (cohere.threshold, cohere.gate_answer, cohere.gate_caveat) == (0.61, 0.80, 0.60)
    assert cohere.threshold_source == "original design"


def test_an_explicit_threshold_wins_and_says_where_it_came_from(settings_file: Path) -> None:
    from_env = load_settings(settings_file=settings_file, env={"RAG_THRESHOLD": "0.5"})
    assert from_env.threshold == 0.5
    assert from_env.threshold_source == "RAG_THRESHOLD environment variable"
    assert from_env.gate_answer == 0.72  # gates still follow the embedder
    from_flag = load_settings(settings_file=settings_file, env={"RAG_THRESHOLD": "0.5"},
                              threshold=0.55)
    assert (from_flag.threshold, from_flag.threshold_source) == (0.55, "set explicitly")


def test_an_embedder_without_a_section_keeps_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[embedders.cohere]\nthreshold = 0.61\n")
    s = load_settings(settings_file=path, env={})
    assert (s.threshold, s.threshold_source) == (0.60, Settings().threshold_source)


def test_a_cohere_key_switches_the_default_embedder(no_secrets: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    absent = tmp_path / "absent.toml"
    monkeypatch.setenv("COHERE_API_KEY", "k-123")
    assert load_settings(settings_file=absent, env={}).embedder == "cohere"
    assert load_settings(settings_file=absent, env={"RAG_EMBEDDER": "local"}).embedder == "local"


def test_secrets_come_from_env_then_secrets_toml(no_secrets: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_secret("COHERE_API_KEY") == ""
    (no_secrets / ".streamlit" / "secrets.toml").write_text('COHERE_API_KEY = "from-file"\n')
    assert get_secret("COHERE_API_KEY") == "from-file"
    monkeypatch.setenv("COHERE_API_KEY", "from-env")
    assert get_secret("COHERE_API_KEY") == "from-env"


def test_broken_secrets_file_reads_as_no_secret(no_secrets: Path) -> None:
    (no_secrets / ".streamlit" / "secrets.toml").write_text("COHERE_API_KEY = \n")
    assert get_secret("COHERE_API_KEY") == ""


def test_snapshot_has_no_secrets(settings_file: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"COHERE_API_KEY": "co-secret-1", "ANTHROPIC_API_KEY": "sk-ant-secret-2",
               "QDRANT_API_KEY": "qd-secret-3"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    env = {**secrets, "QDRANT_URL": "https://user:pw-secret-4@qdrant.example:6333",
           "RAG_BOOK": str(tmp_path / "private" / "my-book")}
    s = load_settings(settings_file=settings_file, env=env)
    snapshot = s.snapshot()
    flat = repr(snapshot)
    for value in [*secrets.values(), "pw-secret-4", str(tmp_path)]:
        assert value not in flat
    assert not [k for k in snapshot if any(w in k.lower() for w in ("key", "secret", "token"))]
    assert snapshot["book"] == "my-book"
    assert snapshot["w_bm25"] == pytest.approx(1 - snapshot["w_dense"])
    assert not any(isinstance(getattr(s, f.name), str) and getattr(s, f.name) in secrets.values()
                   for f in dataclasses.fields(s))  # Settings itself never holds a key


def test_per_type_points_and_stage_settings_reach_retrieval(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('[retrieval]\nw_dense = 0.9\nw_terms = 0.2\nrerank = "offline"\n'
                    'rerank_weight = 0.3\n[retrieval.types.comparison]\nw_dense = 0.7\n'
                    'threshold = 0.5\n[embedders.local]\nthreshold = 0.35\n', encoding="utf-8")
    s = load_settings(settings_file=path, env={})
    assert (s.retrieval.w_terms, s.retrieval.rerank, s.retrieval.rerank_weight) == \
        (0.2, "offline", 0.3)
    assert (s.retrieval_for("factual").w_dense, s.retrieval_for("factual").threshold) == \
        (0.9, 0.35)
    own = s.retrieval_for("comparison")
    assert (own.w_dense, own.threshold, own.w_terms) == (0.7, 0.5, 0.2)
    assert load_settings(settings_file=path, env={"RAG_RERANK": "off"}).rerank == "off"
    assert s.snapshot()["type_settings"] == {"comparison": {"w_dense": 0.7, "threshold": 0.5}}
