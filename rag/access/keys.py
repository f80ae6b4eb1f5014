"""API keys for the HTTP server: bearer tokens, each with a client name for the audit.

Tokens come from RAG_API_KEYS ("name:token,name2:token2") or, when that is unset, from the same
name in .streamlit/secrets.toml. Only SHA-256 digests are kept; a presented token is compared
against every digest in constant time, so neither timing nor a log line tells a caller which
keys exist. Tokens are random strings, not passwords, so a fast hash is enough here."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from pathlib import Path

from rag.access.secrets import secret_text
from rag.errors import ConfigError
from rag.types import LOCAL_CLIENT

ENV_NAME = "RAG_API_KEYS"
MIN_TOKEN_CHARS = 16
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TOKEN_RECIPE = '`python -c "import secrets; print(secrets.token_urlsafe(32))"`'
FORMAT_HINT = f'{ENV_NAME} is "name:token,name2:token2"'


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class ApiKeys:
    """Client names and their token digests; never the tokens."""

    def __init__(self, digests: Mapping[str, bytes]) -> None:
        self._digests = dict(digests)

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None,
             secrets_file: Path | None = None) -> ApiKeys:
        """From RAG_API_KEYS or, when unset, the secrets file; empty when neither has keys."""
        return cls.parse(secret_text(ENV_NAME, env, secrets_file))

    @classmethod
    def parse(cls, text: str) -> ApiKeys:
        """Keys from "name:token,...". Messages name the entry by position or name, never by
        its token."""
        digests: dict[str, bytes] = {}
        for position, entry in enumerate(text.split(","), start=1):
            entry = entry.strip()
            if not entry:
                continue
            name, sep, token = (part.strip() for part in entry.partition(":"))
            where = f"{ENV_NAME} entry {position}"
            if not sep or not name:
                raise ConfigError(f"{where} has no client name; {FORMAT_HINT}.")
            if not NAME_PATTERN.fullmatch(name):
                raise ConfigError(f"{where}: the client name may use letters, digits, '.', '_' "
                                  "and '-' (at most 64); " + FORMAT_HINT + ".")
            if len(token) < MIN_TOKEN_CHARS:
                raise ConfigError(f"{where} ({name}): the token must be at least "
                                  f"{MIN_TOKEN_CHARS} characters; make one with {TOKEN_RECIPE}.")
            if name == LOCAL_CLIENT:
                raise ConfigError(f"{where}: the client name {LOCAL_CLIENT!r} is reserved for "
                                  "questions asked without a key; choose another name.")
            if name in digests:
                raise ConfigError(f"{where}: the client name {name!r} is listed twice; give "
                                  "each key its own name.")
            token_digest = digest(token)
            if any(hmac.compare_digest(token_digest, d) for d in digests.values()):
                raise ConfigError(f"{where} ({name}) has the same token as another client; give "
                                  "each client its own token.")
            digests[name] = token_digest
        return cls(digests)

    def __len__(self) -> int:
        return len(self._digests)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._digests)

    def client_for(self, token: str | None) -> str | None:
        """The client name for a presented bearer token; None when unknown or empty."""
        if not token:
            return None
        presented = digest(token)
        found = None
        for name, known in self._digests.items():  # no early exit: every digest is compared
            if hmac.compare_digest(presented, known):
                found = name
        return found

    def __repr__(self) -> str:
        return f"ApiKeys(clients={list(self._digests)!r})"
