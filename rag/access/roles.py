"""Sign-in roles for the app: which pages each role sees, and their passwords, kept hashed.

Passwords come from RAG_ROLE_PASSWORDS ("role:password,role2:password2", the environment first,
then .streamlit/secrets.toml) or, when that is unset, a [roles] table in the secrets file
(`researcher = "..."`). A value may be a plain password or a hash made by
`python -m rag.access.roles hash` ("pbkdf2_sha256$iterations$salt$hash", the format Django
uses), so the secrets file need not hold plaintext. Plain passwords are hashed on load with a
random salt; only hashes stay in memory, and verify() compares in constant time."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rag.access.secrets import read_secrets, secret_text
from rag.errors import ConfigError

ENV_NAME = "RAG_ROLE_PASSWORDS"
PAGES = ("chat", "inspector", "book", "tuning", "audit")
ROLES: dict[str, tuple[str, ...]] = {
    "author": ("chat", "inspector", "book"),
    "researcher": ("chat", "inspector", "book", "tuning"),
    "reviewer": ("audit",),
    "admin": PAGES,
}
CLIENT_PREFIX = "role:"  # the audit's client for a signed-in role: "role:researcher"
ALGORITHM = "pbkdf2_sha256"
ITERATIONS = 600_000  # OWASP's 2023 figure for PBKDF2-SHA256; 0.16 s a hash on this machine
MIN_ITERATIONS = 100_000
MIN_PASSWORD_CHARS = 8
HASH_HINT = "make a hash with `python -m rag.access.roles hash`"


def pages_for(role: str) -> tuple[str, ...]:
    """The pages a role may open (names from PAGES); () for an unknown role."""
    return ROLES.get(role, ())


def client_for(role: str) -> str:
    """The client an audit row records for a signed-in role."""
    return CLIENT_PREFIX + role


@dataclass(frozen=True)
class PasswordHash:
    iterations: int
    salt: str
    digest: bytes

    def matches(self, password: str) -> bool:
        return hmac.compare_digest(self.digest, _derive(password, self.salt, self.iterations))

    def encode(self) -> str:
        return (f"{ALGORITHM}${self.iterations}${self.salt}$"
                f"{base64.b64encode(self.digest).decode('ascii')}")

    def __repr__(self) -> str:
        return f"PasswordHash(iterations={self.iterations})"


def _derive(password: str, salt: str, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt.encode("utf-8"),
                               iterations)


def hash_password(password: str, iterations: int = ITERATIONS) -> PasswordHash:
    salt = secrets.token_hex(16)
    return PasswordHash(iterations, salt, _derive(password, salt, iterations))


def parse_password(role: str, value: str) -> PasswordHash:
    """A stored hash string, or a plain password hashed now. Messages never quote the value."""
    if not value.startswith(ALGORITHM + "$"):
        if len(value) < MIN_PASSWORD_CHARS:
            raise ConfigError(f"The password for role {role!r} must be at least "
                              f"{MIN_PASSWORD_CHARS} characters.")
        return hash_password(value)
    parts = value.split("$")
    problem = "" if len(parts) == 4 else "it must have 4 parts separated by '$'"
    if not problem:
        _, iterations, salt, encoded = parts
        if not iterations.isdigit() or int(iterations) < MIN_ITERATIONS:
            problem = f"its iteration count must be a whole number of at least {MIN_ITERATIONS:,}"
        elif not salt:
            problem = "its salt is empty"
        else:
            try:
                digest = base64.b64decode(encoded, validate=True)
            except ValueError:
                digest = b""
            if len(digest) != hashlib.sha256().digest_size:
                problem = "its hash is not a base64 SHA-256 digest"
    if problem:
        raise ConfigError(f"The password hash for role {role!r} is malformed: {problem}; "
                          f"{HASH_HINT}.")
    return PasswordHash(int(iterations), salt, digest)


class RoleLogins:
    """The roles that can sign in, each with its password hash."""

    def __init__(self, hashes: Mapping[str, PasswordHash]) -> None:
        self._hashes = dict(hashes)
        # an unknown role is checked against this, so it takes as long as a known one
        self._dummy = PasswordHash(ITERATIONS, "unknown-role", bytes(32)) if hashes else None

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None,
             secrets_file: Path | None = None) -> RoleLogins:
        """From RAG_ROLE_PASSWORDS, else the secrets file's [roles] table; empty when neither
        names a role (the app then stays open)."""
        text = secret_text(ENV_NAME, env, secrets_file)
        if text:
            pairs = [_split_entry(entry, n) for n, entry in enumerate(text.split(","), 1)
                     if entry.strip()]
        else:
            table = read_secrets(secrets_file).get("roles", {})
            if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
                raise ConfigError('[roles] in the secrets file must be a table of role = '
                                  '"password" lines.')
            pairs = [(role.strip(), value.strip()) for role, value in table.items()]
        return cls.from_pairs(pairs)

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, str]]) -> RoleLogins:
        hashes: dict[str, PasswordHash] = {}
        for role, value in pairs:
            if role not in ROLES:
                raise ConfigError(f"Unknown role {role[:40]!r} in the sign-in passwords; the "
                                  f"roles are {', '.join(ROLES)}.")
            if role in hashes:
                raise ConfigError(f"Role {role!r} has two passwords; keep one.")
            hashes[role] = parse_password(role, value)
        return cls(hashes)

    def __len__(self) -> int:
        return len(self._hashes)

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles that can sign in, in ROLES order."""
        return tuple(role for role in ROLES if role in self._hashes)

    def verify(self, role: str, password: str) -> bool:
        """True when `password` is the role's; an unknown role costs the same time."""
        known = self._hashes.get(role)
        if known is None:
            if self._dummy is not None:
                self._dummy.matches(password)
            return False
        return known.matches(password)

    def __repr__(self) -> str:
        return f"RoleLogins(roles={list(self.roles)!r})"


def _split_entry(entry: str, position: int) -> tuple[str, str]:
    role, sep, value = (part.strip() for part in entry.partition(":"))
    if not sep or not role or not value:
        raise ConfigError(f"{ENV_NAME} entry {position} must be role:password (roles: "
                          f"{', '.join(ROLES)}); a password with a comma belongs in the "
                          "secrets file's [roles] table.")
    return role, value


def main(argv: list[str]) -> int:
    """`python -m rag.access.roles hash`: a hash string for a password read without echo."""
    if argv != ["hash"]:
        print("usage: python -m rag.access.roles hash   (reads the password, prints a hash "
              "for RAG_ROLE_PASSWORDS or the [roles] table)", file=sys.stderr)
        return 2
    if sys.stdin.isatty():
        import getpass

        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            print("The two passwords differ; nothing printed.", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < MIN_PASSWORD_CHARS:
        print(f"A password must be at least {MIN_PASSWORD_CHARS} characters.", file=sys.stderr)
        return 1
    print(hash_password(password).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
