"""Tuning on labelled questions: question sets (`questions`, `question_sets`), ranking metrics
(`metrics`), weight × threshold sweeps (`sweep`), the recommended point (`recommend`), replay of
logged pools (`replay`), the BEIR benchmark (`beir`) and the settings writer
(`settings_writer`)."""

from __future__ import annotations

from rag.tuning.questions import Question, load_questions
from rag.tuning.recommend import recommend
from rag.tuning.sweep import run_sweep

__all__ = [
    "Question", "load_questions", "recommend", "run_sweep"
]
