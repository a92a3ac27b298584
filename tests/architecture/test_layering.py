"""The import graph of campaign/, analysis/ and kernels/ follows the layering
of docs/design.md ("Layers"): no cycle, analysis and kernels never import
campaign, the job side needs only the standard library, only backends speak
submitit's and Slurm's words, and nothing below the CLI imports the api.

Imports inside functions count too: a lazy import still ties two modules.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("campaign", "analysis", "kernels", "resultschema")
# The use cases and what sits above them: backends and the job side must not reach up.
UPPER = ("campaign.api", "campaign.cli", "campaign.commands", "campaign.results")
SLURM_COMMANDS = ("sacct", "squeue", "scancel", "scontrol", "sbatch", "sinfo")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            if "build" in path.parts:
                continue
            found[_module_name(path)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_pkg else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` ties us to pkg.mod; `from mod import name` to mod.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                out.add(target)
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(m, p, modules) for m, p in modules.items()}


def _raw_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def test_no_import_cycle(graph: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_analysis_and_kernels_never_import_campaign(graph: dict[str, set[str]]) -> None:
    bad = [(m, t) for m, targets in graph.items() if m.startswith(("analysis", "kernels"))
           for t in targets if t.startswith("campaign")]
    assert not bad, bad


def test_kernels_import_neither_campaign_nor_analysis(graph: dict[str, set[str]]) -> None:
    bad = [(m, t) for m, targets in graph.items() if m.startswith("kernels")
           for t in targets if t.startswith(("campaign", "analysis"))]
    assert not bad, bad


def test_job_side_needs_only_the_standard_library() -> None:
    for path in (REPO / "campaign" / "job").rglob("*.py"):
        for name in _raw_imports(path):
            top = name.split(".")[0]
            # the result model is the standard library's kind: nothing but stdlib below it
            ours = name.startswith(("campaign.job", "resultschema")) or top == "__future__"
            assert ours or top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_the_result_model_sits_below_everything() -> None:
    """resultschema imports only the standard library: campaign, analysis and the job side all read it."""
    for path in (REPO / "resultschema").rglob("*.py"):
        for name in _raw_imports(path):
            top = name.split(".")[0]
            assert top in ("resultschema", "__future__") or top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_backends_and_lower_layers_never_reach_up(graph: dict[str, set[str]]) -> None:
    lower = ("campaign.backends", "campaign.job", "campaign.ledger", "campaign.config", "campaign.planning",
             "campaign.plumbing")
    bad = [(m, t) for m, targets in graph.items() if m.startswith(lower)
           for t in targets if t.startswith(UPPER)]
    assert not bad, bad


def test_only_the_cli_imports_the_api(graph: dict[str, set[str]]) -> None:
    bad = [m for m, targets in graph.items() if "campaign.api" in targets and not m.startswith("campaign.cli")]
    assert not bad, bad


def test_submitit_and_slurm_words_stay_in_backends() -> None:
    for path in (REPO / "campaign").rglob("*.py"):
        rel = path.relative_to(REPO / "campaign")
        in_backends = rel.parts[0] == "backends"
        if in_backends:
            continue
        imported = _raw_imports(path)
        assert not any(n.split(".")[0] == "submitit" for n in imported), f"{rel} imports submitit"
        tree = ast.parse(path.read_text())
        words = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        used = [w for w in words if w in SLURM_COMMANDS or w.startswith("SLURM_")]
        assert not used, f"{rel} runs or names Slurm: {used}"
    private = [p.name for p in (REPO / "campaign").rglob("*.py")
               if "_make_sbatch_string" in p.read_text() and p.name != "submitit_adapter.py"]
    assert not private, f"submitit's private API outside submitit_adapter.py: {private}"


def _formatted_lengths(paths: list[Path]) -> dict[Path, int]:
    """Each file's length as `ruff format` would write it: a module cannot meet the limit by squeezing lines.

    Copies keep their paths under a temporary root that holds pyproject.toml, so one ruff call formats
    them all with the project's own settings (line length, target version) and the originals stay as
    they are.
    """
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
        for path in paths:
            copy = root / path.relative_to(REPO)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, copy)
        done = subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", "--no-cache", str(root)],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"ruff format failed: {done.stderr.strip()}"
        return {path: len((root / path.relative_to(REPO)).read_text().splitlines()) for path in paths}


def test_no_module_over_400_lines() -> None:
    paths = [path for pkg in (*PACKAGES, "tests", "bench", "scripts") for path in (REPO / pkg).rglob("*.py")
             if "build" not in path.parts]
    long = [f"{path.relative_to(REPO)} ({count} lines formatted)"
            for path, count in sorted(_formatted_lengths(paths).items()) if count > 400]
    assert not long, "modules over 400 lines as ruff format writes them:\n" + "\n".join(long)
