"""Book separation in a real browser (Chromium through Playwright, as test_browser.py): the
chat's localStorage history is kept per book, an older unkeyed history moves only when it is
provably this book's, another book's citation is explained on the Book page, and the audit
table's toolbar no longer covers the export buttons. Screenshots go to tests/app/artifacts/."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest

from pages.components.chat.support import LEGACY_STORAGE_KEY, serialize_history, storage_key
from rag.answer.record import history_record
from tests.builders import chromium, make_response, shoot, streamlit_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ANSWER = "[data-testid='stChatMessageContent']"
FIRST_LOAD_MS = 240_000  # the first page load builds the index of the sample book
STEP_MS = 60_000
QUESTION = "What does an incremental encoder output?"
SEED = """
if (!window.sessionStorage.getItem("folio-test-seeded")) {
  window.localStorage.setItem(%s, %s);
  window.sessionStorage.setItem("folio-test-seeded", "1");
}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """`streamlit run app.py` over the sample book with its own index and audit file."""
    chromium()
    with streamlit_app(tmp_path_factory.mktemp("browser-books"), RAG_BOOK="") as url:
        yield url




def legacy_history(book_id: str | None, question: str) -> str:
    """What an older Folio kept under the unkeyed localStorage key: one turn, of `book_id`."""
    response = make_response(question)
    settings = {**response.settings, "book_id": book_id} if book_id else response.settings
    return serialize_history("legacy-session", [history_record(
        dataclasses.replace(response, settings=settings))])


def open_seeded(browser, server: str, legacy: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    context.add_init_script(SEED % (json.dumps(LEGACY_STORAGE_KEY), json.dumps(legacy)))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server)
    page.locator("[data-testid='stChatInput'] textarea").wait_for(timeout=FIRST_LOAD_MS)
    return context, page, errors


def stored(page, key: str) -> str | None:
    return page.evaluate("key => window.localStorage.getItem(key)", key)


def test_history_is_per_book_and_another_books_is_never_shown(server, browser):
    legacy = legacy_history("physical-ai-book", "What is a ROS 2 node (other book)?")
    context, page, errors = open_seeded(browser, server, legacy)
    try:
        page.get_by_text("0 of the last 20 questions are kept in this browser").wait_for(
            timeout=STEP_MS)
        assert page.get_by_text("ROS 2 node (other book)").count() == 0
        chat_box = page.locator("[data-testid='stChatInput'] textarea")
        chat_box.fill(QUESTION)
        chat_box.press("Enter")
        page.locator(ANSWER).filter(has=page.locator("a[href*='book=book']")).last.wait_for(
            timeout=STEP_MS)
        page.get_by_text("1 of the last 20 questions are kept in this browser").wait_for(
            timeout=STEP_MS)
        mine = json.loads(stored(page, storage_key("book")))
        assert [t["user_query_text"] for t in mine["turns"]] == [QUESTION]
        assert [t["book_id"] for t in mine["turns"]] == ["book"]
        assert stored(page, LEGACY_STORAGE_KEY) == legacy  # another book's: left alone
        page.reload()
        page.get_by_role("group", name="Chat message from user").filter(
            has_text=QUESTION).wait_for(timeout=STEP_MS)
        assert page.get_by_text("ROS 2 node (other book)").count() == 0
        shoot(page, "books_chat_history")
        assert not errors, errors
    finally:
        context.close()


def test_an_unkeyed_history_of_this_book_moves_under_its_key(server, browser):
    legacy = legacy_history("book", "Where does the capture point lie (kept)?")
    context, page, errors = open_seeded(browser, server, legacy)
    try:
        page.get_by_role("group", name="Chat message from user").filter(
            has_text="capture point lie (kept)").wait_for(timeout=STEP_MS)
        gone = f"() => window.localStorage.getItem({json.dumps(LEGACY_STORAGE_KEY)}) === null"
        page.wait_for_function(gone, timeout=STEP_MS)
        moved = json.loads(stored(page, storage_key("book")))
        assert [t["user_query_text"] for t in moved["turns"]] == [
            "Where does the capture point lie (kept)?"]
        assert moved["session_id"] == "legacy-session"
        assert not errors, errors
    finally:
        context.close()


def test_another_books_citation_is_explained_on_the_book_page(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{server}/book?module=locomotion&chapter=pendulum-models"
                  "&section=capture-point&book=physical-ai-book")
        page.get_by_text("This citation is from another book (physical-ai-book)").wait_for(
            timeout=FIRST_LOAD_MS)
        start = page.get_by_role("button", name="Read Foundations of Physical AI from its first "
                                 "chapter")
        start.wait_for(timeout=STEP_MS)
        assert page.get_by_role("heading", name="The Capture Point", exact=True).count() == 0
        shoot(page, "books_other_book_citation")
        start.click()
        page.get_by_role("heading", name="Control: From Intent to Torque").wait_for(
            timeout=STEP_MS)
        page.goto(f"{server}/book?module=locomotion&chapter=pendulum-models"
                  "&section=capture-point&book=book")
        page.get_by_role("heading", name="The Capture Point", exact=True).wait_for(timeout=STEP_MS)
        assert page.get_by_text("This citation is from another book").count() == 0
    finally:
        page.close()


def overlaps(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def test_the_table_toolbar_leaves_the_export_buttons_clear(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    try:
        page.goto(server)
        chat_box = page.locator("[data-testid='stChatInput'] textarea")
        chat_box.wait_for(timeout=FIRST_LOAD_MS)
        chat_box.fill(QUESTION)
        chat_box.press("Enter")
        page.locator(ANSWER).filter(has=page.locator("a[href*='book=book']")).last.wait_for(
            timeout=STEP_MS)
        page.get_by_role("link", name="Audit explorer").click()
        page.get_by_role("tab", name="Questions").wait_for(timeout=STEP_MS)
        page.get_by_role("tab", name="Questions").click()
        grid = page.locator("[data-testid='stDataFrame']:visible").first
        grid.locator("canvas").first.wait_for(timeout=STEP_MS)
        page.wait_for_timeout(1000)
        box = grid.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 50)  # shows the toolbar
        toolbar = page.locator("[data-testid='stElementToolbar']:visible").first
        toolbar.wait_for(timeout=STEP_MS)
        page.wait_for_timeout(500)
        shoot(page, "books_audit_export_buttons")
        tools = toolbar.bounding_box()
        for label in ("CSV", "Parquet"):
            button = page.get_by_role("button", name=label, exact=True).bounding_box()
            assert not overlaps(tools, button), (label, tools, button)
        parquet = page.get_by_role("button", name="Parquet", exact=True)
        parquet.hover(trial=True)  # nothing else would receive the pointer there
        assert parquet.is_enabled()
    finally:
        page.close()
