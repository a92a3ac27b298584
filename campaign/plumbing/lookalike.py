"""Text as a reader sees it: two names or values that differ only in their
Unicode form ("café" composed, or as "e" and a combining accent; the ligature
"ﬁ" and "fi") or by invisible characters (a zero-width joiner) print the same
in every table, report and export. campaign refuses such twins where they
enter (a sweep's values, an imported file's names) rather than normalizing
them: a program is given a value as written, and a name is stored as written.
"""

from __future__ import annotations

import unicodedata


def seen_as(text: str) -> str:
    """`text` with compatibility forms folded (NFKC) and invisible format characters (category Cf) gone."""
    return "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")
