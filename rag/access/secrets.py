"""Reading access secrets: the environment first, then .streamlit/secrets.toml.

rag.config.get_secret returns one text value; role passwords may also be a [roles] table, so
this reads the file itself. A secrets file that is not valid TOML is an error here (rather than
"no secrets"), since treating it as empty would silently open a server or an app."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag.config import PROJECT_ROOT
from rag.errors import ConfigError

SECRETS_FILE = PROJECT_ROOT / ".streamlit" / "secrets.toml"


def read_secrets(path: Path | None = None) -> dict[str, Any]:
    """The parsed secrets file; {} when there is none."""
    path = path or SECRETS_FILE
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        # the decoder's message quotes the line only by number, never its text
        raise ConfigError(f"{path} is not valid TOML ({type(e).__name__} at {_where(e)}); "
                          "fix the file.") from None


def _where(error: Exception) -> str:
    text = str(error)
    return text[text.find("(at "):].strip("()") if "(at " in text else "an unknown line"


def secret_text(name: str, env: Mapping[str, str] | None = None,
                secrets_file: Path | None = None) -> str:
    """`name` from the environment, else a text value of the secrets file; "" when absent."""
    env = os.environ if env is None else env
    value = (env.get(name) or "").strip()
    if value:
        return value
    stored = read_secrets(secrets_file).get(name, "")
    if not isinstance(stored, str):
        raise ConfigError(f"{name} in {secrets_file or SECRETS_FILE} must be text in quotes "
                          '("name:value,name2:value2").')
    return stored.strip()
