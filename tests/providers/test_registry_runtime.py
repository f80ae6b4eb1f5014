"""How the local embedder's runtime is chosen: settings.toml, RAG_EMBED_RUNTIME, the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import load_settings
from rag.errors import ConfigError
from rag.providers.registry import get_embedder, onnx_cache_dir


def settings_file(tmp_path: Path, table: str, line: str) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(f"[embedders.{table}]\nthreshold = 0.3\n{line}\n", encoding="utf-8")
    return path


def test_onnx_is_the_default_and_torch_can_be_chosen(tmp_path: Path) -> None:
    assert load_settings(env={}).embed_runtime == "onnx"
    assert load_settings(env={"RAG_EMBED_RUNTIME": "torch"}).embed_runtime == "torch"
    from_file = settings_file(tmp_path, "local", 'runtime = "torch"')
    assert load_settings(settings_file=from_file, env={}).embed_runtime == "torch"
    assert load_settings(settings_file=from_file, env={"RAG_EMBED_RUNTIME": "onnx"}
                         ).embed_runtime == "onnx"  # the environment wins over the file


def test_each_runtime_gets_its_own_embedder(embedder) -> None:
    torch = get_embedder(load_settings(env={"RAG_EMBED_RUNTIME": "torch"}))
    assert (torch.runtime, embedder.runtime) == ("torch", "onnx") and torch is not embedder
    assert torch is get_embedder(load_settings(env={"RAG_EMBED_RUNTIME": "torch"}))
    assert torch.model is embedder.model  # the PyTorch weights are still loaded once


@pytest.mark.parametrize(("table", "line", "message"), [
    ("local", 'runtime = "tensorrt"', '[embedders.local] runtime must be "onnx" or "torch", '
                                      'not "tensorrt"'),
    ("local", "runtime = 1", "[embedders.local] runtime must be text in quotes, not 1"),
    ("cohere", 'runtime = "onnx"', "only [embedders.local] has a runtime"),
])
def test_a_wrong_runtime_in_settings_toml_is_named(tmp_path: Path, table: str, line: str,
                                                  message: str) -> None:
    with pytest.raises(ConfigError, match="settings.toml: ") as error:
        load_settings(settings_file=settings_file(tmp_path, table, line), env={})
    assert message in str(error.value)


def test_a_wrong_runtime_in_the_environment_is_named() -> None:
    with pytest.raises(ConfigError, match="RAG_EMBED_RUNTIME .* must be onnx or torch"):
        load_settings(env={"RAG_EMBED_RUNTIME": "gpu"})


def test_the_export_lives_beside_the_index_unless_rag_onnx_dir_says(tmp_path: Path,
                                                                   monkeypatch) -> None:
    settings = load_settings(env={}, index_dir=tmp_path / "index")
    monkeypatch.delenv("RAG_ONNX_DIR", raising=False)
    assert onnx_cache_dir(settings) == tmp_path / "index" / "onnx"
    monkeypatch.setenv("RAG_ONNX_DIR", str(tmp_path / "shared"))
    assert onnx_cache_dir(settings) == tmp_path / "shared"

