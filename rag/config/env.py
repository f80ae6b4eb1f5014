"""Settings from RAG_* environment variables (and QDRANT_URL), each cast and checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag.config import answer as answerer
from rag.errors import ConfigError


def values_from_env(env: dict[str, str]) -> dict[str, Any]:
    paths = {"RAG_BOOK": "book_dir", "RAG_INDEX_DIR": "index_dir", "RAG_AUDIT_DB": "audit_db",
             "RAG_LIBRARY": "library_dir"}
    values: dict[str, Any] = {key: Path(env[name]) for name, key in paths.items() if env.get(name)}
    values.update(answerer.answer_env_values(env))
    for name, key, cast in (("RAG_EMBEDDER", "embedder", str),
                            ("RAG_EMBED_RUNTIME", "embed_runtime", str),
                            ("RAG_QUERY_MODEL", "query_model", str), ("RAG_RERANK", "rerank", str),
                            ("RAG_DENSE_WEIGHT", "w_dense", float), ("RAG_TOP_K", "top_k", int),
                            ("RAG_THRESHOLD", "threshold", float),
                            ("RAG_BASE_URL", "base_url", str), ("QDRANT_URL", "qdrant_url", str)):
        if env.get(name):
            try:
                values[key] = cast(env[name])
            except ValueError as e:
                raise ConfigError(f"{name}={env[name]!r} is not a valid {cast.__name__}.") from e
    return values
