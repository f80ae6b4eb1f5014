"""The audit explorer's filter bar in a real browser (Debian's Chromium through Playwright, as
tests/app/test_browser.py drives it): the date range shows both of its dates whole, at the
widths a reviewer's window has (issue 42: it read "2026/10/31 – 2026/11").

Screenshots are saved under tests/artifacts/ (ignored by git)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.builders import chromium, launched_chromium, streamlit_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ARTIFACTS = Path(__file__).parent / "artifacts"
LOAD_MS = 240_000
SCROLLER = "[data-testid='stDateInputFieldsScroller']"
END_DAY = "[aria-label='day, Time range (UTC) end date']"


@pytest.fixture(scope="module")
def server(sample_index, sample_index_dir, tmp_path_factory):
    chromium()  # skip (or fail in CI) before starting anything
    work = tmp_path_factory.mktemp("audit-browser")
    # embedded Qdrant admits one process per folder, and this one holds the sample index
    shutil.copytree(sample_index_dir, work / "index", ignore=shutil.ignore_patterns(".lock"))
    with streamlit_app(work) as url:
        yield url


@pytest.mark.parametrize("width", [1400, 1100, 900])
def test_the_date_range_is_shown_whole(server, width):
    with launched_chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{server}/audit")
        page.locator(END_DAY).wait_for(timeout=LOAD_MS)
        page.locator("[data-testid='stMetric']").first.wait_for(timeout=LOAD_MS)
        page.wait_for_timeout(1000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"audit_filters_{width}.png"))
        scroller = page.locator(SCROLLER).first
        hidden = scroller.evaluate("e => e.scrollWidth - e.clientWidth")
        field, day = scroller.bounding_box(), page.locator(END_DAY).bounding_box()
        assert hidden <= 0, f"{hidden} px of the range scrolled out of view at {width} px"
        assert day["x"] + day["width"] <= field["x"] + field["width"] + 0.5
        assert page.locator(END_DAY).inner_text().strip().isdigit()
        assert not errors, errors
