"""Apply tuned retrieval settings to data/settings.toml, keeping what they replace as history."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import tomli_w

from rag.config import read_settings_file
from rag.errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")


def _leading_comments(path: Path) -> str:
    """The file's opening comment block: tomli_w writes no comments, so keep at least this."""
    if not path.is_file():
        return ""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines) + "\n\n" if lines else ""


def describe_source(provenance: dict[str, Any]) -> str:
    """One line for `[embedders.<name>] source`, e.g. "sweep over questions.yaml (max_f1), ..."."""
    parts = [f"sweep over {provenance.get('question_set', 'a question set')}"]
    if provenance.get("objective"):
        parts[0] += f" ({provenance['objective']})"
    parts.append(str(provenance.get("date") or dt.date.today().isoformat()))
    figures = [f"{k} {provenance[k]}" for k in ("f1", "recall_at_k", "false_answer_rate")
               if k in provenance]
    return ", ".join(parts + figures)


def _plain(value: Any) -> Any:
    """TOML-ready: numbers, text and booleans as they are, anything else as text."""
    return value if isinstance(value, bool | int | float | str) else str(value)


def write_settings(settings_file: Path, w_dense: float, threshold: float, embedder: str,
                   provenance: dict[str, Any]) -> dict[str, Any]:
    """Set `[retrieval] w_dense` and `[embedders.<embedder>] threshold` + `source`, append the
    replaced values to `[[history]]`, keep every other key. Returns the history entry."""
    if not (0 <= w_dense <= 1 and 0 <= threshold <= 1):
        raise ConfigError(f"Dense weight {w_dense} and threshold {threshold} must both be "
                          "between 0 and 1.")
    if not NAME_RE.match(embedder):
        raise ConfigError(f"Embedder name {embedder!r} must be letters, digits, - or _.")
    path = Path(settings_file)
    data = read_settings_file(path)
    retrieval = data.setdefault("retrieval", {})
    spec = data.setdefault("embedders", {}).setdefault(embedder, {})
    today = str(provenance.get("date") or dt.date.today().isoformat())
    entry = {"date": today, "embedder": embedder,
             "previous_w_dense": retrieval.get("w_dense", ""),
             "previous_threshold": spec.get("threshold", ""),
             "previous_source": spec.get("source", ""),
             "w_dense": round(float(w_dense), 4), "threshold": round(float(threshold), 4),
             **{k: _plain(v) for k, v in provenance.items() if v is not None and k != "date"}}
    retrieval["w_dense"] = round(float(w_dense), 4)
    spec["threshold"] = round(float(threshold), 4)
    spec["source"] = describe_source({**provenance, "date": today})
    history = data.pop("history", [])
    data["history"] = [*history, entry]  # last, so [[history]] tables follow the settings
    text = _leading_comments(path) + tomli_w.dumps(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return entry
