"""Tuning results in a real browser (Chromium through Playwright, as test_browser.py): a sweep is
run, the objective changed, both runs are kept and set side by side, and the HTML report
downloads whole. Screenshots: tests/app/artifacts/tuning-*.png."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.builders import chromium, shoot, streamlit_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FIRST_LOAD_MS = 240_000  # the first page load builds the index of the sample book
STEP_MS = 180_000  # the sweep embeds every question of the sample set


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    chromium()
    with streamlit_app(tmp_path_factory.mktemp("browser-tuning")) as url:
        yield url


def idle(page) -> None:
    page.wait_for_timeout(500)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=STEP_MS)


def test_two_runs_side_by_side_and_the_report_downloads(server, browser, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server)
        page.locator("[data-testid='stChatInput'] textarea").wait_for(timeout=FIRST_LOAD_MS)
        page.get_by_role("link", name="Tuning").click()
        page.get_by_text("Past runs").wait_for(timeout=STEP_MS)
        page.get_by_text("Every sweep you run is kept here").wait_for(timeout=STEP_MS)
        page.get_by_role("button", name="Run the sweep").click()
        page.get_by_role("button", name="Report (HTML)").wait_for(timeout=STEP_MS)
        idle(page)
        page.get_by_text("Max Recall@k under a false-answer limit").click()
        page.get_by_text("Run B").wait_for(timeout=STEP_MS)
        idle(page)
        page.get_by_text("B − A").first.wait_for(state="attached", timeout=STEP_MS)  # a grid header
        runs = page.get_by_text("Past runs")
        runs.scroll_into_view_if_needed()
        shoot(page, "tuning-runs-compared")
        with page.expect_download(timeout=STEP_MS) as download:
            page.get_by_role("button", name="Report (HTML)").click()
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        assert saved.name.startswith("folio-tuning-") and saved.suffix == ".html"
        report = saved.read_text(encoding="utf-8")
        assert "Tuning report — " in report and report.count('class="plotly-graph-div"') == 3
        assert not errors, errors
    finally:
        context.close()
