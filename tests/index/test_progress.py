"""Ingest progress: stages with counts, a rate and a time left from the embedding cost, shown as
a tqdm bar on a terminal and as plain lines every few seconds anywhere else (issue 40, item 6).
No model here: the clock is a counter the test moves."""

from __future__ import annotations

import io
import re
import time

import pytest

from rag.commands.common import CliProgress
from rag.index.progress import (
    CHUNKS,
    DONE,
    LEXICAL,
    READ,
    SENTENCES,
    IngestProgress,
    Step,
    embed_cost,
    format_seconds,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_long_chunk_costs_more_than_its_length_in_short_sentences() -> None:
    chunk, sentence = "word " * 200, "word " * 10  # ~250 and ~12 tokens
    assert embed_cost(chunk) > 20 * embed_cost(sentence)
    assert embed_cost(chunk * 3) == embed_cost(chunk * 4)  # MiniLM reads 256 tokens at most


def test_steps_count_each_stage_and_the_time_left_follows_the_cost() -> None:
    clock, steps = Clock(), []

    class Listener:
        def __call__(self, message: str, fraction: float) -> None:
            raise AssertionError("a listener gets whole steps")

        def step(self, step: Step) -> None:
            steps.append(step)

    tracker = IngestProgress(Listener(), clock)
    tracker.start(READ)
    tracker.plan(chunk_work=300.0, sentence_work=100.0)
    tracker.start(CHUNKS, 30)
    clock.now += 10
    tracker.advance(10, 100.0)  # 100 of 400 units in 10 s: 30 s left
    assert steps[-1].stage == CHUNKS and (steps[-1].done, steps[-1].total) == (10, 30)
    assert steps[-1].rate == pytest.approx(1.0)
    assert steps[-1].seconds_left == pytest.approx(30.0)
    assert steps[-1].message == "Embedding chunks: 10 of 30 chunks (about 30 s left)"
    clock.now += 20
    tracker.advance(20, 200.0)
    tracker.start(SENTENCES, 500)
    clock.now += 5
    tracker.advance(250, 50.0)  # cheap sentences: the estimate uses cost, not items
    assert steps[-1].seconds_left == pytest.approx(35 / 350 * 50)
    tracker.advance(250, 50.0)
    tracker.start(LEXICAL)
    assert steps[-1].seconds_left is None  # no estimate outside embedding
    tracker.start(DONE)
    fractions = [s.fraction for s in steps]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert steps[-2].fraction == pytest.approx(0.95)  # embedding ends where BM25 starts


def test_a_plain_callback_gets_a_sentence_and_a_fraction() -> None:
    clock, calls = Clock(), []
    tracker = IngestProgress(lambda message, fraction: calls.append((message, fraction)), clock)
    tracker.plan(chunk_work=100.0, sentence_work=0.0)
    tracker.start(CHUNKS, 4)
    clock.now += 90
    tracker.advance(1, 25.0)
    assert calls[-1] == ("Embedding chunks: 1 of 4 chunks (about 4 min 30 s left)",
                         pytest.approx(0.08 + 0.87 * 0.25, abs=1e-4))


def test_an_ingest_with_nothing_to_embed_still_reaches_the_end() -> None:
    calls = []
    tracker = IngestProgress(lambda message, fraction: calls.append((message, fraction)))
    tracker.plan(0.0, 0.0)
    tracker.start(CHUNKS, 0)
    tracker.start(SENTENCES, 0)
    tracker.start(DONE)
    assert calls[-1] == ("Done", 1.0) and all(0 <= f <= 1 for _, f in calls)


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0 s"), (59, "59 s"), (61, "1 min 01 s"),
                                               (3725, "1 h 02 min")])
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def step(stage: str, done: int, total: int, fraction: float, rate: float | None = None,
         left: float | None = None) -> Step:
    return Step(stage, done, total, fraction, rate, left)


def test_without_a_terminal_a_line_per_stage_and_every_few_seconds(capsys) -> None:
    clock = Clock()
    progress = CliProgress(interval=5.0, quiet=0.0, clock=clock)
    progress.step(step(READ, 0, 0, 0.0))
    progress.step(step(CHUNKS, 0, 300, 0.08))
    for done in range(10, 60, 10):  # a report a second: one line in five
        clock.now += 1
        progress.step(step(CHUNKS, done, 300, 0.1, rate=10.0, left=25.0))
    progress.step(step(DONE, 0, 0, 1.0))
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "[0 s] Reading the book (0%)",
        "[0 s] Embedding chunks (8%): 0/300 chunks",
        "[5 s] Embedding chunks (10%): 50/300 chunks, 10.0/s, about 25 s left",
        "[5 s] Done (100%)",
    ]


def test_a_quick_run_shows_no_progress_and_a_long_one_starts_late(capsys) -> None:
    """A fresh index or an error on the first step prints only its result (the CLI's errors
    start stderr); a run past the quiet seconds shows where it is from then on."""
    clock = Clock()
    quick = CliProgress(interval=5.0, quiet=2.0, clock=clock)
    quick.step(step(READ, 0, 0, 0.0))
    clock.now += 1
    quick.step(step(DONE, 0, 0, 1.0))
    assert capsys.readouterr().err == ""
    slow = CliProgress(interval=5.0, quiet=2.0, clock=clock)
    slow.step(step(READ, 0, 0, 0.0))
    clock.now += 3
    slow.step(step(CHUNKS, 0, 30, 0.08))
    slow.step(step(DONE, 0, 0, 1.0))
    assert capsys.readouterr().err.splitlines() == ["[3 s] Embedding chunks (8%): 0/30 chunks",
                                                    "[3 s] Done (100%)"]


def test_plain_reports_print_their_message_and_fraction(capsys) -> None:
    progress = CliProgress(interval=5.0, quiet=0.0, clock=Clock())
    progress("Asking 3 questions", 0.25)
    progress("Done", 1.0)
    assert capsys.readouterr().err.splitlines() == ["[0 s] Asking 3 questions (25%)",
                                                    "[0 s] Done (100%)"]


def test_a_stage_without_reports_is_not_silent(capsys) -> None:
    """Between two reports (one slow batch, a long parse) the last line comes again, its time
    left moved on, every `interval` seconds of the real clock."""
    progress = CliProgress(interval=0.05, quiet=0.0)
    progress.step(step(CHUNKS, 1, 9, 0.2, rate=1.0, left=0.2))
    time.sleep(0.5)
    progress.step(step(DONE, 0, 0, 1.0))
    lines = capsys.readouterr().err.splitlines()
    repeats = [line for line in lines if "1/9 chunks" in line]
    assert len(repeats) >= 3 and "finishing" in repeats[-1]
    time.sleep(0.2)
    assert capsys.readouterr().err == ""  # the repeating stops with the ingest


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_tqdm_bar_with_counts_and_time_left(monkeypatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    progress = CliProgress(interval=60.0, quiet=0.0)
    progress.step(step(CHUNKS, 120, 300, 0.4, rate=12.0, left=95.0))
    progress.step(step(DONE, 0, 0, 1.0))
    drawn = terminal.getvalue()
    assert re.search(r"Embedding chunks:  40%\|[#█▏▎▍▌▋▊▉ ]+\| 120/300 chunks, 12\.0/s, "
                     r"about 1 min 35 s left \[", drawn), drawn
