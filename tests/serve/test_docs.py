"""/docs and /redoc render in Chromium with every request off this machine refused: their
scripts come from the pinned fastapi-offline package, not a CDN (issue 42: a blank page
offline). The screenshot is kept in tests/app/artifacts for a person to look at."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from rag.access.keys import ApiKeys
from rag.config import PROJECT_ROOT
from rag.serve.app import create_app
from rag.serve.auth import Access
from rag.serve.service import Service
from tests.builders import launched_chromium, uvicorn_thread

LOOPBACK = ("127.0.0.1", "localhost")
ARTIFACTS = PROJECT_ROOT / "tests" / "app" / "artifacts"


@pytest.fixture(scope="module")
def url(sample_index, sample_settings):
    service = Service.build(sample_settings, sample_index, None, None)
    app = create_app(service, Access(ApiKeys.parse("reader:docs-test-token-0123456789")))
    with uvicorn_thread(app) as base:
        yield base


def offline_page(browser, remote: list[str]):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})

    def route(r) -> None:
        if r.request.url.startswith(("data:", "blob:")) or \
                urlparse(r.request.url).hostname in LOOPBACK:
            r.continue_()
        else:
            remote.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return context, context.new_page()


def test_swagger_ui_shows_every_operation_and_the_authorize_button_offline(url):
    remote: list[str] = []
    with launched_chromium() as browser:
        context, page = offline_page(browser, remote)
        try:
            page.goto(f"{url}/docs")
            page.locator(".opblock-summary-path").first.wait_for(timeout=30_000)
            paths = set(page.locator(".opblock-summary-path").all_inner_texts())
            assert {"/v1/ask", "/v1/search", "/v1/health", "/v1/models",
                    "/v1/chat/completions"} <= {p.strip() for p in paths}
            assert page.locator("button.authorize").is_visible()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "api-docs-offline.png"))
        finally:
            context.close()
    assert remote == []


# ReDoc's footer draws its maker's logo from their CDN (no option turns it off in this bundle);
# refused here, the page is whole without it.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def test_redoc_renders_offline(url):
    remote: list[str] = []
    with launched_chromium() as browser:
        context, page = offline_page(browser, remote)
        try:
            page.goto(f"{url}/redoc")
            page.get_by_text("Answer a question (JSON, or Server-Sent Events)").first.wait_for(
                timeout=30_000)
        finally:
            context.close()
    assert set(remote) <= {REDOC_LOGO}
