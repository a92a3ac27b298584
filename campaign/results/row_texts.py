"""The texts of a block of rows built in one join (natural keys, the JSON
`extra` of ingested rows).

Formatting each row's text on its own (a %-template per row, a join per row)
costs a call per row; here every row's varying parts are interleaved with the
constant texts between them in one list, joined once and split where the rows
end. A row's text must hold no newline: the texts built here are JSON, whose
string encoder escapes them.
"""

from __future__ import annotations

from collections.abc import Sequence


def rows_joined(parts: Sequence[str | Sequence[str]], length: int) -> str:
    """The texts of `length` rows, each ended by a newline, as one string; a
    row's text is `parts` concatenated, a str part the same in every row, a
    sequence part one text per row. (Split at "\n", dropping the last, empty,
    piece; encoded first when bytes are wanted: one encode for all rows.)"""
    between, varying = [""], []  # between[i] precedes varying[i]; the last one closes every row
    for part in parts:
        if isinstance(part, str):
            between[-1] += part
        else:
            varying.append(part)
            between.append("")
    between[-1] += "\n"
    width = len(between) + len(varying)
    flat: list[str] = [""] * (width * length)
    for i, text in enumerate(between):
        flat[2 * i::width] = [text] * length
    for i, values in enumerate(varying):
        flat[2 * i + 1::width] = values
    return "".join(flat)
