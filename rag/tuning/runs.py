"""Tuning runs kept on disk, so that a sweep or an answer check outlives the browser tab and two
of them can be set side by side (before and after a re-ingest, another embedder, an edited
question set, another objective).

A run is what one evaluation found: the figures at the active settings and at the recommended
point (answer figures too once the answers were checked), and per question the outcome at both.
It is JSON, one file per run under `<folder of the audit database>/tuning-runs/<book id>/`:
question history and tuning history live together, and a test's temporary audit folder keeps
its runs out of the project. The same evaluation saved again (its answers checked later)
replaces its file; the newest RUNS_KEPT per book are kept. A file that cannot be read is
skipped and counted, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from rag.config import Settings
from rag.tuning.answers import AnswerOutcome, summarise_answers
from rag.tuning.evaluate import CURRENT, RECOMMENDED, Evaluation

RUNS_KEPT = 50
MAX_RUN_BYTES = 20_000_000  # a run of 5,000 questions is ~2 MB; anything bigger is not ours
FORMAT = 1
QUESTION_FIELDS = ("outcome", "correct", "answer_correct", "confidence", "top_section")


@dataclass(frozen=True)
class TuningRun:
    id: str
    saved_at: str  # ISO 8601, UTC
    book: str
    book_id: str
    index_built_at: str
    question_set: str
    set_hash: str
    objective: str
    max_far: float | None
    settings: dict[str, Any]  # what the figures depend on beside the point
    points: dict[str, list[float]]  # current / recommended: [w_dense, threshold]
    figures: dict[str, dict[str, float | None]]  # current / recommended: metric -> value
    questions: list[dict[str, Any]] = field(default_factory=list)  # one row per question
    answers_checked: bool = False

    @property
    def label(self) -> str:
        """How the run is named in a picker: when, which set, what it recommended."""
        when = self.saved_at[:16].replace("T", " ")
        rec = self.points.get(RECOMMENDED) or [None, None]
        point = "no point" if rec[0] is None else f"dense {rec[0]:.2f} · threshold {rec[1]:.2f}"
        return f"{when} · {Path(self.question_set).name} · {self.objective_text} → {point}"

    @property
    def objective_text(self) -> str:
        if self.objective == "max_recall_at_far" and self.max_far is not None:
            return f"Recall@k, false answers ≤ {self.max_far:.0%}"
        return "F1"

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}


def runs_folder(settings: Settings) -> Path:
    return settings.audit_db.parent / "tuning-runs" / settings.book_id


def run_from_evaluation(ev: Evaluation, *, question_set: str, set_hash: str, book: str,
                        book_id: str, built_at: str, objective: str, max_far: float | None,
                        now: datetime | None = None) -> TuningRun:
    """The run one evaluation makes; its id is the same for the same set, index, settings and
    objective, so saving it again once the answers are checked replaces it."""
    s, rec = ev.settings, ev.recommendation
    settings = {"w_dense": s.w_dense, "threshold": s.threshold, "top_k": s.top_k,
                "candidate_pool": s.candidate_pool, "embedder": s.embedder,
                "rerank": s.rerank, "llm": s.llm}
    points = {CURRENT: list(ev.points[CURRENT])}
    figures = {CURRENT: {k: _number(v) for k, v in ev.current.items()}}
    if not rec.refusal:
        points[RECOMMENDED] = list(ev.points[RECOMMENDED])
        figures[RECOMMENDED] = {k: _number(v) for k, v in rec.metrics.items()}
    for name, outcomes in ev.answers.items():
        if name in figures:
            figures[name] |= {k: _number(v) for k, v in answer_figures(outcomes).items()}
    ident = json.dumps([set_hash, book_id, built_at, sorted(settings.items()), objective,
                        max_far], sort_keys=True, default=str)
    return TuningRun(
        id=hashlib.sha256(ident.encode()).hexdigest()[:16],
        saved_at=(now or datetime.now(UTC)).isoformat(timespec="milliseconds"), book=book,
        book_id=book_id, index_built_at=built_at, question_set=question_set, set_hash=set_hash,
        objective=objective, max_far=max_far, settings=settings, points=points,
        figures=figures, questions=_question_rows(ev, points),
        answers_checked=bool(ev.answers))


def answer_figures(outcomes: Sequence[AnswerOutcome]) -> dict[str, float | None]:
    """An answer pass's headline figures, keyed as the tuning page's figure table and a kept
    run (rag.tuning.runs) name them."""
    summary = summarise_answers(outcomes, uncertainty=False)  # every rerun: no simulation
    return {"answer_accuracy": summary["accuracy"],
            "answer_with_more": summary["accuracy_with_more"],
            "answer_false_rate": summary["false_answer_rate"], "ece": summary["ece"],
            "auroc": summary["auroc"]}


def _question_rows(ev: Evaluation, points: dict[str, list[float]]) -> list[dict[str, Any]]:
    rows = [{"question": q.question, "scope": "in scope" if q.in_scope else "out of scope"}
            for q in ev.questions]
    for name, (w, t) in points.items():
        table = ev.result.question_table(w, t)
        answers = ev.answers.get(name)
        for i, row in enumerate(rows):
            found = table.iloc[i]
            outcome = ("answered" if found["answered"] else
                       f"refused ({found['refused_by']})")
            judged = answers[i] if answers else None
            row[name] = {"outcome": outcome, "correct": bool(found["correct"]),
                         "answer_correct": (judged.correct if judged and judged.judged
                                            else None),
                         "confidence": None if judged is None else round(judged.confidence, 4),
                         "top_section": str(found["top_section"])}
    return rows


def save_run(folder: Path, run: TuningRun, keep: int = RUNS_KEPT) -> Path:
    """Write the run whole (a temporary file renamed over the old one) and drop the oldest runs
    beyond `keep`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run.id}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".run-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(run.to_dict(), f, ensure_ascii=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    runs = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in runs[keep:]:
        old.unlink(missing_ok=True)
    return path


def load_runs(folder: Path) -> tuple[list[TuningRun], int]:
    """Every readable run, newest first, and how many files could not be read."""
    runs, unreadable = [], 0
    for path in folder.glob("*.json") if folder.is_dir() else ():
        try:
            if path.stat().st_size > MAX_RUN_BYTES:
                raise ValueError("too large")
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.pop("format", None) != FORMAT:
                raise ValueError("another format")
            runs.append(_checked(TuningRun(**data)))
        except (OSError, ValueError, TypeError, AttributeError, KeyError, IndexError):
            unreadable += 1
    return sorted(runs, key=lambda r: r.saved_at, reverse=True), unreadable


def _checked(run: TuningRun) -> TuningRun:
    """The run if every field the page reads has its shape (a hand-edited file may not)."""
    if not (isinstance(run.figures, dict) and isinstance(run.questions, list)
            and all(isinstance(v, dict) for v in run.figures.values())
            and all(isinstance(r, dict) and isinstance(r["question"], str)
                    for r in run.questions)):
        raise ValueError("not a run")
    run.label  # noqa: B018  (reads saved_at, points and the objective)
    "{:.2f} · {:.2f}".format(*run.points[CURRENT])
    return run


def delete_run(folder: Path, run_id: str) -> None:
    if run_id.isalnum():  # an id is hex: never a path
        (folder / f"{run_id}.json").unlink(missing_ok=True)


def compare_figures(a: TuningRun, b: TuningRun, point: str, labels: dict[str, str]
                    ) -> pd.DataFrame:
    """One row per metric either run has at `point` (current or recommended): A, B and B − A."""
    fa, fb = a.figures.get(point, {}), b.figures.get(point, {})
    rows = [{"metric": label, "a": fa.get(key), "b": fb.get(key)}
            for key, label in labels.items() if key in fa or key in fb]
    frame = pd.DataFrame(rows, columns=["metric", "a", "b"]).astype({"a": float, "b": float})
    frame["change"] = (frame["b"] - frame["a"]).round(4)  # NaN where one run lacks it
    return frame


def compare_questions(a: TuningRun, b: TuningRun, point: str) -> pd.DataFrame:
    """The questions whose outcome differs between the two runs at `point`, and those only one
    run asked; unchanged questions are left out."""
    by_a = {r["question"]: r for r in a.questions}
    by_b = {r["question"]: r for r in b.questions}
    rows = []
    for question in [*by_a, *(q for q in by_b if q not in by_a)]:
        ra, rb = (by_a.get(question) or {}).get(point), (by_b.get(question) or {}).get(point)
        if ra is not None and rb is not None and all(
                ra.get(k) == rb.get(k) for k in ("outcome", "correct", "answer_correct")):
            continue
        if question not in by_a or question not in by_b:
            change = "only in A" if question in by_a else "only in B"
        elif ra is None or rb is None:  # a run with no recommended point
            change = f"no point in {'A' if ra is None else 'B'}"
        else:
            change = _change(ra, rb)
        rows.append({"question": question, "change": change,
                     **{f"{k}_a": (ra or {}).get(k) for k in QUESTION_FIELDS},
                     **{f"{k}_b": (rb or {}).get(k) for k in QUESTION_FIELDS}})
    return pd.DataFrame(rows, columns=["question", "change",
                                       *(f"{k}_{s}" for k in QUESTION_FIELDS for s in "ab")])


def _change(ra: dict[str, Any], rb: dict[str, Any]) -> str:
    for key, what in (("answer_correct", "answer"), ("correct", "retrieval")):
        if ra.get(key) is not None and rb.get(key) is not None and ra[key] != rb[key]:
            return f"{what} {'fixed' if rb[key] else 'broken'}"
    return "outcome changed"


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else round(number, 4)  # NaN: no figure
