"""The empty chat's starting point (issue 42: "an empty chat offers no starting point"): the
book's chapters, and on request questions made from the book that ask themselves when clicked."""

from __future__ import annotations

import pytest

from tests.builders import open_app

pytestmark = pytest.mark.slow


def test_an_empty_chat_names_the_chapters_and_suggests_questions_that_ask_themselves(
        sample_settings, sample_index, monkeypatch):
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db)
    assert not at.exception, at.exception
    overview = [c.value for c in at.caption if "chapters:" in c.value]
    assert overview and overview[0].startswith("**Foundations of Physical AI** has ")
    suggest = [b for b in at.button if b.label == "Suggest questions to try"]
    assert suggest
    suggest[0].click().run()
    assert not at.exception, at.exception
    questions = [b for b in at.button if b.key and b.key.startswith("suggested_")]
    assert 1 <= len(questions) <= 4 and all(b.label.endswith("?") for b in questions)
    picked = questions[0].label
    questions[0].click().run()
    assert not at.exception, at.exception
    assert any(picked in m.value for m in at.chat_message[0].markdown), picked
    assert len(at.chat_message) >= 2  # the question, then its answer
