"""The column tables of README.md, docs/results.md and docs/contracts.md,
made of the one definition (resultschema.columns): tests/results check that
each file holds its table as made here, so a column changed there is a docs
change here too, never a hand-edited table."""

from __future__ import annotations

from resultschema.columns import BY_NAME, EXPORT_COLUMNS, KERNEL_CSV, STORED_COLUMNS


def markdown(columns: tuple[str, ...], titles: dict[str, str]) -> str:
    """A docs table of these columns, one field of Column per title (README.md,
    docs/results.md and docs/contracts.md hold tables made by `doc_tables`)."""
    lines = ["| column | " + " | ".join(titles) + " |", "|" + "---|" * (len(titles) + 1)]
    lines += ["| " + " | ".join([f"`{name}`", *(str(getattr(BY_NAME[name], f)) for f in titles.values())]) + " |"
              for name in columns]
    return "\n".join(lines)


def doc_tables() -> dict[str, str]:
    """Each docs file's column table, as that file holds it."""
    return {"README.md": markdown(EXPORT_COLUMNS, {"type": "json", "meaning": "meaning"}),
            "docs/results.md": markdown(STORED_COLUMNS, {"type": "kind", "unit": "unit", "meaning": "meaning"}),
            "docs/contracts.md": markdown(KERNEL_CSV, {"in the CSV": "kernel", "type": "kind", "unit": "unit",
                                                       "meaning": "meaning"})}
