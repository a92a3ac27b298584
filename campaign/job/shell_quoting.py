"""Which quoting each character of a `script:` template stands in, as bash
reads it: bare, inside "...", '...' or $'...', in a here-document's body, or
inside backticks.

Why: a placeholder is filled with its value quoted for where it stands
(campaign.job.template.script_argv). One filling for every place, the
shell-quoted word, ran a value's $( ) inside "{tag}" (a shell habit for a
variable) and split it at its `;` inside '{tag}'; filled for its quoting,
the value reaches the program as it is, wherever the script writes it.

Not a shell: enough of bash's reading to tell quotes, backslashes,
comments, command substitutions $( ) (bare inside "...") and here-documents
apart. Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

BARE, DOUBLE, SINGLE, ANSI = "bare", "double", "single", "ansi"
# read twice: inside `...` (bash finds its end taking a backslash off \$, \` and \\, then reads it as a
# command), and in an expanding here-document's body from its first $( ` or ${ on (the body's escapes, then
# the command's own quoting); and inside ${...}, whose word a `}` of the value would end: no one quoting
# keeps a value as it is there, so a placeholder there is refused
REREAD = "reread"
HEREDOC, HEREDOC_QUOTED = "heredoc", "heredoc-quoted"  # a body that expands $ and ` / one that expands nothing
_WORD_END = frozenset(" \t\n;|&<>()")
_COMMENT_AFTER = frozenset(" \t\n;|&(")


def quoting(text: str) -> list[str]:
    """The quoting of each character of `text`."""
    out = [BARE] * len(text)
    stack: list[list[object]] = [[BARE, 0]]  # the quoting, and a command substitution's open parentheses
    pending: list[tuple[str, bool, bool]] = []  # here-documents after this line: delimiter, quoted, tabs stripped
    i, n = 0, len(text)
    while i < n:
        state, c = stack[-1][0], text[i]
        out[i] = str(state)
        step = 1
        if state in (SINGLE, ANSI) and c == "'":
            stack.pop()
        elif state in (ANSI, DOUBLE, BARE) and c == "\\":
            step = 2  # the escaped character is quoted as its backslash is
        elif state in (DOUBLE, BARE) and c == "`":
            out[i] = REREAD  # and up to its closing backtick (the loop below)
            step = _backticks_end(text, i) - i
        elif state in (DOUBLE, BARE) and text.startswith("${", i):
            out[i] = REREAD  # and up to its closing brace
            step = _brace_end(text, i + 1) - i
        elif state == DOUBLE and c == '"':
            stack.pop()
        elif state in (DOUBLE, BARE) and text.startswith("$(", i) and not text.startswith("$((", i):
            stack.append([BARE, 0])
            step = 2
        elif state == BARE:
            if c in "'\"":
                stack.append([SINGLE if c == "'" else DOUBLE, 0])
            elif text.startswith("$'", i):
                stack.append([ANSI, 0])
                step = 2
            elif c in "()" and len(stack) > 1:
                depth = int(str(stack[-1][1])) + (1 if c == "(" else -1)
                stack[-1][1] = depth
                if depth < 0:
                    stack.pop()
            elif c == "#" and (i == 0 or text[i - 1] in _COMMENT_AFTER):
                step = max(text.find("\n", i), i + 1) - i if "\n" in text[i:] else n - i
            elif text.startswith("<<", i) and not text.startswith("<<<", i):
                step = _heredoc(text, i, pending) - i
            elif c == "\n" and pending:
                step = _bodies(text, i + 1, pending, out) - i
                pending.clear()
        for k in range(i + 1, min(i + step, n)):
            out[k] = out[i] if out[k] == BARE else out[k]
        i += step
    return out


def _backticks_end(text: str, i: int) -> int:
    """Where the `...` opened at `i` ends (after its closing backtick; a backslash escapes one)."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif text[j] == "`":
            return j + 1
        else:
            j += 1
    return len(text)


def _brace_end(text: str, i: int) -> int:
    """Where the ${...} whose brace is at `i` ends (after its closing brace, nested ones counted)."""
    depth, j = 0, i
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        j += 1
        if depth == 0:
            return j
    return len(text)


def _heredoc(text: str, i: int, pending: list[tuple[str, bool, bool]]) -> int:
    """Read `<<[-] WORD` at `i`; its body starts after the line ends. Returns where the word ends."""
    k = i + 2
    strip = text.startswith("-", k)
    k += strip
    while k < len(text) and text[k] in " \t":
        k += 1
    start = k
    while k < len(text) and text[k] not in _WORD_END:
        k += 1
    word = text[start:k]
    quoted = any(q in word for q in "'\"\\")
    pending.append((word.replace("'", "").replace('"', "").replace("\\", ""), quoted, strip))
    return max(k, i + 2)


def _bodies(text: str, j: int, pending: list[tuple[str, bool, bool]], out: list[str]) -> int:
    """Mark each pending here-document's body from `j`, up to its delimiter line; where they end."""
    for delimiter, quoted, strip in pending:
        reread = False  # the body from its first command substitution on (REREAD)
        while j < len(text):
            end = text.find("\n", j)
            end = len(text) if end < 0 else end
            line = text[j:end]
            if (line.lstrip("\t") if strip else line) == delimiter:
                j = end + 1
                break
            for k in range(j, end):
                out[k] = HEREDOC_QUOTED if quoted else HEREDOC
            found = (line.find("$("), line.find("`"), line.find("${"))
            substitution = -1 if quoted else min((p for p in found if p >= 0), default=-1)
            if substitution >= 0:
                reread = True
            for k in range(j + substitution if substitution >= 0 else end, end) if reread else ():
                out[k] = REREAD
            j = end + 1
    return j
