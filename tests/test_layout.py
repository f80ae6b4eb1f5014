"""The layout rules the code is held to: a core that reads like the pipeline and knows no UI.

Imports are read from the source (ast), TYPE_CHECKING blocks and function-level imports included,
so a cycle hidden behind either still fails here."""

from __future__ import annotations

import ast
from pathlib import Path

from rag.config import PROJECT_ROOT

RAG = PROJECT_ROOT / "rag"
TESTS = PROJECT_ROOT / "tests"
STAGES = ("book", "index", "retrieval", "answer", "audit", "tuning", "providers", "commands")
PACKAGES = ("config", "access", "serve", *STAGES)
MAX_TOP_LEVEL_MODULES = 8
MAX_LINES = 300


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """Every rag module `path` imports anywhere in its body, resolved to a module that exists
    (`from rag.answer import guardrails` is rag.answer.guardrails)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
    return {m for m in out if m in known}


def rag_modules() -> dict[str, Path]:
    return {module_name(p): p for p in RAG.rglob("*.py")}


def test_top_level_holds_only_config_errors_types_and_entry_points():
    top = sorted(p.name for p in RAG.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    packages = sorted(p.name for p in RAG.iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(PACKAGES)


def test_every_package_says_what_it_is_for():
    for package in PACKAGES:
        init = RAG / package / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, f"{init} needs a docstring saying what the package is for"


def test_the_core_knows_no_ui():
    for name, path in rag_modules().items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] in ("streamlit", "pages") for a in node.names)
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.split(".")[0] not in ("streamlit", "pages"), name
        for markup in (":blue-badge[", ":orange-badge[", ":red-badge[", ":material/"):
            assert markup not in text, f"{name} emits Streamlit markup {markup!r}"


def test_no_module_is_a_grab_bag():
    long = {str(p.relative_to(PROJECT_ROOT)): n for p in [*RAG.rglob("*.py"),
                                                        *(PROJECT_ROOT / "pages").rglob("*.py")]
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_cycle():
    modules = rag_modules()
    known = set(modules)
    graph = {name: imported_modules(path, known) - {name} for name, path in modules.items()}
    # A package's __init__ re-exports its modules; a module importing its own package's
    # __init__ would be a cycle, and is caught like any other edge.
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_no_test_imports_another_test_module():
    for path in TESTS.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.split(".")[-1].startswith("test_"), f"{path} imports {name}"
                assert name.split(".")[-1] != "conftest", f"{path} imports conftest"


def test_tests_mirror_the_packages():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert set(STAGES) - {"commands"} <= folders | {"commands"}
    top_level = ("config", "layout", "notices", "regex_time")  # regex_time: every package's
    assert not [p.name for p in TESTS.glob("test_*.py")
                if p.stem.removeprefix("test_") not in top_level]


def test_test_only_libraries_are_dev_requirements():
    """rank-bm25 is tests/index/test_lexical.py's oracle for bm25s: nothing the app runs imports
    it, so it is a test requirement, not a runtime one (issue 42)."""
    runtime = [*RAG.rglob("*.py"), *(PROJECT_ROOT / "pages").rglob("*.py"), PROJECT_ROOT / "app.py"]
    for path in runtime:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] == "rank_bm25" for n in names), path
    pins = {p: (PROJECT_ROOT / p).read_text(encoding="utf-8").splitlines()
            for p in ("requirements.txt", "requirements-dev.txt")}
    assert "rank-bm25==0.2.2" in pins["requirements-dev.txt"]
    assert not [line for line in pins["requirements.txt"] if line.startswith("rank-bm25")]
