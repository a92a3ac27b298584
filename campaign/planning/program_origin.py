"""Whose program a run started and what built it: the one rule behind the
report's builds table (campaign.results.program_builds, one row per program
and partition) and `campaign show`'s build block (campaign.cli.show_view, the
job's own program).

A program is ours when the partition's build job compiled it (its
`build_step` record lists it: the compiler version and flags as seen on the
node, the build key) or when it is one of our torch modules or `make
kernels`' own output (no build job: nothing compiled for the partition); it
is the user's when the submit's provenance recorded it under `programs`
(campaign.planning.programs: its real path and sha256). Ledgers written
before that record existed say `not recorded` for a program no build job
lists, rather than guessing whose it is. Standard library only: `show
--no-sync` reads the ledger without SQLAlchemy.
"""

from __future__ import annotations

from typing import Any

from campaign.planning.programs import program_word

OURS = "ours"
NOT_RECORDED = "not recorded"
SHORT_SHA = 12  # hex digits a table or `show` gives; the JSON has all 64
# the compiler and the flags of a program by its folder in the build (campaign.job.build's record)
_LANG = {"c": ("cc", "cflags"), "fortran": ("fc", "fflags"), "mpi": ("mpicc", "cflags")}


def program_rows(argv: tuple[str, ...], builds: dict[str, dict[str, Any]],
                 programs: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The rows of one program (argv: the run's): each build of its partition
    (`builds`: info by key) that lists it (ours, with `compiler` and `flags`),
    else the user's program the provenance recorded (`programs`; `kind`, `path`,
    `sha256`), else ours unbuilt (or not recorded: `programs` None, an old ledger)."""
    if not argv:
        return [{"program": "-", "build": NOT_RECORDED}]
    found = [_ours(rel, key, info) for key, info in builds.items()
             for rel in info.get("programs") or () if argv and argv[0].endswith(f"/{rel}")]
    if found:
        return found
    word = program_word(argv)
    entry = (programs or {}).get(word)
    if isinstance(entry, dict):
        return [_user(word, entry)]
    return [{"program": word, "build": OURS if programs is not None else NOT_RECORDED}]


def _ours(rel: str, key: str, info: dict[str, Any]) -> dict[str, Any]:
    compiler, flags = _LANG.get(rel.split("/")[0], ("cc", "cflags"))
    comp, given = info.get("compilers") or {}, info.get("flags") or {}
    return {"program": rel, "build": OURS, "build_key": key,
            "compiler": comp.get(f"{compiler}_version") or comp.get(compiler), "flags": given.get(flags),
            "modules": " ".join(info.get("modules") or []) or None, "host": info.get("host")}


def _user(word: str, entry: dict[str, Any]) -> dict[str, Any]:
    """`user binary <sha256[:12]>` (or script); where nothing was hashed, why."""
    sha = entry.get("sha256")
    kind = f"user {entry.get('kind') or 'binary'}"
    if sha:
        build = f"{kind} {sha[:SHORT_SHA]}"
    elif entry.get("image"):
        build = f"{kind} in image {entry['image']}"
    else:
        build = f"{kind} (not found when submitted)"
    return {"program": word, "build": build, "kind": kind, "path": entry.get("path"), "sha256": sha}
