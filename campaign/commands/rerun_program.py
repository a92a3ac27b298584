"""`rerun` refuses runs whose program is no longer the one they ran.

A run's program is part of its identity: a contract program's file or an
interpreter's script and versions (`program`, `program.<name>`:
campaign.planning.identity.program_identity), a tool-driven benchmark's own
program (`user.<name>`: user_program), each the content hash of the file the
job starts, resolved at submit. A rerun starts the file as it is now: after
the user recompiled or edited it, the new attempt would run another program
under the old run's key, and its rows would be pooled with the old program's
(a partial rerun: the old program's n beside the new one's). So before
anything is recorded, each run's program is resolved and hashed again with
the very rules submit used, and a run whose entry changed is refused:
`submit` makes new runs of the new program, restoring the file reruns these.
A program inside a container image, a `script:` and one named by a
placeholder have no hash of a file of this host (no entry, or the same
value), so they are rerun as before; so is an entry recorded by an older rule
than the one hashing it now (a Python file hashed by its bytes then, by its
code now; a tool-driven run's driver by its code then, by its protocol now),
which says nothing of the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from campaign.ledger import JobAttempt
from campaign.planning.identity import DRIVER_ENTRY, USER, now_code, program_entries, retired
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import BadInputError

FIX = ("its bytes changed since submit: `submit` the sweep again for new runs of the new program, "
       "or restore it to rerun these")
# a tool-driven benchmark's program is our driver too (`python -m campaign.job.fom`): its measurement
# protocol (or, recorded by an older campaign, its code) changes with an upgrade of campaign, not with
# anything the user edited or could restore
OURS = "campaign."


def changed_program(atts: Iterable[JobAttempt]) -> tuple[set[int], str | None]:
    """The attempts of `atts` whose run's program changed since submit (its
    `program` and `user.` identity entries, hashed again now) and the one line
    saying why they are not rerun (None: none changed). Each program file is
    hashed once, however many runs start it."""
    cache: dict[str, str] = {}
    left: set[int] = set()
    seen: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], list[tuple[str, str, str]]] = {}
    changed: dict[tuple[str, str, str], int] = {}  # (entry, old, new) -> runs
    for att in atts:
        spec = RunSpec.from_json(att.run.spec)
        recorded = [(k, v) for k, v in spec.identity if _is_program(k)]
        if not recorded:  # no program hashed at submit (or a ledger from before that)
            continue
        where = (spec.argv, spec.identity)  # a sweep's runs share a few
        if where not in seen:
            rest = [(k, v) for k, v in spec.identity if not _is_program(k)]
            now = dict(program_entries(spec.argv, rest, cache))
            seen[where] = [(_name(k, spec.argv), v, now.get(k, "(none)")) for k, v in recorded
                           if now.get(k) != v and not now_code(v, now.get(k)) and not retired(k, now)]
        for entry in seen[where]:
            changed[entry] = changed.get(entry, 0) + 1
            left.add(att.id)
    if not changed:
        return left, None
    (key, old, new), runs = next(iter(changed.items()))
    more = f" (and {len(changed) - 1} other program file(s))" if len(changed) > 1 else ""
    if key == _name(DRIVER_ENTRY, ()):
        return left, (f"{runs} run(s) were measured by {old}, now {new}{more}: campaign's driver measures another "
                      f"way since submit (campaign was upgraded), and a rerun's rows would be pooled with theirs: "
                      f"`submit` the sweep again for new runs")
    if key.startswith(OURS):
        return left, (f"{runs} run(s) ran {key} as {old}, now {new}{more}: campaign's own driver {key} changed since "
                      f"submit (campaign was upgraded or edited), and a rerun would measure with another driver: "
                      f"`submit` the sweep again for new runs")
    return left, f"{runs} run(s) ran program {key} as {old}, the file is now {new}{more}: {FIX}"


def _is_program(entry: str) -> bool:
    """An identity entry that hashes a file the job starts (the interpreter's versions too)."""
    return entry == "program" or entry.startswith(("program.", USER))


def _name(entry: str, argv: tuple[str, ...]) -> str:
    """The program an entry hashes, by its file's name (`program`: argv[0]'s)."""
    if entry == "program":
        return os.path.basename(argv[0]) if argv else entry
    return entry.removeprefix(USER).removeprefix("program.")


def without_changed_programs(atts: list[JobAttempt]) -> tuple[list[JobAttempt], str | None]:
    """`atts` less those whose program changed since submit, and why they are
    left (None: none is). Where that leaves nothing of what was asked, the
    rerun is refused (BadInputError, exit 2): nothing would run."""
    left, why = changed_program(atts)
    if why and len(left) == len(atts):
        raise BadInputError(f"rerun refused: {why}; nothing was rerun")
    return [a for a in atts if a.id not in left], why
