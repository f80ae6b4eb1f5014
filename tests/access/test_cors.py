"""Which origins may call the API from a browser: none by default, else RAG_CORS_ORIGINS or
settings.toml [access] cors_origins, each checked to be an origin as browsers send it."""

from __future__ import annotations

import pytest

from rag.access.cors import cors_origins
from rag.errors import ConfigError


def test_none_by_default(tmp_path):
    assert cors_origins({}, tmp_path / "none.toml") == ()


def test_from_the_environment_normalised(tmp_path):
    env = {"RAG_CORS_ORIGINS": "https://Docs.Example.org/, http://localhost:3000,,*"}
    assert cors_origins(env, tmp_path / "none.toml") == (
        "https://docs.example.org", "http://localhost:3000", "*")


def test_from_the_settings_file(tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text('[access]\ncors_origins = ["https://docs.example.org"]\n')
    assert cors_origins({}, settings) == ("https://docs.example.org",)


@pytest.mark.parametrize("origin", ["docs.example.org", "https://docs.example.org/widget",
                                    "ftp://docs.example.org", "https://x.org:99999",
                                    "https://user@x.org", "https://x.org/?a=1"])
def test_what_is_not_an_origin_is_refused_with_an_example(origin, tmp_path):
    with pytest.raises(ConfigError, match="scheme://host"):
        cors_origins({"RAG_CORS_ORIGINS": origin}, tmp_path / "none.toml")


def test_a_value_of_the_wrong_type_is_refused(tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text('[access]\ncors_origins = "https://docs.example.org"\n')
    with pytest.raises(ConfigError, match="cors_origins"):
        cors_origins({}, settings)
