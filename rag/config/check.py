"""The shape of settings.toml, checked whole on load so a wrong value is named, not a traceback.

Types are checked here, against the file as written; ranges live in config.validate_settings,
which also sees values from the environment and from flags.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from rag.config.answer import OPENAI_KEYS
from rag.errors import ConfigError
from rag.types import MAX_SIGNALS, QUERY_TYPES, RERANKERS

URL_FIELDS = ("base_url", "module_id", "chapter_id", "section_id", "page", "page_dir",
              "source_path")
# what each kind accepts, and how a message names it
KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "a whole number"),
    "number": ((int, float), "a number"),
    "text": ((str,), "text in quotes"),
    "bool": ((bool,), "true or false"),
    "text_list": ((list,), "a list of texts in quotes"),
}
TABLES: dict[str, dict[str, str]] = {
    "book": {"title": "text", "base_url": "text", "url_template": "text", "renderer": "text"},
    "retrieval": {"w_dense": "number", "top_k": "int", "candidate_pool": "int",
                  "w_terms": "number", "w_authority": "number", "w_recency": "number",
                  "rerank": "text", "rerank_weight": "number", "rerank_depth": "int",
                  "rerank_model": "text", "query_types": "text", "terms_source": "text",
                  "rerank_source": "text"},
    "answer": {"llm": "text", "model": "text", "max_tokens": "int", "fallback": "bool"},
    "guardrails": {"mode": "text", "hedge_words": "text_list", "off_topic_keywords": "text_list",
                   "disallowed_capabilities": "text_list"},
    "budget": {"total_s": "number", "retrieval_s": "number", "synthesis_s": "number"},
    "chat": {"rate_limit_per_minute": "int", "history_messages": "int"},
    "access": {"rate_limit": "int", "cors_origins": "text_list"},
}
EMBEDDER_KEYS = {"threshold": "number", "gate_answer": "number", "gate_caveat": "number",
                 "level_high": "number", "level_medium": "number", "source": "text",
                 "gate_source": "text", "level_source": "text", "runtime": "text",
                 "query_model": "text", "query_model_source": "text"}
RUNTIMES = ("onnx", "torch")  # [embedders.local] runtime: how MiniLM runs (the vectors agree)
QUERY_MODELS = ("int8", "fp32")  # [embedders.local] query_model: retrieval questions' weights
UNIT_KEYS = ("threshold", "gate_answer", "gate_caveat", "level_high", "level_medium")


def shown_path(path: Path) -> str:
    """The path as a user would type it: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def shown_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def check_settings_data(data: dict[str, Any], path: Path) -> None:
    """Raise ConfigError naming the first key of `data` (a parsed settings.toml) that is
    of the wrong type, or an [embedders.NAME] value out of range."""
    where = shown_path(path)
    for table, keys in TABLES.items():
        check_table(data, table, keys, where)
    check_table(data.get("answer", {}), "openai", OPENAI_KEYS, where, label="answer.openai")
    embedders = data.get("embedders", {})
    if not isinstance(embedders, dict):
        fail(where, "[embedders]", "a table of [embedders.NAME] tables", embedders)
    for name, spec in embedders.items():
        check_table(embedders, name, EMBEDDER_KEYS, where, label=f"embedders.{name}")
        check_embedder_ranges(spec, f"[embedders.{name}]", where)
        check_runtime(name, spec, where)
    check_stages(data.get("retrieval", {}), where)
    history = data.get("history", [])
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        fail(where, "[[history]]", "a list of [[history]] tables", history)
    template = data.get("book", {}).get("url_template")
    if template is not None:
        problem = url_template_problem(template)
        if problem:
            raise ConfigError(f"{where}: [book] url_template {problem}.")


def check_table(data: dict[str, Any], table: str, keys: dict[str, str], where: str,
                label: str | None = None) -> None:
    label = label or table
    section = data.get(table, {})
    if not isinstance(section, dict):
        fail(where, f"[{label}]", "a table", section)
    for key, kind in keys.items():
        if key not in section:
            continue
        value = section[key]
        accepted, wanted = KINDS[kind]
        ok = isinstance(value, accepted) and not (kind in ("int", "number")
                                                  and isinstance(value, bool))
        if ok and kind == "text_list":
            ok = all(isinstance(item, str) for item in value)
        if not ok:
            fail(where, f"[{label}] {key}", wanted, value)


def check_embedder_ranges(spec: dict[str, Any], label: str, where: str) -> None:
    for key in UNIT_KEYS:
        if key in spec and not 0.0 <= spec[key] <= 1.0:
            raise ConfigError(f"{where}: {label} {key} must be between 0 and 1, "
                              f"not {shown_value(spec[key])}.")
    for low, high in (("gate_caveat", "gate_answer"), ("level_medium", "level_high")):
        if low in spec and high in spec and spec[low] > spec[high]:
            raise ConfigError(f"{where}: {label} {low} ({spec[low]:g}) must not be above "
                              f"{high} ({spec[high]:g}).")


def check_runtime(name: str, spec: dict[str, Any], where: str) -> None:
    """`runtime` and `query_model` are the local embedder's alone, each one of its choices."""
    for key, choices in (("runtime", RUNTIMES), ("query_model", QUERY_MODELS)):
        if key not in spec:
            continue
        if name != "local":
            raise ConfigError(f"{where}: [embedders.{name}] {key} is not a setting of this "
                              f"embedder; only [embedders.local] has a {key}. Remove the line.")
        if spec[key] not in choices:
            allowed = " or ".join(f'"{r}"' for r in choices)
            raise ConfigError(f"{where}: [embedders.local] {key} must be {allowed}, "
                              f"not {shown_value(spec[key])}.")


def url_template_problem(template: str) -> str:
    """Why `template` cannot make a section's link, or "" when it can."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template)
                  if name is not None]
    except ValueError as e:
        return f"is not a valid template ({e}); double a literal brace as {{{{ or }}}}"
    unknown = [name for name in fields if name not in URL_FIELDS]
    if unknown:
        named = ", ".join("{" + name + "}" for name in URL_FIELDS)
        return f"names {{{unknown[0]}}}, which is unknown; it may only use {named}"
    return ""


def fail(where: str, key: str, wanted: str, value: Any) -> None:
    raise ConfigError(f"{where}: {key} must be {wanted}, not {shown_value(value)}.")


def stage_problems(values: dict[str, Any]) -> list[str]:
    """What is wrong with the retrieval-stage settings (names as settings.toml spells them)."""
    problems = []
    signals = {k: values.get(k, 0.0) for k in ("w_terms", "w_authority", "w_recency")}
    for key, value in signals.items():
        if not 0.0 <= value <= 1.0:
            problems.append(f"[retrieval] {key} must be between 0 and 1, not {value:g}")
    if sum(signals.values()) > MAX_SIGNALS + 1e-9:
        problems.append(f"[retrieval] w_terms + w_authority + w_recency must be at most "
                        f"{MAX_SIGNALS}, not {sum(signals.values()):g}")
    if values.get("rerank", "off") not in RERANKERS:
        problems.append(f"[retrieval] rerank (or RAG_RERANK) must be one of "
                        f"{', '.join(RERANKERS)}, not {shown_value(values['rerank'])}")
    if not 0.0 <= values.get("rerank_weight", 0.5) <= 1.0:
        problems.append("[retrieval] rerank_weight must be between 0 and 1")
    if not 1 <= values.get("rerank_depth", 20) <= 500:
        problems.append("[retrieval] rerank_depth must be between 1 and 500")
    if values.get("query_types", "rules") not in ("rules", "llm"):
        problems.append(f"[retrieval] query_types must be \"rules\" or \"llm\", not "
                        f"{shown_value(values['query_types'])}")
    if values.get("query_model", "fp32") not in QUERY_MODELS:
        problems.append(f"query model {shown_value(values['query_model'])} (RAG_QUERY_MODEL or "
                        f"[embedders.local] query_model) must be {' or '.join(QUERY_MODELS)}")
    return problems


def check_stages(retrieval: Any, where: str) -> None:
    """[retrieval] stage keys in range, and [retrieval.types.<type>] points well formed."""
    if not isinstance(retrieval, dict):
        return  # check_table names a [retrieval] that is not a table
    problems = stage_problems(retrieval)
    types = retrieval.get("types", {})
    if not isinstance(types, dict):
        problems.append("[retrieval.types] must be a table of [retrieval.types.TYPE] tables")
        types = {}
    for name, point in types.items():
        label = f"[retrieval.types.{name}]"
        if name not in QUERY_TYPES:
            problems.append(f"{label}: {name!r} is not a query type ({', '.join(QUERY_TYPES)})")
        elif not isinstance(point, dict) or not {"w_dense", "threshold"} <= set(point):
            problems.append(f"{label} must set w_dense and threshold")
        elif not all(isinstance(point[k], (int, float)) and not isinstance(point[k], bool)
                     and 0 <= point[k] <= 1 for k in ("w_dense", "threshold")):
            problems.append(f"{label} w_dense and threshold must be numbers between 0 and 1")
    if problems:
        raise ConfigError(f"{where}: {problems[0]}.")
