"""Every document a file of the repository cites exists in the repository.

A newcomer who clones the repository has nothing but it: a citation of a
document outside it (a sibling folder, an absolute path on one machine) or of
one that was moved or renamed is a dead end (docs/design.md#tests).

What counts as a citation:
- in .md, .yaml, .sh, .toml files and Makefiles: every path ending in `.md`
  (URLs excepted), and in Markdown also every relative link target, whatever
  its type, with its `#anchor` checked against the target's headings;
- in .py files: paths ending in `.md` in comments, in docstrings, and in string
  literals that read as prose (contain whitespace) or name a path (contain
  `/`). A string that is nothing but a bare file name is a file the code
  writes or reads (a report it renders), not a citation.

This file is not scanned itself: its last test plants dead citations in a
scratch repository, and their text is in the strings below.

A citation resolves against the repository root or the citing file's folder
(a Markdown link: the citing file's folder only, as Markdown renders it), and
must stay inside the repository.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from dataclasses import dataclass
from pathlib import Path

SELF = Path(__file__).resolve()
REPO = SELF.parents[2]
SCANNED_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".sh", ".toml"}
SCANNED_NAMES = {"Makefile"}
# Files that a command writes, named in the docs as what to look at afterwards.
GENERATED = {"demo/report/local.md": "written by `make demo`"}

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_MD_PATH = re.compile(r"(?<![\w./-])((?:\.{1,2}/|/)?(?:[\w.-]+/)*[\w-][\w.-]*\.md)(#[\w-]+)?(?![\w-])")
_MD_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Citation:
    source: Path  # the citing file, absolute
    line: int
    target: str  # path as written, without the anchor
    anchor: str | None
    link: bool  # a Markdown link (resolved relative to the citing file only)

    def where(self, root: Path) -> str:
        return f"{self.source.relative_to(root)}:{self.line}: {self.target}{'#' + self.anchor if self.anchor else ''}"


def repo_files(root: Path) -> list[Path]:
    """Tracked and untracked-but-not-ignored files (build outputs and the venv are ignored)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=root, capture_output=True, text=True, check=True).stdout
    files = [root / name for name in out.split("\0") if name]
    return sorted(p for p in files if p.is_file() and p.resolve() != SELF
                  and (p.suffix in SCANNED_SUFFIXES or p.name in SCANNED_NAMES))


def _paths_in(text: str, source: Path, first_line: int, only_slashed: bool = False) -> list[Citation]:
    text = _URL.sub(lambda m: " " * len(m.group(0)), text)
    found = []
    for m in _MD_PATH.finditer(text):
        if only_slashed and "/" not in m.group(1):
            continue
        anchor = m.group(2)[1:] if m.group(2) else None
        found.append(Citation(source, first_line + text.count("\n", 0, m.start()), m.group(1), anchor, False))
    return found


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                ids.add(id(first.value))
    return ids


def python_citations(path: Path) -> list[Citation]:
    text = path.read_text(encoding="utf-8")
    found: list[Citation] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            found += _paths_in(tok.string, path, tok.start[0])
    tree = ast.parse(text, filename=str(path))
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            prose = id(node) in docstrings or any(c.isspace() for c in value)
            found += _paths_in(value, path, node.lineno, only_slashed=not prose)
    return found


def markdown_links(path: Path, text: str) -> list[Citation]:
    found = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for m in _MD_LINK.finditer(line):
            target = m.group(1).strip("<>")
            if _URL.match(target) or target.startswith("mailto:"):
                continue
            name, _, anchor = target.partition("#")
            found.append(Citation(path, number, name, anchor or None, True))
    return found


def citations(path: Path) -> list[Citation]:
    if path.suffix == ".py":
        return python_citations(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".md":
        return _paths_in(text, path, 1)
    # A link is checked by its target alone (its text may name the file too).
    bare = _MD_LINK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return _paths_in(bare, path, 1) + markdown_links(path, text)


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if in_fence or not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def problem(c: Citation, root: Path) -> str | None:
    """Why a citation does not resolve, or None when it does."""
    if c.target in GENERATED:
        return None
    if c.target.startswith("/"):
        return "absolute path (outside the repository)"
    bases = [c.source.parent] if c.link else [root, c.source.parent]
    target = None
    if not c.target:  # `[x](#anchor)`: a heading of the same file
        target = c.source
    for base in bases:
        candidate = (base / c.target).resolve()
        if candidate.exists() and candidate.is_relative_to(root):
            target = candidate
            break
    if target is None:
        return "no such file in the repository"
    if c.anchor and target.suffix == ".md" and c.anchor not in heading_anchors(target):
        return f"{target.relative_to(root)} has no heading #{c.anchor}"
    return None


def broken(root: Path) -> list[str]:
    """Every citation in the repository at `root` that does not resolve, with why."""
    out = []
    for path in repo_files(root):
        for c in sorted(citations(path), key=lambda c: c.line):
            why = problem(c, root)
            if why:
                out.append(f"{c.where(root)} ({why})")
    return out


def test_every_cited_document_exists() -> None:
    bad = broken(REPO)
    assert not bad, f"{len(bad)} citation(s) that do not resolve in the repository:\n" + "\n".join(bad)


def test_scanner_on_a_small_repository(tmp_path: Path) -> None:
    """The scanner finds dead citations of each kind and leaves alone what is not one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text("# Design\n\n## Job states\n\nSee [style](style.md).\n")
    (tmp_path / "mod.py").write_text(
        '"""Contract in docs/design.md#job-states and DESIGN.md."""\n'
        "# see notes/never-written.md\n"
        'OUT = "report.md"  # a file it writes\n'
        'SRC = "datasheet (sites.md)"\n'
        'URL = "https://example.org/a/b.md"\n'
    )
    (tmp_path / "README.md").write_text(
        "[design](docs/design.md#job-states), [gone](docs/design.md#nothing), "
        "[top](#readme) and demo/report/local.md\n\n# Readme\n"
    )
    assert sorted(broken(tmp_path)) == sorted([
        "mod.py:1: DESIGN.md (no such file in the repository)",
        "mod.py:2: notes/never-written.md (no such file in the repository)",
        "mod.py:4: sites.md (no such file in the repository)",
        "README.md:1: docs/design.md#nothing (docs/design.md has no heading #nothing)",
        "docs/design.md:5: style.md (no such file in the repository)",
    ])
