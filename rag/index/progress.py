"""How far an ingest has got: its stage, items done of the stage's total, the rate and the time
left, reported to a plain `(message, fraction)` callback (the app's st.progress) or, whole, to a
listener with a `step(Step)` method (the CLI's tqdm bar and log lines, rag.commands.common).

The time left is the embedding still to do, estimated in cost units rather than items: a
256-token chunk costs about 30x an 8-token sentence through MiniLM (measured on 2 shared cores:
23 ms vs 730 ms a text under load; per token 2.9 vs 3.7 us), and sentences are embedded shortest
first, so an estimate from items per second would be far too hopeful.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

Progress = Callable[[str, float], None]
READ, CHUNK, SPLIT, CHUNKS, SENTENCES, LEXICAL, WRITE, DONE = (
    "read", "chunk", "split", "chunks", "sentences", "lexical", "write", "done")
STAGE_MESSAGES = {
    READ: "Reading the book", CHUNK: "Cutting sections into chunks",
    SPLIT: "Splitting sections into sentences", CHUNKS: "Embedding chunks",
    SENTENCES: "Embedding sentences and questions", LEXICAL: "Building the BM25 index",
    WRITE: "Writing the index", DONE: "Done",
}
STAGE_UNITS = {CHUNK: "sections", SPLIT: "sections", CHUNKS: "chunks", SENTENCES: "texts"}
# Share of the bar before embedding starts and after it ends; embedding takes the rest (it is
# 85-95 % of an ingest from scratch: 137 of 158 s for the Physical AI book).
SPANS = {READ: (0.0, 0.02), CHUNK: (0.02, 0.05), SPLIT: (0.05, 0.08), LEXICAL: (0.95, 0.97),
         WRITE: (0.97, 0.99), DONE: (1.0, 1.0)}
EMBEDDING = (0.08, 0.95)
TOKENS_PER_CHAR = 0.25  # MiniLM's word pieces per character of English prose, about
MAX_TOKENS = 256


def embed_cost(text: str) -> float:
    """Relative time to embed `text`: linear in its tokens, plus attention's quadratic term."""
    tokens = min(len(text) * TOKENS_PER_CHAR, MAX_TOKENS) + 2
    return tokens * (1 + tokens / MAX_TOKENS)


@dataclass(frozen=True)
class Step:
    """One report: `done` of `total` items of `stage`, and the whole ingest's `fraction`."""

    stage: str
    done: int
    total: int
    fraction: float
    rate: float | None = None  # items of this stage per second, once some are done
    seconds_left: float | None = None  # for the whole ingest, once embedding has started

    @property
    def message(self) -> str:
        text = STAGE_MESSAGES[self.stage]
        if self.total:
            text += f": {self.done:,} of {self.total:,} {STAGE_UNITS.get(self.stage, '')}"
        if self.seconds_left is not None and self.stage != DONE:
            text += f" (about {format_seconds(self.seconds_left)} left)"
        return text


@runtime_checkable
class StepListener(Protocol):
    """A progress callback that also takes each Step whole (stage, counts, rate, time left)."""

    def __call__(self, message: str, fraction: float) -> None: ...

    def step(self, step: Step) -> None: ...


def format_seconds(seconds: float) -> str:
    seconds = max(int(round(seconds)), 0)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class IngestProgress:
    """Turns stage events into Steps: counts per stage, one bar over the whole ingest."""

    def __init__(self, progress: Progress | None, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.progress, self.clock = progress, clock
        self.work = {CHUNKS: 0.0, SENTENCES: 0.0}  # embedding cost of each embedding stage
        self.work_done = 0.0
        self.embed_started: float | None = None
        self.stage, self.total, self.done = READ, 0, 0
        self.stage_started = clock()

    def plan(self, chunk_work: float, sentence_work: float) -> None:
        self.work = {CHUNKS: chunk_work, SENTENCES: sentence_work}

    def start(self, stage: str, total: int = 0) -> None:
        self.stage, self.total, self.done = stage, total, 0
        self.stage_started = self.clock()
        if stage in self.work and self.embed_started is None:
            self.embed_started = self.stage_started
        self._report()

    def advance(self, items: int, work: float = 0.0) -> None:
        self.done = min(self.done + items, self.total) if self.total else self.done + items
        self.work_done += work
        self._report()

    def _fraction(self) -> float:
        if self.stage in self.work:
            total = sum(self.work.values())
            low, high = EMBEDDING
            return low + (high - low) * (self.work_done / total if total else 1.0)
        low, high = SPANS[self.stage]
        return low + (high - low) * (self.done / self.total if self.total else 0.0)

    def _seconds_left(self) -> float | None:
        if self.stage not in self.work or self.embed_started is None or self.work_done <= 0:
            return None
        spent = self.clock() - self.embed_started
        return spent / self.work_done * max(sum(self.work.values()) - self.work_done, 0.0)

    def _report(self) -> None:
        if self.progress is None:
            return
        spent = self.clock() - self.stage_started
        rate = self.done / spent if self.done and spent > 0 else None
        step = Step(self.stage, self.done, self.total, round(self._fraction(), 4), rate,
                    self._seconds_left())
        if isinstance(self.progress, StepListener):
            self.progress.step(step)
        else:
            self.progress(step.message, step.fraction)
