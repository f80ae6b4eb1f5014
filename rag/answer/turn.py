"""What one request carries between the stages: its question, settings, timings and notices."""

from __future__ import annotations

import dataclasses
import time

from rag.answer.navigate import asked_kind, where_topic
from rag.answer.spelling import foreign
from rag.answer.wording import as_read, book_names
from rag.config import Settings
from rag.errors import BudgetExceeded
from rag.index.build import BookIndex
from rag.index.lexical import book_words
from rag.notices import NOT_ENGLISH, READ_AS, Notice, make_notice


@dataclasses.dataclass
class Turn:
    """What one request carries between stages (local to the request: stages share no state)."""

    question: str
    settings: Settings
    started: float
    timings: dict[str, float] = dataclasses.field(default_factory=dict)
    notices: list[Notice] = dataclasses.field(default_factory=list)
    index: BookIndex | None = None  # the pipeline's index, seen through a QueryMemo
    query_type: str = ""  # rag.answer.query_types: factual, conceptual, ... ("" before typing)
    query_type_source: str = ""  # "rules" or "llm"
    plain: str = ""  # the question as read (asked()), once worked out
    topic: str = ""  # rag.answer.navigate: what a "Which chapter covers X?" question asks about
    kind: str = ""  # ... and the numbered kind of place it asks for ("Which week ...": "week")

    def asked(self) -> str:
        """The question as retrieval, the offline answerer and the capability check read it
        (rag.answer.wording.as_read): its slips as the book's words (said in a notice), in lower
        case with the book's acronyms, without its words about the book, greetings or thanks."""
        if not self.plain:
            self.plain = self._read(self.question)
        return self.plain

    def read_as(self, question: str) -> str:
        """The question as read (asked()); a follow-up resolved into the question it stands for
        (rag.answer.context.standalone) is read so, and read as if the reader had asked it."""
        if question != self.question:
            self.plain = self._read(question)
        return self.asked()

    def searched(self, question: str) -> str:
        """What the book is searched for: the topic alone of a question about where the book
        treats it (rag.answer.navigate.where_topic, kept as `topic`), else the question."""
        self.topic, self.kind = where_topic(question), asked_kind(question)
        return self.topic or question

    def _read(self, question: str) -> str:
        fixes: dict[str, str] = {}
        if self.index is not None and foreign(question, book_words(self.index),
                                              book_names(self.index)):
            self.notices.append(make_notice(NOT_ENGLISH))
            return question.strip()  # no English slips to read in it
        plain = as_read(question, self.index, fixes)
        if fixes:  # 'Read "Jeston" as "Jetson", taken for a slip of the keyboard.'
            self.notices.append(make_notice(READ_AS, words=", ".join(
                f'"{typed}" as "{meant}"' for typed, meant in sorted(fixes.items()))))
        return plain

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def check_total(self, stage: str) -> None:
        if self.elapsed() > self.settings.budget_total_s:
            raise BudgetExceeded(stage)
