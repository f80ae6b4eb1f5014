"""reader_href: citation links open the in-app reader when the book has no published site."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from pages.components.common.citing import answer_markdown, sources_markdown
from pages.components.common.links import citation_href, link_problem, reader_href
from pages.components.common.tables import record_citations_frame

TEMPLATE_URL = "/docs/sensing/sensing-intro#timing-sync"


def test_empty_base_url_links_to_the_reader_page():
    href = reader_href(TEMPLATE_URL, "sensing", "sensing-intro", "timing-sync", "")
    assert href == "book?module=sensing&chapter=sensing-intro&section=timing-sync#timing-sync"


def test_ids_are_url_encoded_and_a_slash_in_the_chapter_survives():
    href = reader_href("/docs/m x/a/b#s&1", "m x", "a/b", "s&1", "")
    parts = urlsplit(href)
    assert parts.path == "book" and "/" not in parts.query.replace("%2F", "")
    assert parse_qs(parts.query) == {"module": ["m x"], "chapter": ["a/b"], "section": ["s&1"]}
    assert parts.fragment == "s%261"


def test_a_chapter_root_url_opens_the_chapter_without_a_section():
    href = reader_href("/docs/sensing/sensing-intro", "sensing", "sensing-intro", "slug", "")
    assert href == "book?module=sensing&chapter=sensing-intro"


def test_with_a_base_url_the_template_url_is_kept():
    url = "https://book.example/docs/sensing/sensing-intro#timing-sync"
    assert reader_href(url, "sensing", "sensing-intro", "timing-sync", "https://book.example") \
        == url


def test_no_url_stays_no_link():
    assert reader_href("", "", "", "", "") == ""
    assert citation_href({"url": "", "section_title": "Selected text"}, "") == ""


CITE = {"marker": "S1", "url": TEMPLATE_URL, "module_id": "sensing",
        "chapter_id": "sensing-intro", "section_id": "timing-sync", "section_title": "Timing",
        "stable": True, "excerpt": "x"}
READER = "book?module=sensing&chapter=sensing-intro&section=timing-sync#timing-sync"


def test_rendered_answers_sources_and_audit_tables_use_the_reader_href():
    assert f"[[1]]({READER} " in answer_markdown("A [S1].", [CITE], "")
    assert f"[Timing]({READER})" in sources_markdown([CITE], "")
    assert record_citations_frame({"citations": [CITE]}, "").loc[0, "url"] == READER
    # no base_url given (None): the stored URL as it is; the data keep the template URL
    assert f"[[1]]({TEMPLATE_URL} " in answer_markdown("A [S1].", [CITE])
    assert record_citations_frame({"citations": [CITE]}).loc[0, "url"] == TEMPLATE_URL
    assert CITE["url"] == TEMPLATE_URL


def test_a_link_names_the_book_it_points_into():
    href = reader_href(TEMPLATE_URL, "sensing", "sensing-intro", "timing-sync", "", "book")
    assert parse_qs(urlsplit(href).query)["book"] == ["book"]
    assert href.startswith("book?module=sensing&chapter=sensing-intro&section=timing-sync&")
    cited = citation_href({**CITE, "book_id": "physical-ai-book"}, "")
    assert parse_qs(urlsplit(cited).query)["book"] == ["physical-ai-book"]
    assert citation_href(CITE, "") == READER  # a citation logged without its book


CHAPTERS = {"sensing/sensing-intro": {}, "locomotion/pendulum-models": {}}


@pytest.mark.parametrize(("params", "expected"), [
    ({"module": "sensing", "chapter": "sensing-intro", "book": "book"}, ""),
    ({"module": "sensing", "chapter": "sensing-intro"}, ""),  # an older link: no book named
    ({}, ""),  # the Book page opened from the menu
    ({"module": "locomotion", "chapter": "pendulum-models", "book": "physical-ai-book"},
     "This citation is from another book (Physical AI), not from Foundations"),
    ({"module": "intro", "chapter": "index", "section": "capture-point"},
     "The cited chapter `intro/index#capture-point` is not in Foundations"),
    ({"module": "intro", "chapter": "index", "book": "book"}, "The cited chapter `intro/index`"),
])
def test_a_link_that_cannot_open_here_says_why(params, expected):
    problem = link_problem(params, CHAPTERS, "book", "Foundations", "Physical AI")
    assert problem.startswith(expected) if expected else problem == ""


def test_another_books_id_stands_in_for_its_unknown_title():
    problem = link_problem({"module": "a", "chapter": "b", "book": "garden"}, CHAPTERS, "book",
                           "Foundations")
    assert problem.startswith("This citation is from another book (garden)")
