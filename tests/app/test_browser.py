"""The app in a real browser: `streamlit run` on a loopback port, driven by Playwright through
Debian's Chromium. Required in CI (CI=true); skipped with a reason elsewhere without Chromium.

Screenshots of each page are saved under tests/artifacts/ (ignored by git)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
import yaml
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from rag.config import PROJECT_ROOT
from tests.builders import chromium, refuse_network, shoot, streamlit_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ANSWER = "[data-testid='stChatMessageContent']"
FIRST_LOAD_MS = 240_000  # the first page load builds the index of the sample book
STEP_MS = 60_000


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """`streamlit run app.py` with its own index and audit file; always terminated."""
    chromium()  # skip (or fail in CI) before starting anything
    with streamlit_app(tmp_path_factory.mktemp("browser")) as url:
        yield url



def eval_question() -> str:
    data = yaml.safe_load((PROJECT_ROOT / "data" / "eval" / "questions.yaml").read_text())
    return next(q["question"] for q in data["questions"] if q.get("in_scope"))



def open_expander(page, label: str, content) -> None:
    """Open an expander and wait for its content. A click that lands while the app is still
    rerunning after an answer can be undone by that rerun, so wait for idle and retry."""
    for _ in range(5):
        page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=STEP_MS)
        details = page.locator("[data-testid='stExpander'] details").filter(has_text=label).last
        if details.get_attribute("open") is None:
            page.get_by_text(label).last.click()
        try:
            content.first.wait_for(timeout=10_000)
            return
        except PlaywrightTimeout:
            continue
    content.first.wait_for(timeout=STEP_MS)


def select_first_row(page, shows) -> None:
    """Tick the newest row of the visible log table until `shows` appears (the grid is a canvas
    that takes a moment to accept clicks after it is drawn)."""
    grid = page.locator("[data-testid='stDataFrame']:visible").first
    grid.locator("canvas").first.wait_for(timeout=STEP_MS)
    for _ in range(5):
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 15, box["y"] + 52)  # the first row's selection box
        try:
            shows.wait_for(timeout=10_000)
            return
        except PlaywrightTimeout:
            continue
    shows.wait_for(timeout=STEP_MS)


def test_ask_reload_inspect_and_audit(server, browser):
    question = eval_question()
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server)
    chat_box = page.locator("[data-testid='stChatInput'] textarea")
    chat_box.wait_for(timeout=FIRST_LOAD_MS)

    chat_box.fill(question)
    chat_box.press("Enter")
    answer = page.locator(ANSWER).filter(has=page.locator("a[href*='book?module=']")).last
    answer.wait_for(timeout=STEP_MS)
    open_expander(page, "Why this answer",
                  page.locator("[data-testid='stExpander'] [data-testid='stDataFrame'] canvas"))
    page.wait_for_timeout(1000)
    shoot(page, "chat")

    page.reload()  # history comes back from localStorage
    page.get_by_role("group", name="Chat message from user").filter(
        has_text=question).wait_for(timeout=STEP_MS)
    page.locator(ANSWER).filter(has=page.locator("a[href*='book?module=']")).last.wait_for(
        timeout=STEP_MS)
    page.get_by_text("1 of the last 20 questions are kept in this browser").wait_for(
        timeout=STEP_MS)
    shoot(page, "chat_after_reload")

    page.get_by_role("link", name="Retrieval inspector").click()
    page.get_by_text("Enter a question above").wait_for(timeout=STEP_MS)  # the page has settled
    search = page.locator("input[aria-label='Question']")
    search.fill(question)
    search.press("Enter")
    page.get_by_text("Top candidate").wait_for(timeout=STEP_MS)
    page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=STEP_MS)
    page.wait_for_timeout(1000)
    shoot(page, "inspector")

    page.get_by_role("link", name="Audit explorer").click()
    page.get_by_role("tab", name="Questions").wait_for(timeout=STEP_MS)
    page.locator("[data-testid='stMetric']").first.wait_for(timeout=STEP_MS)
    page.wait_for_timeout(1000)
    shoot(page, "audit")
    page.get_by_role("tab", name="Questions").click()
    select_first_row(page, page.get_by_role("heading", name=question))
    page.wait_for_timeout(500)
    shoot(page, "audit_drilldown")
    assert not errors, errors


BLOCK_STORAGE = """
Object.defineProperty(window, "localStorage", {
  get() { throw new DOMException("The operation is insecure.", "SecurityError"); },
});
"""


def test_without_local_storage_the_chat_works_and_says_so(server, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        context.add_init_script(BLOCK_STORAGE)
        page = context.new_page()
        page.goto(server)
        chat_box = page.locator("[data-testid='stChatInput'] textarea")
        chat_box.wait_for(timeout=FIRST_LOAD_MS)
        page.get_by_text("the conversation will not persist after a reload").wait_for(
            timeout=STEP_MS)
        chat_box.fill(eval_question())
        chat_box.press("Enter")
        page.locator(ANSWER).filter(has=page.locator("a[href*='book?module=']")).last.wait_for(
            timeout=STEP_MS)
        shoot(page, "chat_without_storage")
    finally:
        context.close()


LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")


def test_nothing_is_fetched_from_the_network(server, browser):
    """Every page works with no network: a request for anything but the local server (or a
    data:/blob: URL) is aborted and recorded, and must not happen. The icons are drawn with the
    bundled Material Symbols font (a glyph, not its ligature name such as "forum")."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        remote = refuse_network(context, lambda url: url.startswith(("data:", "blob:"))
                                or urlparse(url).hostname in LOOPBACK)
        page = context.new_page()
        page.goto(server)
        page.locator("[data-testid='stChatInput'] textarea").wait_for(timeout=FIRST_LOAD_MS)
        for name in ("Retrieval inspector", "Book", "Tuning", "Audit explorer", "Chat"):
            page.get_by_role("link", name=name).click()
            page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden",
                                                                   timeout=STEP_MS)
            page.wait_for_timeout(1500)
        assert remote == []
        assert page.evaluate("document.fonts.check('24px \"Material Symbols Rounded\"')")
        icons = page.locator("[data-testid='stIconMaterial']:visible")
        assert icons.count() >= 5  # the navigation's page icons at least
        for box in [icons.nth(i).bounding_box() for i in range(icons.count())]:
            assert box["width"] <= 1.6 * box["height"], box  # a glyph, not a word
    finally:
        context.close()


PASSAGE = ("An absolute encoder reports the actual angle immediately at power-up. Single-turn "
           "absolute encoders know the angle within one revolution; multi-turn versions also "
           "track the number of revolutions, either with a gear train or a battery-backed "
           "counter. Most modern humanoids use absolute encoders on the joint output so that the "
           "robot knows its configuration the moment it switches on.")
PASSAGE_QUESTIONS = ("Why do humanoids use absolute encoders?",
                     "What do multi-turn absolute encoders track?",
                     "What do single-turn absolute encoders know?")


def in_view(page, locator) -> bool:
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] < height and box["y"] + box["height"] > 0


def test_the_passage_stays_in_view_with_the_newest_answer(server, browser):
    """After several answers about a pasted passage, at a laptop's 1280×900, the paste panel and
    the newest answer, with the passage it used, are on screen together."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(server)
        chat_box = page.locator("[data-testid='stChatInput'] textarea")
        chat_box.wait_for(timeout=FIRST_LOAD_MS)
        page.get_by_role("radio", name="Selected text", exact=True).click()
        paste = page.get_by_placeholder("Paste a passage from the book")
        paste.wait_for(timeout=STEP_MS)
        paste.fill(PASSAGE)
        paste.press("Control+Enter")
        page.get_by_text("characters · pasted").wait_for(timeout=STEP_MS)
        for n, question in enumerate(PASSAGE_QUESTIONS, start=1):
            chat_box.fill(question)
            chat_box.press("Enter")
            page.get_by_text("The passage this answer used").nth(n - 1).wait_for(
                timeout=STEP_MS)
            page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden",
                                                                   timeout=STEP_MS)
        page.mouse.move(400, 400)
        newest = page.locator(ANSWER).last
        panel = page.locator(".st-key-folio_passage_panel")
        used = newest.locator(".folio-passage-used")
        for _ in range(10):  # down to the newest answer, once the page has laid it out
            page.mouse.wheel(0, 20_000)
            page.wait_for_timeout(500)
            if in_view(page, panel) and in_view(page, used):
                break
        assert in_view(page, panel) and in_view(page, used), "panel or passage out of view"
        assert in_view(page, page.get_by_placeholder("Paste a passage from the book")) or \
            in_view(page, page.get_by_text("Edit the passage"))
        assert used.locator("mark").count() >= 1
        shoot(page, "chat_passage")
    finally:
        context.close()


def slider_value(page, n: int) -> float:
    return float(page.locator("[data-testid='stSlider'] input[type=range]").nth(n).input_value())


def click_slider(page, n: int, fraction: float) -> None:
    """Click the n-th slider's track at `fraction` of its width, as a user sets a value (keys
    pressed quickly are not all sent), and wait for the rerun it starts."""
    track = page.locator("[data-testid='stSlider']").nth(n).locator(
        "div[data-orientation='horizontal'][style*='touch-action']").first
    box = track.bounding_box()
    page.mouse.click(box["x"] + fraction * box["width"], box["y"] + box["height"] / 2)
    page.wait_for_timeout(1500)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=STEP_MS)


def test_inspector_reset_moves_the_sliders_in_the_browser(server, browser):
    """Reset puts the sliders back where the table is ranked, and the next change to another
    slider keeps them there (the browser sends back what it shows)."""
    active = active_weight()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(server)
        page.locator("[data-testid='stChatInput'] textarea").wait_for(timeout=FIRST_LOAD_MS)
        page.get_by_role("link", name="Retrieval inspector").click()
        search = page.locator("input[aria-label='Question']")
        search.wait_for(timeout=STEP_MS)
        search.fill(eval_question())
        search.press("Enter")
        page.get_by_text("Top candidate").wait_for(timeout=STEP_MS)
        click_slider(page, 0, 0.4)  # dense weight
        assert slider_value(page, 0) == pytest.approx(0.4)
        page.get_by_text("BM25 weight = 1 − dense = 0.60").wait_for(timeout=STEP_MS)
        page.get_by_role("button", name="Reset to active settings").click()
        page.wait_for_timeout(1500)
        page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=STEP_MS)
        bm25 = f"BM25 weight = 1 − dense = {1 - active:.2f}"
        for step, top_k in (("after reset", 0.5), ("after top-k moved", 0.8)):
            assert slider_value(page, 0) == pytest.approx(active), step
            page.get_by_text(bm25).wait_for(timeout=STEP_MS)
            click_slider(page, 2, top_k)
        assert slider_value(page, 0) == pytest.approx(active)
        page.get_by_text(bm25).wait_for(timeout=STEP_MS)
        shoot(page, "inspector_reset")
    finally:
        page.close()


def active_weight() -> float:
    """The active dense weight of the shipped settings (what Reset goes back to)."""
    import tomllib

    data = tomllib.loads((PROJECT_ROOT / "data" / "settings.toml").read_text())
    return float(data["retrieval"]["w_dense"])
