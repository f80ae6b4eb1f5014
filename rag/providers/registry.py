"""Plain-dict registries of providers. Unknown names list the ones that exist."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from rag.config import Settings
from rag.errors import ConfigError
from rag.providers.base import LLM, Embedder


def _local_embedder(settings: Settings) -> Embedder:
    from rag.providers.local_embedder import LocalEmbedder

    return LocalEmbedder(runtime=settings.embed_runtime, cache_dir=onnx_cache_dir(settings),
                         query_model=settings.query_model)


def onnx_cache_dir(settings: Settings) -> Path:
    """Where MiniLM's ONNX export is kept: beside the index, or in RAG_ONNX_DIR when set (one
    export shared by several indexes, e.g. a test session's)."""
    return Path(os.environ.get("RAG_ONNX_DIR") or Path(settings.index_dir) / "onnx")


def _cohere_embedder(settings: Settings) -> Embedder:
    from rag.providers.cohere_embedder import CohereEmbedder

    return CohereEmbedder(model=settings.cohere_model)


def _anthropic_llm(settings: Settings) -> LLM:
    from rag.providers.anthropic_llm import AnthropicLLM

    return AnthropicLLM(model=settings.llm_model)


def _openai_llm(settings: Settings) -> LLM:
    from rag.providers.openai_llm import OpenAICompatibleLLM

    return OpenAICompatibleLLM(model=settings.openai_model, base_url=settings.openai_base_url)


EMBEDDERS: dict[str, Callable[[Settings], Embedder]] = {
    "local": _local_embedder,
    "cohere": _cohere_embedder,
}
# "extractive" needs no model: synthesis composes answers from the book's own sentences.
LLMS: dict[str, Callable[[Settings], LLM] | None] = {
    "extractive": None,
    "anthropic": _anthropic_llm,
    # any OpenAI-compatible server: Ollama, vLLM, llama.cpp's llama-server, LM Studio, OpenAI
    "openai": _openai_llm,
}
_CACHE: dict[tuple, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def get_embedder(settings: Settings) -> Embedder:
    """One embedder per (name, model) per process: loading MiniLM takes seconds."""
    if settings.embedder not in EMBEDDERS:
        raise ConfigError(f"Unknown embedder {settings.embedder!r}; choose one of "
                          f"{', '.join(sorted(EMBEDDERS))}.")
    key: tuple = (settings.embedder, settings.cohere_model if settings.embedder == "cohere" else "")
    if settings.embedder == "local":
        key += (settings.embed_runtime, settings.query_model, str(onnx_cache_dir(settings)))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = EMBEDDERS[settings.embedder](settings)
        return _CACHE[key]


def prepare_embedder(settings: Settings) -> Embedder:
    """The embedder with its runtime made ready now: ingest exports MiniLM to ONNX (once) here,
    so no question waits for it; a failed export leaves PyTorch in use, with a notice."""
    embedder = get_embedder(settings)
    ready = getattr(embedder, "onnx_encoder", None)
    if callable(ready):
        ready()
        embedder.query_model_used  # noqa: B018  (makes the int8 query model now, once)
    return embedder


def get_llm(settings: Settings) -> LLM | None:
    """None means the offline extractive answerer."""
    if settings.llm not in LLMS:
        raise ConfigError(f"Unknown answerer {settings.llm!r}; choose one of "
                          f"{', '.join(sorted(LLMS))}.")
    factory = LLMS[settings.llm]
    return factory(settings) if factory else None
