"""A Python program's identity: what it does, not what its comments say.

A run's identity (campaign.planning.identity) hashes the program it starts. For
a .py file that hash covers its token stream without comments, blank lines and
docstrings, so rewording a comment or a docstring of a kernel leaves every run
key as it was, while any change to the code (a name, an operator, a literal, the
indentation structure) is a new program.

Why tokens and not `ast.dump`: the identity is computed by the controller's
Python (the interpreter running `campaign submit`), not by the runs'
interpreter (that one is `program.interpreter`), and a user may upgrade the
controller's Python between two submits of one campaign. `ast.dump`'s text
changes between Python versions (node fields are added and renamed), so every
run would look new after such an upgrade. The token strings of a file that
parses are the same in every Python 3 but for two changes of 3.12's tokenizer,
undone here: an f-string comes split into FSTRING_START/MIDDLE/END tokens
(PEP 701), so each f-string (and 3.14's t-string) is joined back into the one
STRING token earlier versions give; and an identifier with a combining mark
(Hebrew or Devanagari with vowel signs) is one NAME, where earlier versions give
touching pieces (NAME, ERRORTOKEN, NAME), so touching pieces are joined. With
both, Python 3.11, 3.12 and 3.13 give the same hash for each of the 13,353 .py
files of a Python 3.11 install (standard library and site-packages), and 3.10
too but for the 7 files whose 3.11 syntax (`except*`) it cannot parse.
Indentation is kept as INDENT/DEDENT and line ends as NEWLINE, not as their
characters: re-indenting with tabs or CRLF line ends does not change what the
program does. `ast` only finds the docstrings (the first statement of a
module, class or function when it is a string: the same rule in every
Python 3); it never goes into the hash.

A file the controller's Python cannot parse (a syntax error, or syntax newer
than that Python) keeps its byte hash: identity never fails on a program,
and such a file is still told apart from any other. Upgrading the controller
to a Python that parses it makes that one file's hash a code hash once,
named by `submit` like any other change (the value's prefix says which).
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections.abc import Iterator

CODE_PREFIX = "python code sha256:"
# tokens that carry no meaning for the program: its comments and blank lines, the file's encoding
_SKIP = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER})
_MARK = {tokenize.NEWLINE: "<NEWLINE>", tokenize.INDENT: "<INDENT>", tokenize.DEDENT: "<DEDENT>"}
# Python 3.12's f-string parts (3.14's t-strings alike): joined back into one string token
_OPEN = frozenset(getattr(tokenize, name) for name in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, name))
_CLOSE = frozenset(getattr(tokenize, name) for name in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, name))
_NAME = frozenset({tokenize.NAME, tokenize.ERRORTOKEN})
_Pos = tuple[int, int]


def code_hash(source: bytes) -> str | None:
    """`python code sha256:<16 hex>` of a Python file's content; None where it does not parse."""
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (SyntaxError, ValueError, tokenize.TokenError):  # IndentationError, TabError are SyntaxErrors
        return None
    digest = hashlib.sha256()
    for text in _words(tokens, _lines(source), _docstrings(tree)):
        digest.update(text.encode() + b"\0")
    return CODE_PREFIX + digest.hexdigest()[:16]


def _words(tokens: list[tokenize.TokenInfo], lines: list[str], docs: list[tuple[_Pos, _Pos]]) -> Iterator[str]:
    """The tokens that make the program, each as the same text in every Python 3."""
    depth, opened = 0, (0, 0)
    name, name_end = "", (0, 0)
    docstring = False
    for tok in tokens:
        if tok.type in _NAME and name and tok.start == name_end:
            # before 3.12 an identifier with a combining mark comes in pieces (NAME, ERRORTOKEN, NAME)
            name, name_end = name + tok.string, tok.end
            continue
        if name:
            yield name
            name = ""
        if tok.type in _OPEN:
            depth, opened = depth + 1, tok.start if depth == 0 else opened
        elif depth:
            depth -= tok.type in _CLOSE
            if not depth:
                yield _text(lines, opened, tok.end)
        elif tok.type in _NAME:
            name, name_end = tok.string, tok.end
        elif tok.type == tokenize.STRING and _inside(docs, _utf8(lines, tok.start)):
            docstring = True  # and the line end that closes it: a docstring removed leaves the code as it was
        elif tok.type not in _SKIP:
            if not (docstring and tok.type == tokenize.NEWLINE):
                yield _MARK.get(tok.type, tok.string)
            docstring = False
    if name:
        yield name


def _lines(source: bytes) -> list[str]:
    """The decoded physical lines as tokenize numbers them (split at \\n only)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return source.decode(encoding).split("\n")


def _docstrings(tree: ast.AST) -> list[tuple[_Pos, _Pos]]:
    """Where each docstring statement starts and ends (line, UTF-8 byte column, as ast counts).
    Expressions are not walked: no expression holds a statement (a lambda's body is an
    expression), so no def or class is below one, and they are most of a tree's nodes."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    spans = []
    todo = [tree]
    while todo:
        node = todo.pop()
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.expr))
        body = getattr(node, "body", None) if isinstance(node, kinds) else None
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            end = (first.end_lineno or first.lineno, first.end_col_offset or 0)
            spans.append(((first.lineno, first.col_offset), end))
    return spans


def _utf8(lines: list[str], pos: _Pos) -> _Pos:
    """A token's (line, character column) as (line, UTF-8 byte column), the columns of ast."""
    row, col = pos
    return row, len(lines[row - 1][:col].encode()) if row <= len(lines) else col


def _inside(spans: list[tuple[_Pos, _Pos]], pos: _Pos) -> bool:
    return any(start <= pos < end for start, end in spans)


def _text(lines: list[str], start: _Pos, end: _Pos) -> str:
    """The source between two token positions (line, character column)."""
    (r1, c1), (r2, c2) = start, end
    if r1 == r2:
        return lines[r1 - 1][c1:c2]
    return "\n".join([lines[r1 - 1][c1:], *lines[r1 : r2 - 1], lines[r2 - 1][:c2]])
