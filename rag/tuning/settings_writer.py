"""Apply tuned retrieval settings and confidence gates to data/settings.toml, keeping what they
replace as history.

The file is edited in place with tomlkit, which keeps every comment, blank line and key order
of data/settings.toml (tomli_w, used before, wrote the values back without a comment but the
opening block). Kept here because tomlkit does not do it: checking the values against Folio's
settings before anything is written (rag.config's read_settings_file), a blank line after each
table it adds, and the write itself: atomic (a reader sees the old file or the new), with the
file's mode, never over a read-only file, and no `.tmp` left behind when it fails.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import AoT, Table
from tomlkit.toml_document import TOMLDocument

from rag.config import EmbedderDefaults, read_settings_file
from rag.errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
DEFAULT_GATE_ANSWER = EmbedderDefaults(threshold=0.0).gate_answer


def _spaced(table: Table) -> Table:
    """The table followed by a blank line, as the file's own tables are (tomlkit adds none)."""
    if not table.is_super_table() and not table.as_string().endswith("\n\n"):
        table.add(tomlkit.nl())  # a super table (only [a.b] headers) has no body of its own
    return table


def _table(parent: Any, key: str) -> Any:
    """parent[key], a new table when absent: setdefault would hand back the plain dict it was
    given, not the table tomlkit stored."""
    if key not in parent:
        parent[key] = tomlkit.table()
    return parent[key]


def _tables(container: Any) -> Iterator[Table]:
    """Every table in the document, nested ones and [[array]] entries included."""
    for value in container.values():
        for table in value if isinstance(value, AoT) else [value]:
            if isinstance(table, Table):
                yield table
                yield from _tables(table)


def _plain_value(value: Any) -> Any:
    """A tomlkit item as the Python value it holds (history entries are returned to callers)."""
    return value.unwrap() if hasattr(value, "unwrap") else value


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


def describe_gate_source(provenance: dict[str, Any]) -> str:
    """One line for `[embedders.<name>] gate_source`, e.g. "gate for answer accuracy >= 0.9 over
    questions.yaml at dense 0.95 · threshold 0.33, 2026-01-02, answer rate 0.8, accuracy 0.92"."""
    target = provenance.get("gate_target")
    parts = [f"gate for answer accuracy >= {target}" if target is not None else "gate chosen"]
    parts[0] += f" over {provenance.get('question_set', 'a question set')}"
    if provenance.get("gate_point"):
        parts[0] += f" at {provenance['gate_point']}"
    parts.append(str(provenance.get("date") or dt.date.today().isoformat()))
    figures = [f"{k.removeprefix('gate_').replace('_', ' ')} {provenance[k]}"
               for k in ("gate_answer_rate", "gate_accuracy") if provenance.get(k) is not None]
    return ", ".join(parts + figures)


def _check_unit(name: str, value: float) -> None:
    if not 0 <= value <= 1:
        raise ConfigError(f"{name} {value} must be between 0 and 1.")


def _set_gate(spec: dict[str, Any], gate: float, provenance: dict[str, Any]) -> dict[str, Any]:
    """Refuse answers whose confidence is under `gate` (gate_caveat); plain answers start at
    gate_answer, raised to the gate when it was lower so the caveat band never inverts."""
    _check_unit("Confidence gate", gate)
    previous = {"previous_gate_caveat": spec.get("gate_caveat", ""),
                "previous_gate_answer": spec.get("gate_answer", ""),
                "previous_gate_source": spec.get("gate_source", "")}
    spec["gate_caveat"] = round(float(gate), 4)
    spec["gate_answer"] = round(max(float(spec.get("gate_answer", DEFAULT_GATE_ANSWER)), gate), 4)
    spec["gate_source"] = describe_gate_source(provenance)
    return {**previous, "gate_caveat": spec["gate_caveat"], "gate_answer": spec["gate_answer"]}


def _rewrite(settings_file: Path, embedder: str, provenance: dict[str, Any],
             change: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]
             ) -> dict[str, Any]:
    """Read the file, let `change` edit it (it returns the history fields), append the entry to
    `[[history]]` with the provenance, keep every other key, write it atomically."""
    if not NAME_RE.match(embedder):
        raise ConfigError(f"Embedder name {embedder!r} must be letters, digits, - or _.")
    path = Path(settings_file)
    read_settings_file(path)  # a file that is not valid, or not Folio's, is refused as it is
    doc = _document(path)
    spec = _table(_table(doc, "embedders"), embedder)
    today = str(provenance.get("date") or dt.date.today().isoformat())
    dated = {**provenance, "date": today}
    existing = {id(t) for t in _tables(doc)}
    changed = {k: _plain_value(v) for k, v in change(doc, spec, dated).items()}
    for table in _tables(doc):
        if id(table) not in existing:
            _spaced(table)
    entry = {"date": today, "embedder": embedder, **changed,
             **{k: _plain(v) for k, v in provenance.items() if v is not None and k != "date"}}
    _append_history(doc, entry)
    _write(path, tomlkit.dumps(doc))
    return entry


def _document(path: Path) -> TOMLDocument:
    if not path.is_file():
        return tomlkit.document()
    return tomlkit.parse(path.read_text(encoding="utf-8"))


def _append_history(doc: TOMLDocument, entry: dict[str, Any]) -> None:
    """One more [[history]] table, after the last one (the file keeps them last)."""
    if "history" not in doc:
        if doc.body and isinstance(doc.body[-1][1], Table):
            _spaced(doc.body[-1][1])
        doc.add("history", tomlkit.aot())
    history = doc["history"]
    if len(history):
        _spaced(history[-1])
    history.append(entry)


def _write(path: Path, text: str) -> None:
    """Replace the file atomically with its own mode; refuse a read-only one (its owner made
    it so: the rename would replace it regardless), and leave no temporary file on failure."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    if mode is not None and not mode & stat.S_IWUSR:
        raise ConfigError(f"{path} is read-only, so nothing was applied. Make it writable "
                          f"(chmod u+w {path}) or point RAG_SETTINGS at a writable copy.")
    tmp = path.with_name(f"{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"{path} could not be written ({e.strerror or e}), so nothing was "
                          "applied; the file is unchanged. Free some disk space or check the "
                          "folder's permissions, then apply again.") from e


def write_settings(settings_file: Path, w_dense: float, threshold: float, embedder: str,
                   provenance: dict[str, Any], gate: float | None = None) -> dict[str, Any]:
    """Set `[retrieval] w_dense` and `[embedders.<embedder>] threshold` + `source` (and, with
    `gate`, the confidence gate as write_gate does), append the replaced values to
    `[[history]]`, keep every other key. Returns the history entry."""
    if not (0 <= w_dense <= 1 and 0 <= threshold <= 1):
        raise ConfigError(f"Dense weight {w_dense} and threshold {threshold} must both be "
                          "between 0 and 1.")

    def change(data: dict[str, Any], spec: dict[str, Any], dated: dict[str, Any]
               ) -> dict[str, Any]:
        retrieval = _table(data, "retrieval")
        entry = {"previous_w_dense": retrieval.get("w_dense", ""),
                 "previous_threshold": spec.get("threshold", ""),
                 "previous_source": spec.get("source", ""),
                 "w_dense": round(float(w_dense), 4), "threshold": round(float(threshold), 4)}
        retrieval["w_dense"] = round(float(w_dense), 4)
        spec["threshold"] = round(float(threshold), 4)
        spec["source"] = describe_source(dated)
        return entry | (_set_gate(spec, gate, dated) if gate is not None else {})

    return _rewrite(settings_file, embedder, provenance, change)


def write_gate(settings_file: Path, gate: float, embedder: str, provenance: dict[str, Any]
               ) -> dict[str, Any]:
    """Set `[embedders.<embedder>] gate_caveat` (answers under it are refused), `gate_answer`
    (raised to the gate if lower) and `gate_source`; history as write_settings keeps it."""
    _check_unit("Confidence gate", gate)
    return _rewrite(settings_file, embedder, provenance,
                    lambda data, spec, dated: _set_gate(spec, gate, dated))


def write_type_points(settings_file: Path, points: dict[str, dict[str, float]], embedder: str,
                      provenance: dict[str, Any]) -> dict[str, Any]:
    """Set `[retrieval.types.<type>]` w_dense and threshold for each type (those not named are
    removed: the points replace the previous set as a whole); history as write_settings keeps."""
    for kind, point in points.items():
        if not NAME_RE.match(kind):
            raise ConfigError(f"Query type {kind!r} must be letters, digits, - or _.")
        for name in ("w_dense", "threshold"):
            _check_unit(f"{kind} {name}", float(point[name]))

    def change(data: dict[str, Any], spec: dict[str, Any], dated: dict[str, Any]
               ) -> dict[str, Any]:
        retrieval = _table(data, "retrieval")
        previous = retrieval.get("types", {})
        types = tomlkit.table(is_super_table=True)
        for kind, point in points.items():
            types[kind] = {"w_dense": round(float(point["w_dense"]), 4),
                           "threshold": round(float(point["threshold"]), 4)}
        retrieval["types"] = types
        return {"previous_types": ", ".join(sorted(previous)) or "none",
                "types": ", ".join(f"{k} {p['w_dense']:.2f}/{p['threshold']:.2f}"
                                   for k, p in retrieval["types"].items()) or "none"}

    return _rewrite(settings_file, embedder, provenance, change)
