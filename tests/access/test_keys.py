"""API keys: parsing, digests only, constant-time lookup, and messages that never leak a token."""

from __future__ import annotations

import pytest

from rag.access.keys import ApiKeys, digest
from rag.errors import ConfigError

WIDGET = "widget-token-0123456789"
CLI = "cli-token-abcdefghijklmnop"


def test_keys_from_the_environment_name_their_clients():
    keys = ApiKeys.load(env={"RAG_API_KEYS": f"docs-widget:{WIDGET}, ci:{CLI}"})
    assert len(keys) == 2 and keys.names == ("docs-widget", "ci")
    assert keys.client_for(WIDGET) == "docs-widget"
    assert keys.client_for(CLI) == "ci"


@pytest.mark.parametrize("token", [None, "", "unknown-token-0123456789", WIDGET + " ", WIDGET[:-1]])
def test_unknown_or_empty_tokens_name_no_client(token):
    keys = ApiKeys.parse(f"docs-widget:{WIDGET}")
    assert keys.client_for(token) is None


def test_only_digests_are_kept_and_repr_shows_names_only():
    keys = ApiKeys.parse(f"docs-widget:{WIDGET}")
    held = vars(keys)
    assert WIDGET not in repr(held) and held["_digests"] == {"docs-widget": digest(WIDGET)}
    assert repr(keys) == "ApiKeys(clients=['docs-widget'])"
    assert digest(WIDGET).hex() not in repr(keys)


def test_the_secrets_file_is_read_when_the_environment_has_no_keys(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'RAG_API_KEYS = "site:{WIDGET}"\n')
    assert ApiKeys.load(env={}, secrets_file=secrets).client_for(WIDGET) == "site"
    env_wins = ApiKeys.load(env={"RAG_API_KEYS": f"env:{CLI}"}, secrets_file=secrets)
    assert env_wins.names == ("env",)


def test_no_keys_anywhere_is_an_empty_set(tmp_path):
    keys = ApiKeys.load(env={}, secrets_file=tmp_path / "absent.toml")
    assert len(keys) == 0 and keys.client_for(WIDGET) is None


@pytest.mark.parametrize("text, message", [
    (f":{WIDGET}", "entry 1 has no client name"),
    (f"ok:{CLI},{WIDGET}", "entry 2 has no client name"),
    ("short:abc123", "entry 1 (short): the token must be at least 16 characters"),
    ("empty:", "the token must be at least 16 characters"),
    (f"a:{WIDGET},a:{CLI}", "the client name 'a' is listed twice"),
    (f"a:{WIDGET},b:{WIDGET}", "entry 2 (b) has the same token as another client"),
    (f"local:{WIDGET}", "'local' is reserved"),
    (f"bad name:{WIDGET}", "the client name may use letters"),
])
def test_bad_entries_are_clear_errors_without_the_token(text, message):
    with pytest.raises(ConfigError, match="RAG_API_KEYS") as caught:
        ApiKeys.parse(text)
    assert message in str(caught.value)
    for secret in (WIDGET, CLI, "abc123"):
        assert secret not in str(caught.value)


def test_a_broken_secrets_file_is_an_error_not_an_open_server(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'RAG_API_KEYS = "site:{WIDGET}\n')  # unterminated string
    with pytest.raises(ConfigError, match="is not valid TOML") as caught:
        ApiKeys.load(env={}, secrets_file=secrets)
    assert WIDGET not in str(caught.value)


def test_keys_in_the_secrets_file_must_be_text(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("[RAG_API_KEYS]\nsite = 'x'\n")
    with pytest.raises(ConfigError, match="must be text in quotes"):
        ApiKeys.load(env={}, secrets_file=secrets)
