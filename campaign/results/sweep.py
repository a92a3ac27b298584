"""The orphan sweep: result files no pointer names, removed only when nothing is lost.

A result file is the only copy of its rows once its job's folder is cleaned, so
the sweep never removes one on a guess (a file name, a pointer that names a
file no one checked): a file goes only when every row of it is held by another
file that exists, that a pointer of this ledger names, and whose bytes match
that pointer's hash, read just now. A result file renamed or moved by hand
(its pointer's file missing), one whose holder was changed or cut short, and
any file this ledger's pointers do not cover (another copy of the ledger's)
stay. A writer's temporary file goes, whole or cut short (files.sweep): no
pointer names a temporary name (a file is renamed before its pointer's
commit), so its writer never committed and the rows' origin (the job's
output, the imported file) still holds them; the next sync or import writes
them again.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import or_, select

from campaign.ledger import Campaign, Ledger, ResultFile, files
from campaign.ledger.files import homes, pointer_homes


def sweep_orphans(led: Ledger, everywhere: bool = False) -> list[Path]:
    """Remove the result files no pointer names (a writer killed between the file's rename and its
    transaction's commit) once old enough that no writer can still be about to commit them
    (files.SWEEP_AGE_S), and only when every row of each is held by a verified file of this ledger
    (`_Holders`): a campaign's folder is shared by every copy of its ledger, and a file a newer copy
    points to must survive a sweep through an older one. A sync looks only through the folders where
    a writer left a marker or a temporary file (files.unsettled): one that committed leaves neither.
    `everywhere` (`status`) looks through every campaign's folders: a release before the markers
    left its orphans without one. It only reads the ledger."""
    root = led.results_root
    owners: dict[Path, set[int | None]] = {}
    with led.session() as s:
        for cid, workdir in s.execute(select(Campaign.id, Campaign.workdir)):
            for place in homes(root, cid, workdir):
                owners.setdefault(place, set()).add(cid)
    if root is not None:  # rows imported without a campaign: their folder beside the ledger
        owners.setdefault(root / files.IMPORTS, set()).add(None)
    places = [place for place in owners if ((place / files.RESULTS).is_dir() if everywhere else files.unsettled(place))]
    if not places:
        return []
    where: dict[int | None, list[Path]] = {}  # campaign (None: imported without one) -> its places looked through
    for place in places:
        for owner in owners[place]:
            where.setdefault(owner, []).append(place)
    with led.session() as s:
        query = select(ResultFile.path, ResultFile.campaign_id).distinct()
        ids = [c for c in where if c is not None]
        named = s.execute(
            query if everywhere else query.where(or_(ResultFile.campaign_id.in_(ids), ResultFile.campaign_id.is_(None)))
        ).all()
    referenced = {files.referenced_path(str(place), path) for path, cid in named for place in where.get(cid, ())}
    return files.sweep(places, referenced, _Holders(led).hold_all)


class _Holders:
    """The files this ledger's pointers name for given attempts, each checked (present, its
    bytes matching its pointer's hash) once per sweep, and their rows by attempt."""

    def __init__(self, led: Ledger) -> None:
        self.led = led
        self.checked: dict[str, Any] = {}  # a holder's path -> its table, or None: missing or changed

    def hold_all(self, path: Path) -> bool:
        """Every row of the file at `path` is in another verified file of this ledger. A file
        that cannot be read as one of ours is kept; rows of no attempt (imported) are never
        judged held."""
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception:  # noqa: BLE001 - not readable as Parquet: kept (a temporary one never comes here)
            return False
        if table.num_rows == 0 or "attempt_id" not in table.column_names:
            return False
        attempts = set(table.column("attempt_id").to_pylist())
        if None in attempts:
            return False
        held: set[str] = set()
        for holder in self._holders(attempts, path):
            held |= _row_keys(holder, table.column_names, attempts)
        return _row_keys(table, table.column_names, attempts) <= held

    def _holders(self, attempts: set[int], path: Path) -> Iterable[Any]:
        """The verified tables of the files pointers name for these attempts, `path` itself excepted."""
        with self.led.session() as s:
            pointers = s.execute(
                select(ResultFile.path, ResultFile.sha256, ResultFile.campaign_id, Campaign.workdir)
                .join(Campaign, Campaign.id == ResultFile.campaign_id, isouter=True)
                .where(ResultFile.attempt_id.in_(sorted(attempts)))
            ).all()
        for pointer, digest, cid, workdir in sorted(set(pointers)):
            for place in pointer_homes(self.led.results_root, cid, workdir):
                candidate = place / pointer
                if not candidate.is_file() or _same(candidate, path):
                    continue
                table = self._verified(candidate, digest)
                if table is not None:
                    yield table
                break

    def _verified(self, holder: Path, digest: str) -> Any:
        import pyarrow.parquet as pq

        key = f"{holder}\0{digest}"
        if key not in self.checked:
            try:
                self.checked[key] = pq.read_table(holder) if files.sha256(holder) == digest else None
            except Exception:  # noqa: BLE001 - unreadable: holds nothing
                self.checked[key] = None
        return self.checked[key]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _row_keys(table: Any, columns: list[str], attempts: set[int]) -> set[str]:
    """The rows of these attempts, each as text of every column of `columns` (a holder missing
    one of them holds none: what that column says would be lost)."""
    if any(c not in table.column_names for c in columns):
        return set()
    rows = table.select(columns).to_pylist()
    return {repr([row[c] for c in columns]) for row in rows if row["attempt_id"] in attempts}
