"""The claims of a cited reply, and whether the spans each one cites hold up. Pure, no I/O.
The spans are Claude's own citations, or the sentences rag.answer.markers found in the excerpt
a model's label names.

A claim is a reply block that cites something, or a sentence that cites nothing yet states
something (three or more content terms, not a lead-in ending in ":", not the confidence line).
A claim is supported when it cites at least one span and every span
- names an excerpt that was sent, and lies in it: cited_text equals excerpt[start:end], or at
  least occurs in it;
- shares a content term (stemmed, stop words dropped) with the claim;
and the spans together cover at least MIN_SHARED_SHARE of the claim's content terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from rag.answer import guardrails as g
from rag.answer.confidence import DEFAULT_GENERATION, parse_stated_confidence
from rag.index.lexical import tokenize
from rag.providers.base import CitedSpan, ReplyBlock
from rag.types import Verdict

MARKER_RE = re.compile(r"\[S(\d+)\]")  # Folio's source markers: [S1] is the first excerpt
UNCITED = "uncited"
UNKNOWN_EXCERPT = "unknown_excerpt"
SPAN_NOT_IN_EXCERPT = "span_not_in_excerpt"
SPAN_SHARES_NO_TERMS = "span_shares_no_terms"
CLAIM_THINLY_COVERED = "claim_thinly_covered"
REASONS = {  # the code, and what the chat says about a claim that has it
    UNCITED: "it cites no excerpt",
    UNKNOWN_EXCERPT: "it cites an excerpt it was not given",
    SPAN_NOT_IN_EXCERPT: "the text it cites is not in the excerpt it names",
    SPAN_SHARES_NO_TERMS: "a passage it cites shares none of its words",
    CLAIM_THINLY_COVERED: "the passages it cites share few of its words",
}
# Framing ("Here is what the book says.") has at most two content stems; a statement names at
# least a subject, an action and an object.
MIN_STATEMENT_TERMS = 3
# Claude paraphrases, so exact wording is not expected; one stem in four from the cited text
# still lets a ten-term paraphrase pass on three ("integral", "term", "error"), while a claim of
# five or more terms whose only link to its spans is one common word ("robot") fails.
MIN_SHARED_SHARE = 0.25
CLAIM_PREVIEW_CHARS = 80
SENTENCE_BREAK_RE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Claim:
    text: str
    spans: tuple[CitedSpan, ...]


@dataclass(frozen=True)
class ClaimCheck:
    claim: Claim
    reasons: tuple[str, ...]  # REASONS codes; empty when the claim is supported
    shared_terms: tuple[str, ...]  # the claim's content terms that its valid spans contain
    share: float  # len(shared_terms) / the claim's content terms

    @property
    def supported(self) -> bool:
        return not self.reasons


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-blank sentence or line."""
    bounds, start = [], 0
    for match in SENTENCE_BREAK_RE.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    return [(a, b) for a, b in bounds if text[a:b].strip()]


def claim_text(text: str) -> str:
    """The words of a claim: a marker the model typed itself is no citation and no claim."""
    return re.sub(r"(?<!\s)\s*+" + MARKER_RE.pattern, "", text).strip()


def is_statement(sentence: str) -> bool:
    return (parse_stated_confidence(sentence) is None and not sentence.rstrip().endswith(":")
            and len(set(tokenize(sentence))) >= MIN_STATEMENT_TERMS)


def extract_claims(blocks: Sequence[ReplyBlock],
                   exempt: Callable[[str], bool] = lambda sentence: False) -> list[Claim]:
    """Cited blocks, and uncited statements in sentences that cite nothing at all: an uncited
    clause of a sentence with a cited block is that block's lead-in, not a claim of its own.
    `exempt` sentences (e.g. "The excerpts do not cover this.") are never claims."""
    text = "".join(b.text for b in blocks)
    offsets = list(accumulate((len(b.text) for b in blocks), initial=0))
    claims: list[Claim] = []
    taken: set[int] = set()
    for start, end in sentence_bounds(text):
        cited = [i for i, b in enumerate(blocks)
                 if b.spans and offsets[i] < end and offsets[i + 1] > start]
        for i in cited:
            if i not in taken and tokenize(blocks[i].text):
                taken.add(i)
                claims.append(Claim(claim_text(blocks[i].text), blocks[i].spans))
        sentence = claim_text(text[start:end])
        if not cited and is_statement(sentence) and not exempt(sentence):
            claims.append(Claim(sentence, ()))
    return claims


def span_in_excerpt(span: CitedSpan, excerpts: Sequence[str]) -> bool:
    if not 0 <= span.document_index < len(excerpts) or not span.cited_text.strip():
        return False
    excerpt = excerpts[span.document_index]
    if excerpt[span.start:span.end] == span.cited_text:
        return True
    # offsets can drift (a provider counting UTF-16 units); the words must still be there
    return " ".join(span.cited_text.split()) in " ".join(excerpt.split())


def check_claim(claim: Claim, excerpts: Sequence[str]) -> ClaimCheck:
    if not claim.spans:
        return ClaimCheck(claim, (UNCITED,), (), 0.0)
    terms = set(tokenize(claim.text))
    reasons: list[str] = []
    covered: set[str] = set()
    for span in claim.spans:
        if not 0 <= span.document_index < len(excerpts):  # a label like [S9] of five excerpts
            reasons.append(UNKNOWN_EXCERPT)
            continue
        if not span_in_excerpt(span, excerpts):
            reasons.append(SPAN_NOT_IN_EXCERPT)
            continue
        shared = terms & set(tokenize(span.cited_text))
        if not shared:
            reasons.append(SPAN_SHARES_NO_TERMS)
        covered |= shared
    share = len(covered) / len(terms) if terms else 0.0
    if covered and share < MIN_SHARED_SHARE:
        reasons.append(CLAIM_THINLY_COVERED)
    return ClaimCheck(claim, tuple(dict.fromkeys(reasons)), tuple(sorted(covered)),
                      round(share, 4))


def check_claims(claims: Sequence[Claim], excerpts: Sequence[str]) -> tuple[ClaimCheck, ...]:
    return tuple(check_claim(c, excerpts) for c in claims)


def discount_confidence(stated: float | None, checks: Sequence[ClaimCheck]) -> float | None:
    """The generation confidence times the share of supported claims: with one claim in four
    unsupported the answer keeps 75 % of what the model stated (of 0.80 when it stated none).
    Unchanged when every claim holds up or there is none."""
    if all(c.supported for c in checks):
        return stated
    share = sum(c.supported for c in checks) / len(checks)
    return round((DEFAULT_GENERATION if stated is None else stated) * share, 4)


def preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CLAIM_PREVIEW_CHARS else text[:CLAIM_PREVIEW_CHARS - 1] + "…"


def unsupported_verdicts(checks: Sequence[ClaimCheck]) -> list[Verdict]:
    """A caveat per unsupported claim, naming it and its first failed check."""
    return [Verdict("citation", g.CITATION_UNSUPPORTED, "warn",
                    f'Unverified claim: "{preview(c.claim.text)}" ({REASONS[c.reasons[0]]}); '
                    "check it against the book.")
            for c in checks if not c.supported]
