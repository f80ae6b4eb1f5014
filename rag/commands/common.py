"""Arguments and output helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.config import Settings, load_settings
from rag.config.library import resolve_book
from rag.index.progress import DONE, STAGE_MESSAGES, STAGE_UNITS, Step, format_seconds

LINE_SECONDS = 5.0  # between two progress lines when stderr is not a terminal
QUIET_SECONDS = 2.0  # shorter runs show no progress: a fresh index, a failure on the first step


def add_book_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--book", metavar="DIR|ID",
                        help="book folder, or the id of a book Folio knows (its folder's name; "
                             "`python -m rag books` lists them; default: RAG_BOOK or data/book)")
    parser.add_argument("--index", metavar="DIR", type=Path,
                        help="index folder (default: RAG_INDEX_DIR or data/index)")
    parser.add_argument("--embedder", metavar="NAME",
                        help="local or cohere (default: RAG_EMBEDDER)")


def settings_from(args: argparse.Namespace, **extra: Any) -> Settings:
    """Settings for the command's book: a folder, or a known book's id (rag.config.library)."""
    book = getattr(args, "book", None)
    settings = load_settings(index_dir=getattr(args, "index", None),
                             embedder=getattr(args, "embedder", None), **extra)
    if book is None:
        return settings
    folder = resolve_book(book, settings.book_dir, settings.library_dir)
    return load_settings(book_dir=folder, index_dir=getattr(args, "index", None),
                         embedder=getattr(args, "embedder", None), **extra)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


@dataclass(frozen=True)
class Shown:
    """What the CLI progress shows last: re-drawn between reports with the time left moved on."""

    stage: str
    message: str
    fraction: float
    details: tuple[str, ...] = ()  # counts, rate
    seconds_left: float | None = None
    at: float = 0.0

    def details_at(self, now: float) -> str:
        details = list(self.details)
        if self.seconds_left is not None:
            left = self.seconds_left - (now - self.at)
            details.append(f"about {format_seconds(left)} left" if left >= 1 else "finishing")
        return ", ".join(details)

    def line(self, now: float) -> str:
        details = self.details_at(now)
        return f"{self.message} ({self.fraction:.0%})" + (f": {details}" if details else "")


class CliProgress:
    """The CLI's progress on stderr, whatever stderr is: a tqdm bar on a terminal; otherwise (a
    log file, a pipe, a CI job) a plain line at each stage and every LINE_SECONDS within one, so
    a long ingest is never silent. Nothing is shown in a run's first `quiet` seconds, so a quick
    one (a fresh index, an error on the first step) prints only its result. Takes plain
    `(message, fraction)` reports (evaluation, tuning) and an ingest's whole Steps (stage,
    counts, rate, time left: rag.index.progress)."""

    def __init__(self, interval: float = LINE_SECONDS, quiet: float = QUIET_SECONDS,
                 clock=time.monotonic) -> None:
        self.interval, self.quiet, self.clock = interval, quiet, clock
        self._bar = None
        self._lock = threading.Lock()
        self._started = self._printed = 0.0
        self._last: Shown | None = None
        self._shown_any = False
        self._ticking: threading.Event | None = None

    def __call__(self, message: str, fraction: float) -> None:
        self._show(Shown(message, message, fraction, at=self.clock()))

    def step(self, step: Step) -> None:
        counts = f"{step.done:,}/{step.total:,} {STAGE_UNITS.get(step.stage, '')}" \
            if step.total else ""
        rate = f"{step.rate:.1f}/s" if step.rate else ""
        self._show(Shown(step.stage, STAGE_MESSAGES[step.stage], step.fraction,
                         tuple(part for part in (counts, rate) if part),
                         None if step.stage == DONE else step.seconds_left, self.clock()))

    def _show(self, shown: Shown) -> None:
        with self._lock:
            if self._last is None:
                self._started = self._printed = shown.at
            previous, self._last = self._last, shown
            if self._shown_any or shown.at - self._started >= self.quiet:
                if sys.stderr.isatty():
                    self._draw(shown)
                elif not self._shown_any or shown.stage != previous.stage \
                        or shown.fraction >= 1.0 or shown.at - self._printed >= self.interval:
                    self._print_line(shown, shown.at)
        if shown.fraction >= 1.0:
            self._finish()
        else:
            self._start_ticking()

    def _draw(self, shown: Shown) -> None:
        if self._bar is None:
            self._bar = _detail_bar()
        self._bar.set_description_str(shown.message, refresh=False)
        self._bar.detail = shown.details_at(self.clock())
        self._bar.n = int(1000 * max(0.0, min(1.0, shown.fraction)))
        self._bar.refresh()
        self._shown_any = True

    def _print_line(self, shown: Shown, now: float) -> None:
        sys.stderr.write(f"[{format_seconds(now - self._started)}] {shown.line(now)}\n")
        sys.stderr.flush()
        self._printed, self._shown_any = now, True

    def _start_ticking(self) -> None:
        """Between reports (a long parse, one slow batch) repeat the last line, or re-draw the
        bar, every `interval` seconds."""
        if self._ticking is not None:
            return
        stop = self._ticking = threading.Event()

        def tick() -> None:
            while not stop.wait(self.interval):
                with self._lock:
                    now = self.clock()
                    if self._last is None or now - self._started < self.quiet:
                        continue
                    if sys.stderr.isatty():
                        self._draw(self._last)
                    elif now - self._printed >= self.interval or not self._shown_any:
                        self._print_line(self._last, now)

        threading.Thread(target=tick, name="folio-progress", daemon=True).start()

    def close(self) -> None:
        """Stop repeating and clear the bar, e.g. when the command failed midway."""
        self._finish()

    def _finish(self) -> None:
        with self._lock:
            if self._ticking is not None:
                self._ticking.set()
                self._ticking = None
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            self._last, self._shown_any = None, False


def _detail_bar():
    """A tqdm bar over the whole ingest (in thousandths) that shows our counts, rate and time
    left (tqdm's own would be of thousandths, over stages of unlike speed)."""
    from tqdm import tqdm

    class DetailBar(tqdm):
        detail = ""

        @property
        def format_dict(self) -> dict:  # tqdm's documented way to add a field to bar_format
            return {**super().format_dict, "detail": self.detail}

    return DetailBar(total=1000, file=sys.stderr, leave=False, dynamic_ncols=True,
                     bar_format="{desc}: {percentage:3.0f}%|{bar}| {detail} [{elapsed}]")


terminal_progress = CliProgress()  # one per process: the CLI runs one command at a time
