"""Writing tuned settings into data/settings.toml: every comment and every other key kept (issue
42), a read-only file refused and a failed write leaving the file unchanged and no `.tmp`
behind (issue 43, low)."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rag.config import PROJECT_ROOT
from rag.errors import ConfigError
from rag.tuning.settings_writer import write_gate, write_settings, write_type_points

SHIPPED = PROJECT_ROOT / "data" / "settings.toml"
PROVENANCE = {"question_set": "data/eval/questions.yaml", "objective": "max_f1", "f1": 0.91}


@pytest.fixture()
def settings_file(tmp_path) -> Path:
    path = tmp_path / "settings.toml"
    shutil.copy(SHIPPED, path)
    return path


def test_every_comment_and_line_not_applied_is_kept(settings_file):
    """tomli_w, used before, kept the opening comment block only (the [access] notes and the
    query-model note went on every Apply)."""
    before = settings_file.read_text(encoding="utf-8").splitlines()
    write_settings(settings_file, 0.9, 0.3, "local", PROVENANCE, gate=0.2)
    write_type_points(settings_file, {"factual": {"w_dense": 0.8, "threshold": 0.25}}, "local",
                      PROVENANCE)
    after = settings_file.read_text(encoding="utf-8").splitlines()
    changed = ("w_dense = ", "threshold = ", "source = ", "gate_caveat = ", "gate_answer = ",
               "gate_source = ")
    kept = [line for line in before if not line.startswith(changed)]
    rest = iter(after)
    assert all(any(line == later for later in rest) for line in kept)  # all, in their order
    assert [line for line in before if line.startswith("#")] == \
        [line for line in after if line.startswith("#")]
    data = tomllib.loads("\n".join(after))
    assert data["retrieval"]["w_dense"] == 0.9 and data["embedders"]["local"]["threshold"] == 0.3
    assert data["retrieval"]["types"] == {"factual": {"w_dense": 0.8, "threshold": 0.25}}
    assert data["embedders"]["local"]["gate_caveat"] == 0.2
    assert [h["embedder"] for h in data["history"]] == ["local", "local", "local"]
    assert data["history"][1]["previous_w_dense"] == 0.95 and data["history"][-1]["types"] == \
        "factual 0.80/0.25"


def test_the_history_entry_is_plain_values(settings_file):
    entry = write_gate(settings_file, 0.15, "local", PROVENANCE)
    assert entry["previous_gate_caveat"] == 0.1 and type(entry["previous_gate_caveat"]) is float
    assert entry["gate_caveat"] == 0.15 and entry["f1"] == 0.91


def test_a_new_file_and_a_new_embedder_read_back(tmp_path):
    path = tmp_path / "new.toml"
    write_settings(path, 0.5, 0.2, "local", {})
    write_gate(path, 0.3, "cohere-v4", PROVENANCE)
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data["retrieval"]["w_dense"] == 0.5
    assert data["embedders"]["cohere-v4"]["gate_caveat"] == 0.3
    assert len(data["history"]) == 2


def test_a_read_only_file_is_refused_and_left_alone(settings_file):
    before = settings_file.read_bytes()
    settings_file.chmod(0o444)
    with pytest.raises(ConfigError, match=r"settings.toml is read-only, so nothing was applied\. "
                                          r"Make it writable \(chmod u\+w"):
        write_settings(settings_file, 0.9, 0.3, "local", PROVENANCE)
    assert settings_file.read_bytes() == before
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o444
    assert list(settings_file.parent.iterdir()) == [settings_file]


def test_the_file_keeps_its_mode(settings_file):
    settings_file.chmod(0o600)
    write_settings(settings_file, 0.9, 0.3, "local", PROVENANCE)
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o600


# The write runs out of room (RLIMIT_FSIZE: the settings file is ~7 KB) in a child process.
_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from rag.errors import ConfigError
from rag.tuning.settings_writer import write_settings
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
try:
    write_settings(Path(sys.argv[1]), 0.9, 0.3, "local", {})
except ConfigError as e:
    print(e)
"""


def test_a_failed_write_leaves_the_file_unchanged_and_no_tmp(settings_file):
    before = settings_file.read_bytes()
    done = subprocess.run([sys.executable, "-c", _FULL_DISK, str(settings_file)],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert "could not be written (File too large), so nothing was applied; the file is " \
           "unchanged" in done.stdout
    assert settings_file.read_bytes() == before
    assert list(settings_file.parent.iterdir()) == [settings_file]  # no settings.toml.tmp
