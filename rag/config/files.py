"""settings.toml read whole: parsed, and every value checked for type before any is used; and
.streamlit/secrets.toml parsed (its values are read by rag.config.get_secret and rag.access)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from rag.config.check import check_settings_data
from rag.errors import ConfigError


def book_settings_file(book_dir: Path) -> Path:
    """A book's own settings file: folio.toml in its folder (or the site around its docs/)."""
    from rag.book.structure import FOLIO_SETTINGS, project_of

    return project_of(Path(book_dir).expanduser()) / FOLIO_SETTINGS


def read_settings_file(path: Path) -> dict[str, Any]:
    """The parsed file, its every value checked for type ({} when there is no file)."""
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path} is not valid TOML ({e}); fix or delete it.") from e
    check_settings_data(data, path)
    return data


def read_secrets(path: Path) -> dict[str, Any]:
    """The parsed secrets file; {} when there is none. Not valid TOML is a ConfigError whose
    message quotes the line only by number, never its text (it may hold a key)."""
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path} is not valid TOML ({type(e).__name__} at {_where(e)}); "
                          "fix the file.") from None


def _where(error: Exception) -> str:
    text = str(error)
    return text[text.find("(at "):].strip("()") if "(at " in text else "an unknown line"
