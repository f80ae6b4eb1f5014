"""Which web origins may call the API from a browser (CORS): a documentation site's widget on
another origin. None by default; RAG_CORS_ORIGINS ("https://docs.example.org,https://x.y"),
else settings.toml [access] cors_origins = ["https://docs.example.org"]. An origin is
scheme://host[:port] exactly as a browser sends it; "*" allows every origin (keys still apply:
the API takes bearer tokens, never cookies)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from rag.config import DEFAULT_SETTINGS_FILE
from rag.config.files import read_settings_file
from rag.errors import ConfigError

ENV_NAME = "RAG_CORS_ORIGINS"
EXAMPLE = "https://docs.example.org"


def checked_origin(origin: str, where: str) -> str:
    """The origin as browsers send it (lower-case scheme and host, no trailing slash)."""
    origin = origin.strip()
    if origin == "*":
        return origin
    parts = urlsplit(origin.rstrip("/"))
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1 or \
            parts.path or parts.query or parts.fragment or parts.username:
        raise ConfigError(f"{where}: {origin[:80]!r} is not a web origin; write "
                          f"scheme://host[:port] such as {EXAMPLE} (no path), or \"*\".")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def cors_origins(env: Mapping[str, str] | None = None,
                 settings_file: Path | None = None) -> tuple[str, ...]:
    """The allowed origins, each checked; () when none are configured."""
    env = os.environ if env is None else env
    raw = (env.get(ENV_NAME) or "").strip()
    if raw:
        values, where = [v for v in raw.split(",") if v.strip()], ENV_NAME
    else:
        path = Path(settings_file or env.get("RAG_SETTINGS") or DEFAULT_SETTINGS_FILE)
        access = read_settings_file(path).get("access", {})
        values = access.get("cors_origins", []) if isinstance(access, dict) else []
        where = f"{path}: [access] cors_origins"
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ConfigError(f"{where} must be a list of origins such as [\"{EXAMPLE}\"].")
    return tuple(dict.fromkeys(checked_origin(v, where) for v in values))
