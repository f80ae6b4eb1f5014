"""Settings: defaults <- data/settings.toml <- RAG_* environment. Secrets never live in Settings."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.book.structure import FOLIO_SETTINGS, RENDERERS
from rag.config import answer as answerer
from rag.config.capabilities import DEFAULT_DISALLOWED, capabilities_problem
from rag.config.check import RUNTIMES, shown_path, stage_problems, url_template_problem
from rag.config.env import values_from_env
from rag.config.files import book_settings_file, read_secrets, read_settings_file
from rag.config.identity import book_id_for, is_book, title_of_book, tuned_books
from rag.config.paths import project_root, same_folder
from rag.errors import ConfigError
from rag.types import RetrievalSettings

PROJECT_ROOT = project_root()  # the repository, or an installed Folio's folder (paths.py)
DEFAULT_SETTINGS_FILE = PROJECT_ROOT / "data" / "settings.toml"
BOOK_SETTINGS = FOLIO_SETTINGS  # a book's own settings, in its folder (its [book], [guardrails])
BOOK_OWN = ("book_title", "base_url", "url_template", "renderer", "guardrail_mode",
            "hedge_words", "off_topic_keywords", "disallowed_capabilities")
SECRET_NAMES = ("COHERE_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "QDRANT_API_KEY")
MAX_BUDGET_S = 600.0
MAX_HISTORY_MESSAGES = 50
DEFAULT_HEDGES = ("i think", "maybe", "possibly", "probably", "unclear", "might be", "not sure")


@dataclass(frozen=True)
class EmbedderDefaults:
    threshold: float
    gate_answer: float = 0.80
    gate_caveat: float = 0.60
    level_high: float = 0.85  # confidence levels, calibrated per embedder (scales differ)
    level_medium: float = 0.70
    source: str = ""


@dataclass(frozen=True)
class Settings:
    book_dir: Path = PROJECT_ROOT / "data" / "book"
    index_dir: Path = PROJECT_ROOT / "data" / "index"
    audit_db: Path = PROJECT_ROOT / "data" / "audit.duckdb"
    library_dir: Path = PROJECT_ROOT / "data" / "books"  # uploaded and added books (library.py)
    settings_file: Path = DEFAULT_SETTINGS_FILE
    book_title: str = ""
    base_url: str = ""
    url_template: str = ""  # "": the book's renderer's (rag.answer.citations.RENDERER_URLS)
    renderer: str = ""  # [book] renderer: whose dialect and heading ids ("": recognised)
    embedder: str = "local"
    embed_runtime: str = "onnx"  # [embedders.local] runtime / RAG_EMBED_RUNTIME: onnx | torch
    query_model: str = "fp32"  # [embedders.local] query_model / RAG_QUERY_MODEL: int8 | fp32
    cohere_model: str = "embed-english-v3.0"
    qdrant_url: str = ""
    w_dense: float = 0.85
    threshold: float = 0.60
    gate_answer: float = 0.80
    gate_caveat: float = 0.60
    level_high: float = 0.85
    level_medium: float = 0.70
    threshold_source: str = "original design default"
    threshold_book: str = ""  # the book a [[history]] entry says the threshold was tuned on
    gate_book: str = ""  # the same for the confidence gate
    top_k: int = 5
    candidate_pool: int = 50
    w_terms: float = 0.0  # [retrieval] composite signal weights (see RetrievalSettings)
    w_authority: float = 0.0
    w_recency: float = 0.0
    rerank: str = "off"  # [retrieval] rerank / RAG_RERANK: off | offline | cohere
    rerank_weight: float = 0.5
    rerank_depth: int = 20
    rerank_model: str = "rerank-v3.5"
    query_types: str = "rules"  # [retrieval] query_types: rules | llm (Claude when configured)
    # [retrieval.types.<type>] w_dense / threshold: per-type points, written only when
    # cross-validation showed they beat one point (rag.tuning.per_type)
    type_settings: dict[str, dict[str, float]] = field(default_factory=dict)
    llm: str = "extractive"  # [answer] llm / RAG_LLM: extractive | anthropic | openai
    llm_model: str = "claude-sonnet-4-6"  # Claude's ([answer] model)
    openai_base_url: str = ""  # [answer.openai] base_url / RAG_LLM_BASE_URL
    openai_model: str = ""  # [answer.openai] model (RAG_LLM_MODEL when llm is openai)
    llm_max_tokens: int = 1024
    llm_fallback: bool = True  # fall back to extractive answers when the LLM fails
    extractive_sentences: int = 3
    guardrail_mode: str = "hybrid"  # strict | permissive | hybrid
    hedge_words: tuple[str, ...] = DEFAULT_HEDGES
    off_topic_keywords: tuple[str, ...] = ()
    disallowed_capabilities: tuple[str, ...] = DEFAULT_DISALLOWED  # rag.config.capabilities
    history_messages: int = 6
    budget_total_s: float = 5.0
    budget_retrieval_s: float = 2.0
    budget_synthesis_s: float = 2.5
    rate_limit_per_minute: int = 30
    embedder_defaults: dict[str, EmbedderDefaults] = field(default_factory=dict)

    @property
    def retrieval(self) -> RetrievalSettings:
        stages = ("w_terms", "w_authority", "w_recency", "rerank", "rerank_weight",
                  "rerank_depth", "rerank_model")
        return RetrievalSettings(self.w_dense, self.threshold, self.top_k, self.candidate_pool,
                                 **{name: getattr(self, name) for name in stages})

    def retrieval_for(self, query_type: str | None) -> RetrievalSettings:
        """The retrieval settings for a type of question: its own point when settings have
        one, else the single point."""
        own = self.type_settings.get(query_type or "", {})
        base = self.retrieval
        if not own:
            return base
        return dataclasses.replace(base, w_dense=float(own.get("w_dense", base.w_dense)),
                                   threshold=float(own.get("threshold", base.threshold)))

    @property
    def answer_model(self) -> str:
        return getattr(self, answerer.ANSWER_MODEL_FIELDS.get(self.llm, ""), "extractive")

    @property
    def resolved_title(self) -> str:
        return self.book_title or title_of_book(self.book_dir)

    @property
    def book_id(self) -> str:
        """The id every index, audit row and citation link of this book carries."""
        return book_id_for(self.book_dir)

    def tuned_elsewhere(self, what: str) -> str:
        """The book `threshold` or `gate` was tuned on when that is not this one, else ""."""
        recorded = self.threshold_book if what == "threshold" else self.gate_book
        return recorded if recorded and not is_book(recorded, self.book_dir, PROJECT_ROOT) else ""

    def snapshot(self) -> dict[str, Any]:
        """What the audit log records: no paths that could hold secrets, no keys."""
        return {
            "w_dense": self.w_dense, "w_bm25": round(1 - self.w_dense, 10),
            "threshold": self.threshold, "threshold_source": self.threshold_source,
            "top_k": self.top_k, "candidate_pool": self.candidate_pool,
            "w_terms": self.w_terms, "w_authority": self.w_authority,
            "w_recency": self.w_recency, "rerank": self.rerank,
            "rerank_weight": self.rerank_weight, "rerank_depth": self.rerank_depth,
            "query_types": self.query_types, "type_settings": self.type_settings,
            "embedder": self.embedder, "query_model": self.query_model, "llm": self.llm,
            "llm_model": self.answer_model, "guardrail_mode": self.guardrail_mode,
            **answerer.server_snapshot(self.llm, self.openai_base_url),
            "book": self.book_dir.name, "book_id": self.book_id,
            "book_title": self.resolved_title,
        }


def get_secret(name: str) -> str:
    """A key from the environment, else from .streamlit/secrets.toml; "" when absent or when the
    file is not valid TOML (the app's sign-in and API keys refuse such a file instead)."""
    value = os.environ.get(name, "").strip()
    if value:
        return value
    try:
        return str(read_secrets(PROJECT_ROOT / ".streamlit" / "secrets.toml").get(name, "")).strip()
    except ConfigError:
        return ""


def _from_file(data: dict[str, Any]) -> dict[str, Any]:
    book, retrieval = data.get("book", {}), data.get("retrieval", {})
    answer, guard = data.get("answer", {}), data.get("guardrails", {})
    budget, local = data.get("budget", {}), data.get("embedders", {}).get("local", {})
    values: dict[str, Any] = {
        "book_title": book.get("title"), "base_url": book.get("base_url"),
        "url_template": book.get("url_template"), "renderer": book.get("renderer"),
        "w_dense": retrieval.get("w_dense"), "top_k": retrieval.get("top_k"),
        "candidate_pool": retrieval.get("candidate_pool"),
        **{key: retrieval.get(key) for key in ("w_terms", "w_authority", "w_recency", "rerank",
                                                "rerank_weight", "rerank_depth", "rerank_model",
                                                "query_types")},
        "type_settings": {name: dict(point) for name, point in retrieval["types"].items()
                          if isinstance(point, dict)}
        if isinstance(retrieval.get("types"), dict) else None,
        **answerer.answer_file_values(answer),
        "guardrail_mode": guard.get("mode"),
        "hedge_words": tuple(guard["hedge_words"]) if "hedge_words" in guard else None,
        "off_topic_keywords": tuple(guard["off_topic_keywords"])
        if "off_topic_keywords" in guard else None,
        "disallowed_capabilities": tuple(guard["disallowed_capabilities"])
        if "disallowed_capabilities" in guard else None,
        "budget_total_s": budget.get("total_s"), "budget_retrieval_s": budget.get("retrieval_s"),
        "budget_synthesis_s": budget.get("synthesis_s"),
        "embed_runtime": local.get("runtime"), "query_model": local.get("query_model"),
        "rate_limit_per_minute": data.get("chat", {}).get("rate_limit_per_minute"),
        "history_messages": data.get("chat", {}).get("history_messages"),
    }
    defaults = {
        name: EmbedderDefaults(**{k: v for k, v in spec.items()
                                  if k in EmbedderDefaults.__annotations__})
        for name, spec in data.get("embedders", {}).items()
    }
    values["embedder_defaults"] = defaults
    return {k: v for k, v in values.items() if v is not None}


def load_settings(settings_file: Path | None = None, env: dict[str, str] | None = None,
                  **overrides: Any) -> Settings:
    """Build Settings; explicit overrides (CLI flags) win over env, env over the file."""
    env = dict(os.environ) if env is None else env
    path = Path(settings_file or env.get("RAG_SETTINGS") or DEFAULT_SETTINGS_FILE)
    data = read_settings_file(path)
    values: dict[str, Any] = {"settings_file": path, **_from_file(data)}
    book_dir = Path(overrides.get("book_dir") or env.get("RAG_BOOK") or Settings.book_dir)
    own = {k: v for k, v in _from_file(read_settings_file(book_settings_file(book_dir))).items()
           if k in BOOK_OWN and v is not None}  # the book's own folio.toml, for this book only
    if "embedder" not in values and not env.get("RAG_EMBEDDER") and get_secret("COHERE_API_KEY"):
        values["embedder"] = "cohere"
    if values.get("llm", "extractive") == "extractive" and get_secret("ANTHROPIC_API_KEY"):
        values["llm"] = "anthropic"  # a key and no other answerer chosen in the file
    env_values = values_from_env(env)
    values.update(env_values)
    values.update({k: v for k, v in overrides.items() if v is not None})
    answerer.route_model(values, env.get("RAG_LLM_MODEL", ""), Settings.llm)
    for key in ("book_dir", "index_dir", "audit_db", "library_dir", "settings_file"):
        values[key] = Path(values[key]) if key in values else getattr(Settings, key)
    if "book_title" not in overrides and not same_folder(values["book_dir"], Settings.book_dir):
        values.pop("book_title", None)  # [book] title names the settings file's book, not this
    for key, value in own.items():
        if key not in overrides or overrides[key] is None:
            values[key] = value
    if overrides.get("threshold") is not None and "threshold_source" not in overrides:
        values["threshold_source"] = "set explicitly"
    elif "threshold" in env_values:
        values["threshold_source"] = "RAG_THRESHOLD environment variable"
    explicit = "threshold" in env_values or overrides.get("threshold") is not None
    settings = _apply_embedder_defaults(Settings(**values), explicit_threshold=explicit)
    return dataclasses.replace(settings, **tuned_books(data, settings.embedder, explicit))


def _apply_embedder_defaults(settings: Settings, explicit_threshold: bool) -> Settings:
    spec = settings.embedder_defaults.get(settings.embedder)
    if spec is None:
        return validate_settings(settings)
    changes: dict[str, Any] = {"gate_answer": spec.gate_answer, "gate_caveat": spec.gate_caveat,
                               "level_high": spec.level_high, "level_medium": spec.level_medium}
    if not explicit_threshold:
        changes.update(threshold=spec.threshold,
                       threshold_source=spec.source or f"[embedders.{settings.embedder}] in "
                       f"{settings.settings_file.name}")
    return validate_settings(dataclasses.replace(settings, **changes))


def validate_settings(s: Settings) -> Settings:
    """Ranges and relations; the messages name the setting as settings.toml spells it."""
    file, embedder = shown_path(s.settings_file), f"[embedders.{s.embedder}]"
    checks = [
        (0.0 <= s.w_dense <= 1.0, f"dense weight {s.w_dense} must be between 0 and 1"),
        (0.0 <= s.threshold <= 1.0, f"threshold {s.threshold} must be between 0 and 1"),
        (1 <= s.top_k <= 50, f"top_k {s.top_k} must be between 1 and 50"),
        (s.top_k <= s.candidate_pool <= 1000, "candidate pool must be between top_k and 1000"),
        (s.guardrail_mode in ("strict", "permissive", "hybrid"),
         f"guardrail mode {s.guardrail_mode!r} must be strict, permissive or hybrid"),
        (s.renderer in ("", *RENDERERS), f"[book] renderer {s.renderer!r} must be one of "
         f"{', '.join(RENDERERS)} (or left out: recognised from the book)"),
        (s.embed_runtime in RUNTIMES, f"embedding runtime {s.embed_runtime!r} (RAG_EMBED_RUNTIME "
         f"or [embedders.local] runtime) must be {' or '.join(RUNTIMES)}"),
    ]
    problems = [*stage_problems(dataclasses.asdict(s)),
                capabilities_problem(s.disallowed_capabilities)]
    checks += [(False, problem) for problem in problems if problem]
    checks = [(ok, message[0].upper() + message[1:]) for ok, message in checks]
    for ok, message in [*checks, *file_checks(s, f"{file}: ", embedder)]:
        if not ok:
            raise ConfigError(message + ".")
    return s


def file_checks(s: Settings, file: str, embedder: str) -> list[tuple[bool, str]]:
    """Checks of settings only settings.toml sets; each message starts with the file."""
    total = s.budget_total_s
    template_problem = url_template_problem(s.url_template)
    return [
        (0 < total <= MAX_BUDGET_S,
         f"{file}[budget] total_s must be more than 0 and at most {MAX_BUDGET_S:g} seconds, "
         f"not {total:g}"),
        *((0 < value <= total,
           f"{file}[budget] {key} must be more than 0 and at most total_s ({total:g}), "
           f"not {value:g}")
          for key, value in (("retrieval_s", s.budget_retrieval_s),
                             ("synthesis_s", s.budget_synthesis_s))),
        answerer.max_tokens_check(s.llm_max_tokens, file),
        (0 <= s.history_messages <= MAX_HISTORY_MESSAGES,
         f"{file}[chat] history_messages must be between 0 and {MAX_HISTORY_MESSAGES}, "
         f"not {s.history_messages}"),
        (s.rate_limit_per_minute >= 0,
         f"{file}[chat] rate_limit_per_minute must be 0 or more, not {s.rate_limit_per_minute}"),
        *((0.0 <= value <= 1.0, f"{file}{embedder} {key} must be between 0 and 1, not {value:g}")
          for key, value in (("gate_answer", s.gate_answer), ("gate_caveat", s.gate_caveat),
                             ("level_high", s.level_high), ("level_medium", s.level_medium))),
        (s.gate_caveat <= s.gate_answer, f"{file}{embedder} gate_caveat ({s.gate_caveat:g}) "
         f"must not be above gate_answer ({s.gate_answer:g})"),
        (s.level_medium <= s.level_high, f"{file}{embedder} level_medium ({s.level_medium:g}) "
         f"must not be above level_high ({s.level_high:g})"),
        (not template_problem, f"{file}[book] url_template {template_problem}"),
    ]
