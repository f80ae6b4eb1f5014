"""Shared fixtures: the real MiniLM loaded once, the sample book indexed once per session."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
for _key in ("COHERE_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
             "RAG_LLM_BASE_URL", "RAG_LLM_MODEL", "QDRANT_URL", "RAG_EMBEDDER", "RAG_LLM",
             "RAG_BOOK", "RAG_INDEX_DIR", "RAG_AUDIT_DB", "RAG_THRESHOLD", "RAG_SETTINGS",
             "RAG_EMBED_RUNTIME", "RAG_ONNX_DIR", "RAG_QUERY_MODEL", "RAG_LEXICAL",
             "RAG_LIBRARY"):
    os.environ.pop(_key, None)
# Tests share one audit folder, so one rate-limit file: no limit unless a test sets its own.
os.environ["RAG_RATE_LIMIT"] = "0"

import rag  # noqa: E402,F401  (sets thread counts before numpy loads)
from rag.config import Settings, load_settings  # noqa: E402
from tests.builders import SAMPLE_BOOK, held_duckdb  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def onnx_dir(tmp_path_factory) -> Path:
    """One ONNX export of MiniLM per test session, shared by every embedder (and subprocess)."""
    folder = tmp_path_factory.mktemp("onnx")
    os.environ["RAG_ONNX_DIR"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def embedder():
    from rag.providers.registry import get_embedder

    return get_embedder(load_settings(env={}))


@pytest.fixture(scope="session")
def sample_index_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sample-index")


@pytest.fixture(scope="session")
def sample_settings(sample_index_dir, tmp_path_factory) -> Settings:
    """Settings for the sample book with the shipped data/settings.toml, index in a temp dir."""
    audit = tmp_path_factory.mktemp("audit") / "audit.duckdb"
    return load_settings(env={}, book_dir=SAMPLE_BOOK, index_dir=sample_index_dir,
                         audit_db=audit)


@pytest.fixture(scope="session")
def sample_index(sample_settings, embedder):
    """The sample book indexed once per test session (real MiniLM, real local Qdrant)."""
    from rag.index.load import load_index

    index, _ = load_index(sample_settings)
    return index


@pytest.fixture()
def settings_for(sample_settings):
    def make(**changes) -> Settings:
        return dataclasses.replace(sample_settings, **changes)

    return make


@pytest.fixture(scope="module")
def pipeline(sample_index, sample_settings):
    """The answering pipeline over the sample book, offline defaults."""
    from rag.answer.pipeline import Pipeline

    return Pipeline(sample_index, sample_settings)


@pytest.fixture
def claude():
    """A loopback server speaking the Anthropic Messages API."""
    from tests.fakes.anthropic_server import AnthropicServer

    with AnthropicServer() as fake:
        yield fake


@pytest.fixture()
def held_audit_file(tmp_path):
    """A DuckDB file held open by another process, as another Folio process would."""
    path = tmp_path / "held.duckdb"
    with held_duckdb(path):
        yield path


@pytest.fixture
def openai_server():
    """A loopback server speaking the OpenAI Chat Completions API (Ollama, vLLM, ...)."""
    from tests.fakes.openai_server import OpenAIServer

    with OpenAIServer() as fake:
        yield fake
