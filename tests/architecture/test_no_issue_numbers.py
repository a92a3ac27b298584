"""Comments, docstrings and the design documents say why, never which issue
(docs/style.md, "Names, docstrings, comments"): an issue number means
nothing to a reader of the code once the tracker is gone or renumbered, and
the history behind a change belongs to BENCHMARKS.md and the commit
messages. Every tracked (or new, not ignored) source file is scanned: Python,
shell, YAML, C, Fortran, Makefiles and docs/*.md; BENCHMARKS.md is not, it is
where history lives.

What counts as an issue reference: `issue 25`, `Issue 28:`, `issue #12`,
`issue-12`, `issues 27-30`, `issue "Scale"` (an issue by its title), and a
bare `#25` that is not an HTML entity, a colour, a shell length or an
anchor. Words that only look alike (`issued`, `tissue`, "the warp that
issues", `issue a warning`) pass.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# This file holds the samples the pattern must catch, so it is not scanned itself.
SELF = Path(__file__).resolve()
SCANNED_SUFFIXES = frozenset({".py", ".sh", ".yaml", ".c", ".f90"})

ISSUE_REFERENCE = re.compile(
    r"\bissue[\s-]*#?\d+"  # issue 25, Issue 28:, issue #12, issue-12
    r"|\bissues\s+#?\d+\s*(?:[-–,]|and\b)\s*#?\d+"  # issues 27-30, issues 24 and 26
    r'|\bissue\s+"[A-Z]'  # issue "Scale": an issue by its title
    # a bare #25: not &#39; (HTML entity), #1d1d1f / color:#333; (colours), ${#a} or $# (shell)
    r"|(?<![\w&#/$])#\d{1,5}(?![\w.;}%-])",
    re.IGNORECASE,
)


def references(text: str) -> list[tuple[int, str]]:
    """(line number, the reference) of every issue reference in `text`."""
    return [(no, m.group(0)) for no, line in enumerate(text.splitlines(), 1)
            for m in ISSUE_REFERENCE.finditer(line)]


def scanned_files() -> list[Path]:
    """The files the rule covers: tracked ones and new ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    files = [REPO / name for name in out.split("\0") if name]
    return sorted(p for p in files if p.is_file() and p.resolve() != SELF
                  and (p.suffix in SCANNED_SUFFIXES or p.name == "Makefile"
                       or (p.suffix == ".md" and p.parent == REPO / "docs")))


@pytest.mark.parametrize("text", [
    "# why it waits (issue 25)",
    '"""Issue 28: `compare` of the same sweep on two clusters',
    "# issue 30's H200 check",
    "refused by sbatch (issue 24, item 7)",
    "fixed in issue #12",
    "Shared by the issue-12 tests",
    "# see #31 for the numbers",
    "(#7)",
    "after issues 27–30 landed",
    "issues 24 and 26",
    '# Issue "Scale": 100k held runs',
])
def test_an_issue_reference_is_found(text: str) -> None:
    assert references(text), text


@pytest.mark.parametrize("text", [
    "# ncu counts the warp that issues as \"selected\": a state, not a stall.",
    "the scheduler issued 4 jobs; a reissued job keeps its ID",
    "tissue 5 of the sample",
    "submit must issue a warning, not fail",
    "the issues of a site's sacct, listed in docs/sites.md",
    ":root{--fg:#1d1d1f;--muted:#5b5b66;--accent:#2457a6}",
    "color:#333; border:#000}",
    'for q in ("\'", "&#x27;", "&#39;")',
    'echo "${#runs[@]} runs, $# arguments"',
    "# 1 rank per GPU",
    "docs/design.md#job-states and docs/design.md#layout",
    "python -c 'print(1)'  # 2 cores",
])
def test_a_legitimate_word_is_not_flagged(text: str) -> None:
    assert references(text) == [], text


def test_no_source_file_cites_an_issue() -> None:
    files = scanned_files()
    assert any(p.name == "design.md" for p in files) and any(p.suffix == ".py" for p in files)
    found = [f"{p.relative_to(REPO)}:{no}: {ref}"
             for p in files for no, ref in references(p.read_text(errors="replace"))]
    assert found == [], "say why instead of citing an issue (docs/style.md):\n" + "\n".join(found)
