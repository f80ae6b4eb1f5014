"""API keys for the HTTP server: bearer tokens, each with a client name for the audit.

Tokens come from RAG_API_KEYS ("name:token,name2:token2") or, when that is unset, from the same
name in .streamlit/secrets.toml. Only SHA-256 digests are kept; a presented token is compared
against every digest in constant time, so neither timing nor a log line tells a caller which
keys exist. Tokens are random strings, not passwords, so a fast hash is enough here.

A running server sees the secrets file as it is now (LiveKeys): a key removed from the file stops
working within a second, without a restart. RAG_API_KEYS is fixed for the life of a process."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from rag.access.secrets import SECRETS_FILE, secret_text
from rag.errors import ConfigError
from rag.types import LOCAL_CLIENT

ENV_NAME = "RAG_API_KEYS"
MIN_TOKEN_CHARS = 16
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TOKEN_RECIPE = '`python -c "import secrets; print(secrets.token_urlsafe(32))"`'
FORMAT_HINT = f'{ENV_NAME} is "name:token,name2:token2"'
RECHECK_S = 1.0  # how often a running server looks at the secrets file (one stat() call)
log = logging.getLogger(__name__)


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


class LiveKeys:
    """The keys as their source holds them now. From RAG_API_KEYS: fixed. From the secrets
    file: re-read when its modification time, size or inode changes (looked at no more than
    once every RECHECK_S); a file made invalid keeps the keys it last held, with an error in
    the log, so a half-saved edit never opens or closes the server."""

    def __init__(self, env: Mapping[str, str] | None = None, secrets_file: Path | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        env = os.environ if env is None else env
        self.secrets_file = Path(secrets_file or SECRETS_FILE)
        self.fixed = bool((env.get(ENV_NAME) or "").strip())
        self._env, self._clock = env, clock
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._keys = ApiKeys.load(env, self.secrets_file)
        self._next_check = clock() + RECHECK_S

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            found = self.secrets_file.stat()
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size, found.st_ino

    def current(self) -> ApiKeys:
        if self.fixed or self._clock() < self._next_check:
            return self._keys
        with self._lock:
            self._next_check = self._clock() + RECHECK_S
            stamp = self._stat()
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    keys = ApiKeys.load(self._env, self.secrets_file)
                except ConfigError as e:
                    log.error("API keys not reloaded, the previous ones stay in force: %s", e)
                else:
                    log.warning("API keys reloaded from %s: %d clients.", self.secrets_file,
                                len(keys))
                    self._keys = keys
        return self._keys

    def __len__(self) -> int:
        return len(self.current())

    def client_for(self, token: str | None) -> str | None:
        return self.current().client_for(token)

    def __repr__(self) -> str:
        return f"LiveKeys({self.current()!r})"
