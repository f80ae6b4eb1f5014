"""Book markdown and internal names shown as a reader expects (pages.components.common.format):
no raw `**`/`#`/backticks in a text view, reason codes and metric names in words, "—" for a
missing value."""

from __future__ import annotations

import math

from pages.components.common.format import dash, markdown_html, verdict_caption, words
from pages.components.common.tables import reason_text

TEXT = ("## A Discrete-Time Implementation {#pid-implementation}\n\n"
        "Each leg has a **stance phase** and a *swing phase*; call `update(dt)` "
        "([see the loop](#loop)).\n```python\ndef update(dt):\n    return kp * error\n```")


def test_book_markdown_is_rendered_not_shown_raw() -> None:
    html = markdown_html(TEXT, query="stance implementation")
    for raw in ("**", "## ", "{#", "```", "`update", "](#loop)"):
        assert raw not in html, raw
    assert html.startswith("<strong>A Discrete-Time </strong><strong><mark>Implementation"
                           "</mark></strong>")
    assert "<strong><mark>stance</mark></strong><strong> phase</strong>" in html
    assert "<em>swing phase</em>" in html and "<code>update(dt)</code>" in html
    assert "see the loop" in html
    assert "<code>&nbsp; &nbsp; return kp * error</code>" in html  # indentation kept


def test_text_is_escaped_and_quoted_sentences_marked() -> None:
    html = markdown_html("A <b>tag</b> costs $5. The loop runs at 1 kHz.",
                         quotes=["The loop runs at 1 kHz."])
    assert "<b>" not in html and "&lt;b&gt;" in html and "$" not in html
    assert html.endswith("<mark>The loop runs at 1 kHz.</mark>")


def test_codes_read_as_words() -> None:
    assert words("sweep over data/eval/my_set.yaml (max_f1), recall_at_k 0.98, "
                 "false_answer_rate 0.0, other_thing") == (
        "sweep over data/eval/my_set.yaml (max F1), recall@k 0.98, false-answer rate 0.0, "
        "other thing")
    assert reason_text("beyond_top_k") == "beyond top-k"
    assert reason_text("pushed_out_by_rerank") == "pushed out by rerank"
    record = {"guardrail_actions": [{"reason_code": "confidence_low", "action": "warn"},
                                    {"reason_code": "capability_code", "action": "override"}]}
    assert verdict_caption(record) == ("Guardrails: low confidence (added a caveat) · asks for "
                                       "code (replaced the answer)")


def test_missing_values_are_a_dash() -> None:
    assert [dash(None), dash(math.nan), dash(0.5, "{:.0%}"), dash(0)] == ["—", "—", "50%", "0"]
