"""The report as GitHub-flavoured Markdown, figures as PNG files next to it.

Same blocks as the HTML page (analysis/html.py), so both say the same thing;
Markdown tables cannot sort, so they keep the order the report chose (worst
first, needs-attention jobs first).
"""

from __future__ import annotations

import re

from analysis.blocks import Block, Table, capped

_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def _inline(text: object) -> str:
    """Text that Markdown shows as written: `*` (as in T*) is not emphasis, a
    `<` from a user's value (a grid value `<b>`, a unit `op/s|<i>`) opens no
    HTML tag (only a `<` before a letter, `/`, `!` or `?` could: `n < 1000`
    stays as it is), a `\\` is shown (not taken as the escape of what follows), a `[name](url)`
    is no link."""
    text = ("" if text is None else str(text)).replace("\\", "\\\\").replace("*", "\\*").replace("\n", " ")
    return _TAG_START.sub("&lt;", text).replace("](", "]\\(")


def markdown_cell(text: object) -> str:
    """A table cell holds values, never code: a backtick is shown, not a code span."""
    return _inline(text).replace("|", "\\|").replace("`", "\\`")


def _table(table: Table) -> list[str]:
    frame, left = capped(table)
    lines = [f"**{markdown_cell(table.caption)}**", ""]
    if frame.empty:
        return lines + ["(none)", ""]
    lines += ["| " + " | ".join(markdown_cell(c) for c in frame.columns) + " |",
              "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(markdown_cell(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    lines.append("")
    if table.note:
        lines += [f"*{_inline(table.note)}*", ""]
    if left:
        lines += [left, ""]
    return lines


def to_markdown(blocks: list[Block]) -> str:
    """Render blocks as Markdown; the table of contents follows the header."""
    toc = [b for b in blocks if b.kind == "h2" and b.anchor]
    lines: list[str] = []
    for block in blocks:
        if block.kind == "h1":
            lines += [f"# {block.text}", ""]
        elif block.kind == "meta":
            lines += [f"- **{k}:** {v}" for k, v in block.pairs] + [""]
            lines += ["Contents: " + " · ".join(f"[{b.text}](#{b.anchor})" for b in toc), ""]
        elif block.kind == "h2":
            lines += [f"## {block.text}", ""]
        elif block.kind == "h3":
            lines += [f"### {block.text}", ""]
        elif block.kind == "p":
            lines += [_inline(block.text), ""]
        elif block.kind == "list":
            lines += [f"- {_inline(item)}" for item in block.items] + [""]
        elif block.kind == "figure" and block.figure is not None:
            fig = block.figure
            note = f" {fig.note}." if fig.note else ""
            alt = re.sub(r"[\[\]()*_]", "", fig.caption.split(";")[0])  # plain link text
            lines += [f"![{alt}]({fig.path.name})", "", f"*{_inline(fig.caption)}.{_inline(note)}*", ""]
        elif block.kind == "table" and block.table is not None:
            lines += _table(block.table)
    return "\n".join(lines).rstrip() + "\n"
