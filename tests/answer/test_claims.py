"""Claims of a cited answer checked against the excerpts: the pure checks with hand-built blocks,
then Claude's citations and an OpenAI-compatible model's labels, each through its real SDK and
loopback fake, up to the audit record."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rag.answer.claims import (
    CLAIM_THINLY_COVERED,
    SPAN_NOT_IN_EXCERPT,
    SPAN_SHARES_NO_TERMS,
    UNCITED,
    UNKNOWN_EXCERPT,
    Claim,
    ClaimCheck,
    check_claim,
    discount_confidence,
    extract_claims,
    unsupported_verdicts,
)
from rag.answer.guardrails import CITATION_UNSUPPORTED
from rag.answer.llm import SYSTEM_PROMPT, llm_draft, llm_draft_stream, says_not_covered
from rag.answer.pipeline import Pipeline
from rag.answer.record import to_record
from rag.providers.anthropic_llm import AnthropicLLM
from rag.providers.base import CitedSpan, ReplyBlock
from rag.providers.openai_llm import OpenAICompatibleLLM
from rag.providers.registry import get_llm
from rag.types import Draft, Hit, Verdict
from tests.builders import make_chunk
from tests.fakes.anthropic_server import AnthropicServer, char_location, text_block

EXCERPTS = ("Proportional action alone leaves an offset. The integral term removes steady-state "
            "error by summing it over time.", "Derivative action damps fast motion.")
INTEGRAL = "The integral term removes steady-state error by summing it over time."
BOOK = "Foundations of Physical AI"
QUESTION = "What do the integral and derivative terms do?"
PID_QUESTION = "What does the integral term of a PID controller correct?"
SUPPORTED = ("The integral term removes steady-state error [S1], and derivative action damps "
             "motion [S2].\nConfidence: 0.9")
MOONLIGHT = "Integral gains are tuned by moonlight on Tuesdays."


def span(index: int, text: str) -> CitedSpan:
    start = EXCERPTS[index].index(text)
    return CitedSpan(index, start, start + len(text), text)


def cited(text: str, *spans: CitedSpan) -> Claim:
    return Claim(text, spans)


# -- which parts of a reply are claims -----------------------------------------------------------

def test_cited_blocks_and_uncited_statements_are_the_claims() -> None:
    blocks = [ReplyBlock("In short:\n"),
              ReplyBlock("The integral term removes steady-state error", (span(0, INTEGRAL),)),
              ReplyBlock(". It also makes the joint respond more slowly.\n"),
              ReplyBlock("Confidence: 0.9")]
    assert extract_claims(blocks) == [
        cited("The integral term removes steady-state error", span(0, INTEGRAL)),
        Claim("It also makes the joint respond more slowly.", ())]


def test_the_uncited_lead_in_of_a_cited_sentence_is_not_a_claim() -> None:
    blocks = [ReplyBlock("According to the chapter on PID control tuning, "),
              ReplyBlock("the integral term removes steady-state error", (span(0, INTEGRAL),)),
              ReplyBlock(".")]
    assert extract_claims(blocks) == [
        cited("the integral term removes steady-state error", span(0, INTEGRAL))]


def test_exempt_sentences_are_not_claims() -> None:
    blocks = [ReplyBlock("The provided excerpts do not cover this question.\nConfidence: 0.3")]
    assert extract_claims(blocks, exempt=says_not_covered) == []
    assert len(extract_claims(blocks)) == 1


# -- the checks ----------------------------------------------------------------------------------

def test_a_claim_inside_its_cited_span_is_supported() -> None:
    check = check_claim(cited("The integral term removes steady-state error",
                              span(0, INTEGRAL)), EXCERPTS)
    assert check.supported and check.reasons == ()
    assert check.shared_terms == ("error", "integr", "remov", "state", "steadi", "term")
    assert check.share == 1.0


def test_a_claim_without_a_citation_is_unsupported() -> None:
    check = check_claim(Claim(MOONLIGHT, ()), EXCERPTS)
    assert (check.supported, check.reasons, check.share) == (False, (UNCITED,), 0.0)


@pytest.mark.parametrize("bad", [
    CitedSpan(0, 44, 82, "Integral gains are tuned by moonlight."),  # not the excerpt's words
    CitedSpan(1, 0, 36, "The integral term removes steady-state"),  # another excerpt's words
    CitedSpan(0, 0, 0, ""),  # an empty span is in every text, and supports nothing
])
def test_a_span_outside_its_excerpt_is_unsupported(bad: CitedSpan) -> None:
    check = check_claim(cited("The integral term removes steady-state error", bad), EXCERPTS)
    assert check.reasons == (SPAN_NOT_IN_EXCERPT,)


@pytest.mark.parametrize("index", [2, -1])  # no third excerpt; no excerpt before the first
def test_a_span_of_an_excerpt_that_was_not_sent_is_named_so(index: int) -> None:
    bad = CitedSpan(index, 0, 36, "Derivative action damps fast motion.")
    check = check_claim(cited("The integral term removes steady-state error", bad), EXCERPTS)
    assert check.reasons == (UNKNOWN_EXCERPT,)


def test_one_bad_span_flags_a_claim_its_good_span_supports() -> None:
    claim = cited("The integral term removes steady-state error", span(0, INTEGRAL),
                  CitedSpan(0, 0, 20, "Integral gains drift"))
    assert check_claim(claim, EXCERPTS).reasons == (SPAN_NOT_IN_EXCERPT,)


def test_drifted_offsets_still_find_the_words() -> None:
    drifted = CitedSpan(0, 40, 109, INTEGRAL)  # a provider counting characters differently
    wrapped = CitedSpan(0, 0, 43, "Proportional action\nalone leaves an offset.")
    assert check_claim(cited("The integral term removes steady-state error", drifted),
                       EXCERPTS).supported
    assert check_claim(cited("Proportional action leaves an offset", wrapped), EXCERPTS).supported


def test_a_span_sharing_no_content_word_is_unsupported() -> None:
    check = check_claim(cited("Gravity pulls the torso downward", span(1, EXCERPTS[1])), EXCERPTS)
    assert (check.reasons, check.shared_terms) == ((SPAN_SHARES_NO_TERMS,), ())


def test_one_shared_stem_covers_four_terms_but_not_six() -> None:
    four = check_claim(cited("Derivative gains need tuning", span(1, EXCERPTS[1])), EXCERPTS)
    six = check_claim(cited("Derivative gains are tuned on a rig by hand every spring",
                            span(1, EXCERPTS[1])), EXCERPTS)
    assert (four.supported, four.share) == (True, 0.25)
    assert (six.reasons, six.shared_terms) == ((CLAIM_THINLY_COVERED,), ("deriv",))


# -- confidence and verdicts ---------------------------------------------------------------------

def check(supported: bool) -> ClaimCheck:
    return ClaimCheck(Claim("c", ()), () if supported else (UNCITED,), (), 0.0)


@pytest.mark.parametrize(("stated", "results", "expected"), [
    (0.92, [True, True], 0.92),  # every claim holds up: unchanged
    (None, [True], None),  # and no stated confidence stays absent (0.80 applies later)
    (0.9, [], 0.9),  # no claims (e.g. "not covered"): nothing to discount
    (0.8, [True, True, True, False], 0.6),
    (None, [True, False], 0.4),  # 0.80 x 1/2
    (0.9, [False], 0.0),
])
def test_confidence_is_multiplied_by_the_supported_share(stated, results, expected) -> None:
    assert discount_confidence(stated, [check(r) for r in results]) == expected


def test_each_unsupported_claim_gets_a_warning_naming_it() -> None:
    long_claim = "The integral term " + "keeps summing the error " * 5
    checks = [check_claim(cited("Gravity pulls the torso downward", span(1, EXCERPTS[1])),
                          EXCERPTS),
              check(True), check_claim(Claim(long_claim, ()), EXCERPTS)]
    first, second = unsupported_verdicts(checks)
    assert first == Verdict("citation", CITATION_UNSUPPORTED, "warn",
                            'Unverified claim: "Gravity pulls the torso downward" (a passage it '
                            "cites shares none of its words); check it against the book.")
    assert second.message.startswith('Unverified claim: "The integral term keeps summing the')
    assert '…" (it cites no excerpt)' in second.message


# -- Claude's citations through the SDK and the fake --------------------------------------------

HITS = tuple(Hit(dataclasses.replace(make_chunk(i), text=text), dense=0.8, bm25_raw=0.0,
                 bm25=0.0, blended=0.8, rank=i + 1, passed=True, selected=True)
             for i, text in enumerate(EXCERPTS))


@pytest.fixture
def llm(claude: AnthropicServer) -> AnthropicLLM:
    return AnthropicLLM(api_key="test-key", base_url=claude.url)


def draft_for(llm: AnthropicLLM) -> Draft:
    return llm_draft(QUESTION, HITS, llm, BOOK, timeout=5.0)


def test_a_supported_answer_keeps_its_markers_and_its_confidence(
        llm: AnthropicLLM, claude: AnthropicServer) -> None:
    claude.plan(text=SUPPORTED)
    draft = draft_for(llm)
    assert draft.text == ("The integral term removes steady-state error [S1], and derivative "
                          "action damps motion [S2].")
    assert draft.markers == ("S1", "S2") and draft.generation_confidence == 0.9
    assert [c.claim.text for c in draft.claims] == [
        "The integral term removes steady-state error", "derivative action damps motion"]
    assert all(c.supported for c in draft.claims) and unsupported_verdicts(draft.claims) == []
    body = claude.message_requests[0].body
    assert body["system"] == SYSTEM_PROMPT.format(book=BOOK)
    documents, question = body["messages"][-1]["content"][:-1], body["messages"][-1]["content"][-1]
    assert [(d["title"], d["source"]["data"], d["citations"]) for d in documents] == [
        ("Chapter > Section 0", EXCERPTS[0], {"enabled": True}),
        ("Chapter > Section 1", EXCERPTS[1], {"enabled": True})]
    assert question == {"type": "text", "text": f"<question>\n{QUESTION}\n</question>"}
    assert f"[S1] Chapter > Section 0\n<excerpt>\n{EXCERPTS[0]}\n</excerpt>" in draft.prompt
    raw = json.loads(draft.raw_response)
    assert raw[0] == {"text": "The integral term removes steady-state error", "citations": [
        {"document_index": 0, "start_char_index": 44, "end_char_index": 113,
         "cited_text": INTEGRAL}]}


def test_an_uncited_claim_is_flagged_and_halves_the_confidence(
        llm: AnthropicLLM, claude: AnthropicServer) -> None:
    claude.plan(text=f"The integral term removes steady-state error [S1]. {MOONLIGHT}\n"
                     "Confidence: 0.9")
    draft = draft_for(llm)
    assert [c.reasons for c in draft.claims] == [(), (UNCITED,)]
    assert draft.claims[1].claim.text == MOONLIGHT
    assert draft.generation_confidence == 0.45


def test_a_citation_outside_its_excerpt_is_flagged(llm: AnthropicLLM,
                                                   claude: AnthropicServer) -> None:
    claude.plan(body=[
        text_block("The integral term removes steady-state error",
                   char_location(0, 44, 82, "Integral gains are tuned by moonlight.")),
        text_block(".\nConfidence: 0.9")])
    draft = draft_for(llm)
    assert draft.text == "The integral term removes steady-state error [S1]."  # what it cited
    assert [c.reasons for c in draft.claims] == [(SPAN_NOT_IN_EXCERPT,)]
    assert draft.generation_confidence == 0.0


def test_a_citation_sharing_no_words_with_its_claim_is_flagged(
        llm: AnthropicLLM, claude: AnthropicServer) -> None:
    claude.plan(text="Gravity pulls the torso downward [S2].\nConfidence: 0.9")
    draft = draft_for(llm)
    (check,) = draft.claims
    assert check.claim.spans == (span(1, EXCERPTS[1]),)
    assert check.reasons == (SPAN_SHARES_NO_TERMS,)


def test_a_streamed_answer_shows_markers_as_citations_arrive(
        llm: AnthropicLLM, claude: AnthropicServer) -> None:
    claude.plan(text=SUPPORTED)
    claude.plan(text=SUPPORTED)
    *deltas, draft = list(llm_draft_stream(QUESTION, HITS, llm, BOOK, timeout=5.0))
    assert len(deltas) > 3 and "".join(deltas) == SUPPORTED
    assert claude.message_requests[0].body["stream"] is True
    unstreamed = draft_for(llm)
    assert (draft.text, draft.markers, draft.claims, draft.generation_confidence) == (
        unstreamed.text, unstreamed.markers, unstreamed.claims, unstreamed.generation_confidence)


# -- the pipeline with RAG_LLM=anthropic, up to the audit record ---------------------------------

@pytest.fixture
def claude_pipeline(monkeypatch: pytest.MonkeyPatch, sample_index, settings_for,
                    claude: AnthropicServer) -> Pipeline:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
    settings = settings_for(llm="anthropic", llm_fallback=False)
    return Pipeline(sample_index, settings, get_llm(settings))


@pytest.mark.parametrize("stream", [False, True])
def test_pipeline_reports_an_unsupported_claim_in_the_chat_and_the_audit_record(
        claude_pipeline: Pipeline, claude: AnthropicServer, stream: bool) -> None:
    claude.plan(text=f"The integral term removes steady-state error [S1]. {MOONLIGHT}\n"
                     "Confidence: 0.9")
    response = list(claude_pipeline.answer_stream(PID_QUESTION, stream=stream))[-1]
    message = (f'Unverified claim: "{MOONLIGHT}" (it cites no excerpt); check it against the '
               "book.")
    assert CITATION_UNSUPPORTED in response.reason_codes
    assert response.status == "partial" and message in response.answer
    assert response.answer.startswith(
        f"The integral term removes steady-state error [S1]. {MOONLIGHT}")
    assert [c.marker for c in response.citations] == ["S1"]
    assert response.confidence.generation == 0.45
    record = to_record(response)
    assert CITATION_UNSUPPORTED in record["reason_codes"]
    assert {"guardrail": "citation", "reason_code": CITATION_UNSUPPORTED, "action": "warn",
            "message": message} in record["guardrail_actions"]


def test_pipeline_passes_a_supported_answer_unchanged(claude_pipeline: Pipeline,
                                                      claude: AnthropicServer) -> None:
    response = claude_pipeline.answer(PID_QUESTION)  # the fake's default reply
    assert response.reason_codes == () and response.status == "success"
    assert response.answer == "The integral term removes steady-state error [S1]."
    assert response.confidence.generation == 0.92
    assert all(c.supported for c in response.draft.claims)


# -- the same check on labels an OpenAI-compatible model writes ---------------------------------

@pytest.fixture
def labelling_llm(openai_server) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("llama3.1:8b", openai_server.base_url, api_key="")


def test_labelled_claims_are_held_to_the_sentences_of_the_excerpts_they_name(
        labelling_llm: OpenAICompatibleLLM, openai_server) -> None:
    openai_server.plan(text=SUPPORTED)
    draft = llm_draft(QUESTION, HITS, labelling_llm, BOOK, timeout=5.0)
    assert draft.text == ("The integral term removes steady-state error [S1], and derivative "
                          "action damps motion [S2].")
    assert [(c.claim.text, c.claim.spans, c.supported) for c in draft.claims] == [
        ("The integral term removes steady-state error", (span(0, INTEGRAL),), True),
        ("derivative action damps motion", (span(1, EXCERPTS[1]),), True)]
    assert draft.generation_confidence == 0.9 and draft.raw_response == SUPPORTED


@pytest.mark.parametrize(("reply", "reasons", "confidence"), [
    (f"The integral term removes steady-state error [S1]. {MOONLIGHT}\nConfidence: 0.9",
     [(), (UNCITED,)], 0.45),
    ("Gravity pulls the torso downward [S2].\nConfidence: 0.9", [(SPAN_SHARES_NO_TERMS,)], 0.0),
    ("The integral term removes steady-state error [S7].\nConfidence: 0.9",
     [(UNKNOWN_EXCERPT,)], 0.0),
    ("Derivative gains are tuned on a rig by hand every spring [S2].\nConfidence: 0.8",
     [(CLAIM_THINLY_COVERED,)], 0.0),
])
def test_labelled_claims_that_do_not_hold_up_are_flagged(
        labelling_llm: OpenAICompatibleLLM, openai_server, reply: str,
        reasons: list[tuple[str, ...]], confidence: float) -> None:
    openai_server.plan(text=reply)
    openai_server.plan(text=reply)
    draft = llm_draft(QUESTION, HITS, labelling_llm, BOOK, timeout=5.0)
    assert [c.reasons for c in draft.claims] == reasons
    assert draft.generation_confidence == confidence
    *_, streamed = list(llm_draft_stream(QUESTION, HITS, labelling_llm, BOOK, timeout=5.0))
    assert (streamed.text, streamed.claims) == (draft.text, draft.claims)


@pytest.mark.parametrize("stream", [False, True])
def test_an_unsupported_labelled_claim_reaches_the_chat_and_the_audit_record(
        sample_index, settings_for, labelling_llm: OpenAICompatibleLLM, openai_server,
        stream: bool) -> None:
    openai_server.plan(text=f"The integral term removes steady-state error [S1]. {MOONLIGHT}\n"
                            "Confidence: 0.9")
    settings = settings_for(llm="openai", openai_model="llama3.1:8b",
                            openai_base_url=openai_server.base_url, llm_fallback=False)
    response = list(Pipeline(sample_index, settings, labelling_llm).answer_stream(
        PID_QUESTION, stream=stream))[-1]
    message = (f'Unverified claim: "{MOONLIGHT}" (it cites no excerpt); check it against the '
               "book.")
    assert response.status == "partial" and message in response.answer
    assert response.confidence.generation == 0.45
    record = to_record(response)
    assert (record["llm_provider"], record["llm_model"]) == ("openai", "llama3.1:8b")
    assert {"guardrail": "citation", "reason_code": CITATION_UNSUPPORTED, "action": "warn",
            "message": message} in record["guardrail_actions"]
