"""A Python program's identity is its code: comments, blank lines, docstrings,
indentation characters and line ends do not change it, any change of code
does; a file that does not parse, and any file not named .py, keep their byte
hash (campaign.planning.code_hash through campaign.planning.identity)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign.planning.code_hash import CODE_PREFIX, code_hash
from campaign.planning.identity import CODE_NOTE, _file_hash, _tree_hash, why_new

SOURCE = '''"""A module docstring."""
import sys  # a comment


class Kernel:
    """A class docstring."""

    scale = 2

    def run(self, n: int) -> str:
        """A function docstring
        over two lines."""
        if n < 0:
            n = -n
        label = "not a docstring"
        return f"{label}: {n * self.scale!r:>8} {f'{n}'}"


async def wait() -> None:
    "An async docstring."
    pass


\u05e2\u05b4\u05d1\u05e8\u05b4\u05d9\u05ea = 1
print(Kernel().run(int(sys.argv[1])))
'''
# The hash of SOURCE. Python 3.10, 3.11, 3.12 and 3.13 all give it (checked with each): a change
# of this value re-keys every run of every Python program, so it changes only on purpose.
PINNED = "python code sha256:4928a21c0f07b58d"

SAME = {
    "comment edited": SOURCE.replace("# a comment", "# another comment, longer"),
    "comment added": SOURCE.replace("    scale = 2\n", "    # the factor\n    scale = 2  # two\n"),
    "blank lines": SOURCE.replace("\n\n\n", "\n\n\n\n\n"),
    "module docstring": SOURCE.replace("A module docstring.", "What it does, reworded."),
    "class docstring": SOURCE.replace("A class docstring.", "Reworded."),
    "function docstring": SOURCE.replace("over two lines.", "over two lines, and a third\n        one."),
    "async docstring": SOURCE.replace("An async docstring.", "Reworded."),
    "docstring removed": SOURCE.replace('    """A class docstring."""\n\n', ""),
    "tab indentation": SOURCE.replace("        ", "\t\t").replace("    ", "\t"),
    "CRLF line ends": SOURCE.replace("\n", "\r\n"),
}
DIFFERENT = {
    "literal": SOURCE.replace("scale = 2", "scale = 3"),
    "name": SOURCE.replace("label", "text"),
    "operator": SOURCE.replace("n * self", "n + self"),
    "string that is no docstring": SOURCE.replace("not a docstring", "not a docstring!"),
    "f-string": SOURCE.replace("!r:>8", "!r:>9"),
    "nested f-string": SOURCE.replace("f'{n}'", "f'{n+1}'"),
    "block structure": SOURCE.replace("        label =", "            label ="),
    "identifier with a combining mark": SOURCE.replace("\u05e2\u05b4", "\u05e2"),
    "a string after the first statement": SOURCE.replace('    """A class docstring."""\n\n    scale = 2\n',
                                                         '    scale = 2\n    """A class docstring."""\n'),
}


def test_the_representation_is_pinned() -> None:
    assert code_hash(SOURCE.encode()) == PINNED


@pytest.mark.parametrize("edit", sorted(SAME))
def test_comments_docstrings_and_layout_keep_the_hash(edit: str) -> None:
    assert code_hash(SAME[edit].encode()) == PINNED


@pytest.mark.parametrize("edit", sorted(DIFFERENT))
def test_a_change_of_code_is_a_new_hash(edit: str) -> None:
    changed = DIFFERENT[edit]
    assert changed != SOURCE
    assert code_hash(changed.encode()) not in (None, PINNED)


def test_an_encoding_cookie_is_read() -> None:
    text = 'name = "caf\xe9"  # a Latin-1 file\nprint(name)\n'
    latin = ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1")
    assert code_hash(latin) == code_hash(text.encode()) == code_hash(("\ufeff" + text).encode())
    assert code_hash(text.encode()) != code_hash(text.replace("caf\xe9", "cafe").encode())


def test_identity_reads_python_files_as_code_and_others_as_bytes(tmp_path: Path) -> None:
    cache: dict[str, str] = {}
    program, commented = tmp_path / "bench.py", tmp_path / "commented.py"
    program.write_text(SOURCE)
    commented.write_text(SAME["comment edited"])
    assert _file_hash(str(program), cache) == _file_hash(str(commented), cache) == PINNED

    # a file that does not parse keeps its byte hash: told apart from any other, never an error
    broken = tmp_path / "broken.py"
    broken.write_text(SOURCE + "def (:\n")
    assert _file_hash(str(broken), cache).startswith("sha256:")

    # a shell script (or a binary, an input) is its bytes: its comments count
    one, two = tmp_path / "run.sh", tmp_path / "run2.sh"
    one.write_text("#!/bin/sh\n# one\nexec ./bench\n")
    two.write_text("#!/bin/sh\n# two\nexec ./bench\n")
    assert _file_hash(str(one), cache).startswith("sha256:")
    assert _file_hash(str(one), cache) != _file_hash(str(two), cache)
    assert _file_hash(str(tmp_path / "gone.py"), cache) == "absent"


def test_a_package_is_the_code_of_its_files(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text(SOURCE)
    (package / "notes.txt").write_text("not a module")
    before = _tree_hash(package, {})
    assert before.startswith(CODE_PREFIX)
    (package / "a.py").write_text(SAME["function docstring"])
    (package / "notes.txt").write_text("other notes")
    assert _tree_hash(package, {}) == before
    (package / "a.py").write_text(DIFFERENT["literal"])
    assert _tree_hash(package, {}) != before


def test_submit_names_the_change_of_hash_once() -> None:
    """A ledger's runs from before code hashes: the resubmit's runs are new, and `submit` says why."""
    from tests.fixtures.ledger_rows import SPEC

    before = SPEC.evolve(identity=(("program.kernels.torch", "sha256:1a2b3c4d5e6f7a8b"),
                                   ("program.kernels.torch.attention", "sha256:0f0f0f0f0f0f0f0f")))
    now = SPEC.evolve(identity=(("program.kernels.torch", CODE_PREFIX + "9f8e7d6c5b4a3928"),
                                ("program.kernels.torch.attention", CODE_PREFIX + "1111222233334444")))
    [line] = why_new([now], [json.loads(json.dumps(before.to_json()))])  # as the ledger holds it
    assert line == ("1 new run(s): program.kernels.torch 'sha256:1a2b3c4d5e6f7a8b' -> "
                    f"'{CODE_PREFIX}9f8e7d6c5b4a3928'; program.kernels.torch.attention 'sha256:0f0f0f0f0f0f0f0f' -> "
                    f"'{CODE_PREFIX}1111222233334444' ({CODE_NOTE})")
    edited = now.evolve(identity=(("program.kernels.torch", CODE_PREFIX + "0000000000000000"),
                                  ("program.kernels.torch.attention", CODE_PREFIX + "1111222233334444")))
    [line] = why_new([edited], [json.loads(json.dumps(now.to_json()))])
    assert CODE_NOTE not in line and line.startswith("1 new run(s): program.kernels.torch 'python code sha256:")
