"""Role sign-in: page lists, passwords kept as PBKDF2 hashes, stored hashes, bad entries."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys

import pytest

from rag.access.roles import (
    ITERATIONS,
    PAGES,
    ROLES,
    RoleLogins,
    client_for,
    hash_password,
    pages_for,
)
from rag.config import PROJECT_ROOT
from rag.errors import ConfigError


def test_each_role_sees_its_pages():
    assert pages_for("author") == ("chat", "inspector", "book")
    assert pages_for("researcher") == ("chat", "inspector", "book", "tuning")
    assert pages_for("reviewer") == ("audit",)
    assert pages_for("admin") == PAGES and set(PAGES) == {p.stem for p in
                                                          (PROJECT_ROOT / "pages").glob("*.py")}
    assert pages_for("stranger") == ()
    assert client_for("researcher") == "role:researcher"


def test_plain_passwords_are_hashed_and_verified():
    logins = RoleLogins.load(env={"RAG_ROLE_PASSWORDS": "author:write-the-book, admin:root-of-all"})
    assert logins.roles == ("author", "admin") and len(logins) == 2
    assert logins.verify("author", "write-the-book")
    assert not logins.verify("author", "root-of-all")  # another role's password
    assert not logins.verify("admin", "")
    assert not logins.verify("reviewer", "write-the-book")  # not configured
    held = repr(vars(logins))
    assert "write-the-book" not in held and "root-of-all" not in held
    assert repr(logins) == "RoleLogins(roles=['author', 'admin'])"


def test_a_stored_hash_verifies_and_matches_djangos_format():
    stored = hash_password("correct horse battery").encode()
    algorithm, iterations, salt, encoded = stored.split("$")
    assert (algorithm, int(iterations)) == ("pbkdf2_sha256", ITERATIONS)
    expected = hashlib.pbkdf2_hmac("sha256", b"correct horse battery", salt.encode(), ITERATIONS)
    assert base64.b64decode(encoded) == expected
    logins = RoleLogins.load(env={"RAG_ROLE_PASSWORDS": f"reviewer:{stored}"})
    assert logins.verify("reviewer", "correct horse battery")
    assert not logins.verify("reviewer", stored)  # the hash itself is not the password


def test_a_roles_table_in_the_secrets_file(tmp_path):
    secrets = tmp_path / "secrets.toml"
    stored = hash_password("read-every-row").encode()
    secrets.write_text(f'[roles]\nresearcher = "tune, then tune again"\nreviewer = "{stored}"\n')
    logins = RoleLogins.load(env={}, secrets_file=secrets)
    assert logins.roles == ("researcher", "reviewer")
    assert logins.verify("researcher", "tune, then tune again")  # a comma is fine in the table
    assert logins.verify("reviewer", "read-every-row")


def test_the_variable_wins_over_the_table_and_nothing_means_open(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('RAG_ROLE_PASSWORDS = "admin:from-the-variable"\n'
                       '[roles]\nauthor = "from-the-table"\n')
    assert RoleLogins.load(env={}, secrets_file=secrets).roles == ("admin",)
    assert len(RoleLogins.load(env={}, secrets_file=tmp_path / "none.toml")) == 0


@pytest.mark.parametrize("text, message", [
    ("boss:long-enough-password",
     "Unknown role 'boss' in the sign-in passwords; the roles are author, researcher"),
    ("author:short", "must be at least 8 characters"),
    ("author", "entry 1 must be role:password"),
    ("author:first-password,author:second-password", "Role 'author' has two passwords"),
    ("admin:pbkdf2_sha256$1000$salt$AAAA", "iteration count must be a whole number of at least"),
    ("admin:pbkdf2_sha256$600000$salt$not-base64!", "its hash is not a base64 SHA-256 digest"),
    ("admin:pbkdf2_sha256$600000$salt", "it must have 4 parts"),
    ("admin:pbkdf2_sha256$600000$$" + "A" * 44, "its salt is empty"),
])
def test_bad_entries_are_clear_errors_that_quote_no_password(text, message):
    with pytest.raises(ConfigError) as caught:
        RoleLogins.load(env={"RAG_ROLE_PASSWORDS": text})
    assert message in str(caught.value)
    for secret in ("long-enough-password", "first-password", "second-password", "short"):
        assert secret not in str(caught.value)


def test_a_roles_table_of_non_text_is_an_error(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("[roles]\nadmin = 12345678\n")
    with pytest.raises(ConfigError, match=r"\[roles\] in the secrets file must be a table"):
        RoleLogins.load(env={}, secrets_file=secrets)


def test_the_hash_command_reads_stdin_and_prints_a_usable_hash():
    done = subprocess.run([sys.executable, "-m", "rag.access.roles", "hash"], cwd=PROJECT_ROOT,
                          input="a long passphrase\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    stored = done.stdout.strip()
    assert stored.startswith("pbkdf2_sha256$") and "a long passphrase" not in done.stdout
    assert RoleLogins.load(env={"RAG_ROLE_PASSWORDS": f"admin:{stored}"}).verify(
        "admin", "a long passphrase")
    short = subprocess.run([sys.executable, "-m", "rag.access.roles", "hash"], cwd=PROJECT_ROOT,
                           input="tiny\n", capture_output=True, text=True, timeout=60)
    assert short.returncode == 1 and "at least 8 characters" in short.stderr
    assert not short.stdout
    usage = subprocess.run([sys.executable, "-m", "rag.access.roles"], cwd=PROJECT_ROOT,
                           capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "usage:" in usage.stderr


def test_every_role_names_only_known_pages():
    assert all(set(pages) <= set(PAGES) for pages in ROLES.values())
