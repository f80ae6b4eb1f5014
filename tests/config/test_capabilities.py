"""[guardrails] disallowed_capabilities: what a book's Folio refuses whatever the book says, set
in settings.toml or in the book's own folio.toml, and checked against the capabilities Folio
knows."""

from __future__ import annotations

import pytest

from rag.config import load_settings
from rag.config.capabilities import CAPABILITIES, DEFAULT_DISALLOWED
from rag.errors import ConfigError


def test_a_books_folio_toml_sets_its_disallowed_capabilities(tmp_path) -> None:
    book = tmp_path / "style-guide"
    book.mkdir()
    (book / "folio.toml").write_text('[guardrails]\ndisallowed_capabilities = ["realtime"]\n')
    assert load_settings(book_dir=book, env={}).disallowed_capabilities == ("realtime",)
    assert load_settings(book_dir=tmp_path, env={}).disallowed_capabilities == \
        DEFAULT_DISALLOWED  # the shipped settings.toml: every one


def test_an_unknown_capability_is_a_config_error_listing_the_known_ones(tmp_path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    (book / "folio.toml").write_text('[guardrails]\ndisallowed_capabilities = ["coding"]\n')
    with pytest.raises(ConfigError) as e:
        load_settings(book_dir=book, env={})
    assert "'coding'" in str(e.value) and all(f"'{name}'" in str(e.value)
                                              for name in CAPABILITIES)
