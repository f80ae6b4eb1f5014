"""The book library in a real browser (Chromium through Playwright, as test_browser.py): a reader
uploads an EPUB in the sidebar, watches it being indexed, asks it a question answered from its
own text with a citation, and switches back to the first book without a restart, the chat
following each. Screenshots go to tests/app/artifacts/ (library-*.png)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.builders import (
    HANDBOOK_TITLE,
    chromium,
    handbook_epub,
    shoot,
    streamlit_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ANSWER = "[data-testid='stChatMessageContent']"
INPUT = "[data-testid='stChatInput'] textarea"
FIRST_LOAD_MS = 240_000  # the first page load builds the index of the sample book
STEP_MS = 180_000  # indexing the uploaded book, on a busy machine


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    chromium()
    work = tmp_path_factory.mktemp("browser-library")
    with streamlit_app(work, RAG_BOOK="", RAG_LIBRARY=str(work / "library")) as url:
        yield url




def ask(page, question: str) -> str:
    answers = page.locator(ANSWER)
    before = answers.count()
    page.locator(INPUT).fill(question)
    page.keyboard.press("Enter")
    answers.nth(before + 1).wait_for(timeout=STEP_MS)  # the question, then the answer
    page.get_by_text("Sources", exact=False).last.wait_for(timeout=STEP_MS)
    return answers.nth(before + 1).inner_text()


def test_upload_index_ask_and_switch_back(server, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server)
        page.locator(INPUT).wait_for(timeout=FIRST_LOAD_MS)
        assert "Foundations of Physical AI" in page.locator(INPUT).get_attribute("placeholder")
        sidebar = page.locator("[data-testid='stSidebar']")
        sidebar.get_by_text("Add a book").click()
        sidebar.locator("input[type='file']").set_input_files(
            {"name": "handbook.epub", "mimeType": "application/epub+zip",
             "buffer": handbook_epub()})
        sidebar.get_by_role("button", name="Add and index").click()
        page.wait_for_function(
            "title => document.querySelector(\"[data-testid='stChatInput'] textarea\")"
            "?.placeholder.includes(title)", arg=HANDBOOK_TITLE, timeout=STEP_MS)
        shoot(page, "library-indexed", full_page=True)
        assert sidebar.get_by_text("handbook.epub").count() == 0  # the upload field is empty again
        answer = ask(page, "What pressure should I pump my 28 mm road tyre to?")
        assert "80 psi" in answer, answer
        shoot(page, "library-answered", full_page=True)
        # back to the first book: its chat, without the handbook's question
        sidebar.locator("[data-testid='stSelectbox']").first.click()
        page.get_by_role("option", name="Foundations of Physical AI").click()
        page.wait_for_function(
            "() => document.querySelector(\"[data-testid='stChatInput'] textarea\")"
            "?.placeholder.includes('Foundations of Physical AI')", timeout=STEP_MS)
        # the placeholder is drawn before the conversation: the handbook's turns stay on the page,
        # greyed out, until this run has drawn the first book's; wait for them to go
        expect(page.get_by_text("28 mm road tyre")).to_have_count(0, timeout=STEP_MS)
        shoot(page, "library-switched-back", full_page=True)
        assert not errors, errors
    finally:
        context.close()
