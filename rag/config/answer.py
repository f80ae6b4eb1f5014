"""The answerer's settings: which LLM writes answers, and each one's model and server.

settings.toml keeps Claude's model in [answer] model (as before other answerers existed) and an
OpenAI-compatible server's in [answer.openai] base_url and model, so switching `llm` never sends
one provider's model name to the other. The environment names the answerer in use instead:
RAG_LLM_MODEL sets the model of whichever `llm` is chosen, RAG_LLM_BASE_URL the server of the
OpenAI-compatible one (Claude's is ANTHROPIC_BASE_URL, read by its provider).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

OPENAI = "openai"
MAX_LLM_TOKENS = 8192
OPENAI_KEYS = {"base_url": "text", "model": "text"}  # [answer.openai], checked like the rest
ANSWER_MODEL_FIELDS = {"anthropic": "llm_model", OPENAI: "openai_model"}


def answer_file_values(answer: dict[str, Any]) -> dict[str, Any]:
    """Settings fields from a parsed [answer] table (None where the file says nothing)."""
    server = answer.get(OPENAI, {})
    return {"llm": answer.get("llm"), "llm_model": answer.get("model"),
            "llm_max_tokens": answer.get("max_tokens"), "llm_fallback": answer.get("fallback"),
            "openai_base_url": server.get("base_url"), "openai_model": server.get("model")}


def answer_env_values(env: dict[str, str]) -> dict[str, Any]:
    """RAG_LLM and RAG_LLM_BASE_URL; RAG_LLM_MODEL is routed once `llm` is known (route_model)."""
    values: dict[str, Any] = {}
    if env.get("RAG_LLM", "").strip():
        values["llm"] = env["RAG_LLM"].strip()
    if env.get("RAG_LLM_BASE_URL", "").strip():
        values["openai_base_url"] = env["RAG_LLM_BASE_URL"].strip()
    return values


def route_model(values: dict[str, Any], model: str, default_llm: str) -> None:
    """Put RAG_LLM_MODEL's `model` in the field of the answerer `values` chose (Claude's field
    for the extractive answerer, as before: it names no model of its own)."""
    if model.strip():
        values[ANSWER_MODEL_FIELDS.get(values.get("llm", default_llm), "llm_model")] = \
            model.strip()


def max_tokens_check(max_tokens: int, file: str) -> tuple[bool, str]:
    return (1 <= max_tokens <= MAX_LLM_TOKENS,
            f"{file}[answer] max_tokens must be between 1 and {MAX_LLM_TOKENS}, not {max_tokens}")


def server_snapshot(llm: str, base_url: str) -> dict[str, str]:
    """What the audit log records of the server that answered (an OpenAI-compatible one)."""
    return {"llm_base_url": shown_url(base_url)} if llm == OPENAI else {}


def shown_url(url: str) -> str:
    """A server URL without any user:password part, for the audit log and the sidebar."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", "")) if parts.scheme else url
