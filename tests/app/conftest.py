"""Fixtures the app's browser tests share."""

from __future__ import annotations

import pytest

from tests.builders import launched_chromium


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright, one per test module."""
    with launched_chromium() as instance:
        yield instance
