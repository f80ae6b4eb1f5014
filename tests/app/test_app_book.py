"""The Book page through AppTest: citation links' query parameters open the right chapter."""

from __future__ import annotations

import pytest

from tests.builders import open_book_page

pytestmark = pytest.mark.slow


def open_book(monkeypatch, settings, **params: str):
    return open_book_page(monkeypatch, settings.index_dir, settings.audit_db, **params)


def headings(at) -> list[str]:
    return [h.value for h in at.subheader]


def test_query_params_select_the_chapter_and_mark_the_section(sample_settings, sample_index,
                                                              monkeypatch):
    at = open_book(monkeypatch, sample_settings, module="sensing", chapter="sensing-intro",
                   section="timing-sync")
    assert at.selectbox(key="reader_chapter").value == "sensing/sensing-intro"
    assert "Timing and Synchronisation" in headings(at)
    assert "The Perception-Action Loop" in headings(at)  # the whole chapter, in order
    order = headings(at)
    assert order.index("The Perception-Action Loop") < order.index("Timing and Synchronisation")
    marked = [b for b in at.main.children.values() if b.type == "flex_container"
              and b.proto.id.endswith("-reader_target")]  # st.container(key="reader_target")
    assert [h.value for b in marked for h in b.subheader] == ["Timing and Synchronisation"]
    assert [h.proto.anchor for b in marked for h in b.subheader] == ["timing-sync"]
    assert not at.warning


def test_an_unstable_section_carries_a_note_and_picking_a_chapter_follows(
        sample_settings, sample_index, monkeypatch):
    at = open_book(monkeypatch, sample_settings, module="control", chapter="pid-control")
    assert "Common Tuning Mistakes" in headings(at)
    assert any("derived ID" in c.value for c in at.caption)
    at.selectbox(key="reader_chapter").set_value("sensing/sensing-intro").run()
    assert not at.exception, at.exception
    assert "Timing and Synchronisation" in headings(at)
    assert at.query_params["chapter"] in ("sensing-intro", ["sensing-intro"])


def test_an_unknown_section_is_reported_and_the_chapter_still_shows(
        sample_settings, sample_index, monkeypatch):
    at = open_book(monkeypatch, sample_settings, module="sensing", chapter="sensing-intro",
                   section="nope")
    assert "Timing and Synchronisation" in headings(at)
    assert any("No section `nope`" in w.value for w in at.warning)
