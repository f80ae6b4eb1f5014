"""Reading access secrets: the environment first, then .streamlit/secrets.toml.

rag.config.get_secret returns one text value, and reads a broken file as "no secret"; role
passwords may also be a [roles] table, and a secrets file that is not valid TOML is an error here
(rather than "no secrets"), since treating it as empty would silently open a server or an app."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag.config import PROJECT_ROOT
from rag.config.files import read_secrets as read_config_secrets
from rag.errors import ConfigError

SECRETS_FILE = PROJECT_ROOT / ".streamlit" / "secrets.toml"


def read_secrets(path: Path | None = None) -> dict[str, Any]:
    """The parsed secrets file ({} when there is none); not valid TOML is a ConfigError."""
    return read_config_secrets(path or SECRETS_FILE)


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
