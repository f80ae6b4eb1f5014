"""The orchestrator: four stages in order, a time budget, failures attributed to a stage.

context selection -> retrieval -> synthesis -> citations & guardrails -> Response (-> audit)
"""

from __future__ import annotations

import copy
import dataclasses
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from typing import Any

from rag.answer import guardrails as g
from rag.answer.citations import url_template_for
from rag.answer.context import FULL_BOOK, SELECTION, ContextDecision, resolve, select_context
from rag.answer.evidence import defines_asked, sentence_vectors_for
from rag.answer.extractive import extractive_draft
from rag.answer.llm import llm_draft, llm_draft_stream
from rag.answer.navigate import names_topic, navigation_draft
from rag.answer.query_types import classify_with_llm
from rag.answer.response import build_response, error_response, nearest_places
from rag.answer.stage_thread import run_in_daemon
from rag.answer.turn import Turn
from rag.answer.wording import as_read
from rag.config import Settings
from rag.errors import BudgetExceeded, ProviderError, RagError
from rag.index.build import BookIndex
from rag.index.lexical import book_vocabulary
from rag.notices import AUDIT_UNAVAILABLE, LLM_FALLBACK, make_notice
from rag.providers.base import LLM, Message, as_messages, network_deadline
from rag.providers.memo import QueryMemo
from rag.retrieval.query import validate_query
from rag.retrieval.search import search_book
from rag.retrieval.selection import score_selection
from rag.types import LOCAL_CLIENT, Draft, Response, Retrieval

TIMEOUT_MESSAGE = "Query processing timed out. Try a simpler question."
# A slow or silent embedding service costs at most this, once, at start-up: with a silent Cohere
# and Claude, `rag ask` took 8.6 s end to end at 1.5 s (imports 1.6 s, answer 3.6 s, exit 0.9 s).
WARM_UP_S = 1.0
# A stage's network calls give up once this share of its budget is spent, so that a fallback
# (BM25 alone, an extractive answer) still fits in the stage.
NETWORK_SHARE = 0.8


class Pipeline:
    def __init__(self, index: BookIndex, settings: Settings, llm: LLM | None = None,
                 audit: Any = None) -> None:
        self.index = index
        self.settings = settings
        self.llm = llm
        self.audit = audit
        built = index.manifest.get("built_at", "")[:10]
        self.as_of = built or datetime.now(UTC).date().isoformat()
        self.sentence_vectors = sentence_vectors_for(index.embedder)
        self._warm_up()
        self.url_template = url_template_for(  # "" in settings: the book's renderer's links
            settings.url_template, (index.manifest.get("report") or {}).get("renderer", ""))
        self.context = {"book_hash": index.manifest.get("book_hash", ""), "as_of": self.as_of,
                        "collection": index.collection}

    def answer(self, question: str | bytes, mode: str = FULL_BOOK, selection: str | None = None,
               selection_time: datetime | None = None, history: Sequence = (),
               session_id: str = "", settings: Settings | None = None,
               client_id: str = LOCAL_CLIENT) -> Response:
        response = None
        for item in self.answer_stream(question, mode, selection, selection_time, history,
                                       session_id, settings, stream=False, client_id=client_id):
            if isinstance(item, Response):
                response = item
        assert response is not None  # answer_stream always ends with a Response
        return response

    def answer_stream(self, question: str | bytes, mode: str = FULL_BOOK,
                      selection: str | None = None, selection_time: datetime | None = None,
                      history: Sequence = (), session_id: str = "",
                      settings: Settings | None = None, stream: bool = True,
                      client_id: str = LOCAL_CLIENT) -> Iterator[str | Response]:
        """Text deltas while the answer is written, then the final Response (always last).
        client_id names who asked (an API key's name, a signed-in role, or "local") for the
        audit row."""
        settings = dataclasses.replace(settings or self.settings, url_template=(
            settings or self.settings).url_template or self.url_template)
        turn = Turn(question="", settings=settings, started=time.perf_counter(),
                    index=self._request_index())
        meta = {"query_id": str(uuid.uuid4()), "session_id": session_id, "mode": mode,
                "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
                "question": question if isinstance(question, str)
                else question.decode("utf-8", "replace")}
        stage = "input"
        try:
            turn.question = validate_query(question)
            stage = "context"
            decision = self._timed(turn, "context", lambda: select_context(
                mode, selection, selection_time))
            if decision.notice:
                turn.notices.append(decision.notice)
            stage = "retrieval"
            retrieval_query, retrieval = self._retrieve(turn, decision, as_messages(history))
            meta["query_type"], meta["query_type_source"] = turn.query_type, \
                turn.query_type_source
            stage = "synthesis"
            verdict = self._pre_answer_verdict(turn, retrieval)
            draft = None
            if verdict is None:
                draft = yield from self._synthesize(turn, retrieval, as_messages(history), stream)
            stage = "guardrails"
            t0 = time.perf_counter()
            response = build_response(turn, decision, retrieval_query, retrieval, draft, verdict,
                                      meta, self.context)
            response.metadata["latency_ms"]["guardrails"] = round(
                (time.perf_counter() - t0) * 1000, 2)
        except BudgetExceeded as e:
            response = error_response(turn, meta, str(e) or stage, TIMEOUT_MESSAGE)
        except RagError as e:  # input, provider, index: a clear message attributed to the stage
            response = error_response(turn, meta, stage, str(e))
        self._record(response, session_id, client_id)
        yield response

    def _warm_up(self) -> None:
        """Load the embedder and the LLM's SDK now: each takes seconds the first time (importing
        anthropic took 5 s on a busy machine), which must not count against a question's budget."""
        try:
            with network_deadline(WARM_UP_S):  # a silent service must not hold start-up
                self.index.embedder.embed_query("warm up")  # the retrieval model
                self.index.embedder.embed_query_exact("warm up")  # the answerer's
        except RagError:
            pass  # retrieval will degrade to BM25 with a notice, per question
        as_read("warm up", self.index)  # the English dictionary (0.2 s) and the book's words
        make_client = getattr(self.llm, "client", None)  # AnthropicLLM builds its client lazily
        if callable(make_client):
            try:
                make_client()
            except RagError:
                pass  # the first question reports the problem as a synthesis error

    def _request_index(self) -> BookIndex:
        """The index for one request, its embedder wrapped so the question embedded for
        retrieval is not embedded a second time to score the answer's sentences."""
        index = copy.copy(self.index)  # shallow: chunks, BM25 and store are shared, read-only
        index.embedder = QueryMemo(self.index.embedder)
        return index

    # -- stages -----------------------------------------------------------------------------

    def _timed(self, turn: Turn, stage: str, fn, budget: float | None = None):
        """Run a stage; over its budget the request ends (the worker thread is abandoned)."""
        t0 = time.perf_counter()
        if budget is None:
            result = fn()
        else:
            remaining = min(budget, turn.settings.budget_total_s - turn.elapsed())

            def bounded():
                with network_deadline(remaining * NETWORK_SHARE):
                    return fn()

            try:
                result = run_in_daemon(bounded).result(timeout=max(remaining, 0.001))
            except FutureTimeout as e:
                raise BudgetExceeded(stage) from e
        turn.timings[stage] = round((time.perf_counter() - t0) * 1000, 2)
        if budget is not None and turn.timings[stage] > budget * 1000:
            raise BudgetExceeded(stage)
        turn.check_total(stage)
        return result

    def _retrieve(self, turn: Turn, decision: ContextDecision, history: list[Message]
                  ) -> tuple[str, Retrieval]:
        s = turn.settings
        rewriter = self.llm if s.llm != "extractive" else None

        def run() -> tuple[str, Retrieval]:
            query, alone = resolve(turn.question, history[-s.history_messages:], rewriter,
                                   timeout=min(1.0, s.budget_retrieval_s / 2))
            # not its words about the book (rag.answer.wording), unless read in its conversation
            question = query = turn.read_as(query) if alone else query
            typer = rewriter if s.query_types == "llm" else None
            turn.query_type, turn.query_type_source = classify_with_llm(
                question, typer, timeout=min(1.0, s.budget_retrieval_s / 4))
            settings = s.retrieval_for(turn.query_type)
            if decision.mode_used == SELECTION:
                hit = score_selection(turn.index, decision.selection, query, settings.w_dense,
                                      settings.threshold)
                return query, Retrieval(query, settings, (hit,), (hit,))
            # "Which chapter covers X?": X (rag.answer.navigate), else the question as read
            book = search_book(turn.index, query := turn.searched(query), settings)
            if decision.selection is None:
                return query, book
            hit = score_selection(turn.index, decision.selection, query, settings.w_dense,
                                  settings.threshold)
            hits = (hit, *book.hits[: settings.top_k - 1])
            return query, dataclasses.replace(book, candidates=(hit, *book.candidates), hits=hits)

        query, retrieval = self._timed(turn, "retrieval", run, s.budget_retrieval_s)
        turn.notices.extend(retrieval.notices)
        return query, retrieval

    def _pre_answer_verdict(self, turn: Turn, retrieval: Retrieval) -> g.Verdict | None:
        """Refusals that need no draft: capability, then content (nothing above the threshold)."""
        s, book, found = turn.settings, turn.settings.resolved_title, retrieval.candidates
        capability = g.check_capability(turn.question, book, self.as_of, found,
                                        turn.index.chunks, turn.asked(), s.disallowed_capabilities)
        if capability:
            return capability
        # a passage can pass on its share of the question's terms with a blend under the cut
        threshold = retrieval.settings.threshold  # the question type's own, when it has one
        best = max((max(h.blended, threshold) for h in retrieval.hits if h.passed),
                   default=0.0)
        if best < threshold and (names_topic(turn.topic, found, turn.index) or defines_asked(
                turn.asked(), found, turn.index.sentences)):  # "Which chapter covers X?": a
            best = threshold  # heading names X; "What does VIO stand for?": the book defines it
        nearest = nearest_places(turn.index, found)
        # names the book never mentions; a pasted passage may mention them, so not with one
        book_only = bool(retrieval.candidates) and all(
            h.chunk.source == "book" for h in retrieval.candidates)
        unknown = g.unknown_names(turn.asked(), book_vocabulary(turn.index),
                                  turn.question == turn.question.lower()) if book_only else []
        return g.check_content(best, threshold, turn.question, book, nearest,
                               s.off_topic_keywords, unknown)

    def _synthesize(self, turn: Turn, retrieval: Retrieval, history: list[Message],
                    stream: bool) -> Iterator[str]:
        s = turn.settings
        hits = retrieval.hits
        if s.llm == "extractive" or self.llm is None:
            draft = self._timed(turn, "synthesis", lambda: self._extractive(
                turn, hits, retrieval.candidates), s.budget_synthesis_s)
            if stream:
                yield draft.text
            return draft
        kwargs = dict(book=s.resolved_title, history=history[-s.history_messages:],
                      max_tokens=s.llm_max_tokens)
        t0 = time.perf_counter()
        try:
            if stream:
                draft = None
                timeout = max(0.1, min(s.budget_synthesis_s, s.budget_total_s - turn.elapsed())
                              * NETWORK_SHARE)  # time left for the offline answer, as in _timed
                for item in llm_draft_stream(turn.question, hits, self.llm, timeout=timeout,
                                             **kwargs):
                    if isinstance(item, Draft):
                        draft = item
                    else:
                        yield item
                    if time.perf_counter() - t0 > s.budget_synthesis_s:
                        raise BudgetExceeded("synthesis")
                turn.timings["synthesis"] = round((time.perf_counter() - t0) * 1000, 2)
                turn.check_total("synthesis")
                return draft
            return self._timed(turn, "synthesis", lambda: llm_draft(
                turn.question, hits, self.llm, timeout=s.budget_synthesis_s, **kwargs),
                s.budget_synthesis_s)
        except ProviderError as e:
            if time.perf_counter() - t0 >= s.budget_synthesis_s or \
                    turn.elapsed() >= s.budget_total_s:
                raise BudgetExceeded("synthesis") from e  # over budget is a timeout, not a fallback
            if not s.llm_fallback:
                raise
            turn.notices.append(make_notice(LLM_FALLBACK, error=e))
            draft = self._extractive(turn, hits, retrieval.candidates)
            turn.timings["synthesis"] = round((time.perf_counter() - t0) * 1000, 2)
            if stream:
                yield draft.text
            return draft

    def _extractive(self, turn: Turn, hits, candidates) -> Draft:
        """Book units scored with the sentence vectors kept with the index, against the
        question's exact vector (retrieval's may be int8's approximation); by words alone when
        the embedder fails. "Which chapter covers X?": the sections, named (navigate)."""
        if turn.topic:
            return navigation_draft(turn.topic, hits, candidates, turn.index, kind=turn.kind)
        count, table = turn.settings.extractive_sentences, turn.index.sentences
        question = turn.asked()  # "According to the book, ..." asks what follows
        try:  # the request's QueryMemo: a failed embedder is not asked again
            vector = turn.index.embedder.embed_query_exact(question)
        except RagError:
            vector = None
        return extractive_draft(question, hits, candidates, table, vector,
                                self.sentence_vectors, count)

    def _record(self, response: Response, session_id: str, client_id: str = LOCAL_CLIENT
                ) -> None:
        if self.audit is None:
            return
        try:
            self.audit.record(response, session_id=session_id, client_id=client_id)
        except RagError as e:
            response.metadata.setdefault("notices", []).append(
                make_notice(AUDIT_UNAVAILABLE, error=e).to_dict())
