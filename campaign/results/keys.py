"""Natural keys of result rows (imports are idempotent, no row is
counted twice in a median).

A row is one (configuration, n, repeat) of one source: the key hashes the
configuration columns, the swept axes, the repeat and every extra column that
is not itself a measurement (a `--a 20,32,40` sweep inside one process gives
one row per value of `a` at the same n and repeat), scoped by where the row
came from ("import", or "import:<campaign>" for `import --campaign`). The same data imported
twice, or under another file name, has the same keys; imported rows add
their measured values to the key (see natural_key).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from resultschema.columns import KEY_COLUMNS, MEASURED_COLUMNS

MEASURED_EXTRAS = frozenset({"first_call_s", "value"})  # measured values (a figure of merit's `value`): not part of a row's identity
IMPORT_SCOPE = "import"


def natural_key(row: dict[str, Any], scope: str = "", *, measured: bool = False) -> str:
    """With `measured` (imported rows) the measured values join the key: the
    same row imported again is skipped, while another measurement of the same
    configuration, n and repeat (another file's time) is a row of its own."""
    extra = row.get("extra") or {}
    ident = [scope, *(row.get(c) for c in KEY_COLUMNS),
             sorted((str(k), str(v)) for k, v in extra.items() if measured or k not in MEASURED_EXTRAS)]
    if measured:
        ident += [repr(row.get(c)) for c in MEASURED_COLUMNS]
    blob = json.dumps(ident, separators=(",", ":"), default=str)
    return key_prefix(scope) + hashlib.sha256(blob.encode()).hexdigest()[:32]


def key_prefix(scope: str) -> str:
    """What a key starts with: "i." for the imported rows that still have keys (job rows had their
    attempt's id, zero-padded, until schema v12 moved them to result files). The hash alone (it already
    includes the scope) makes a key unique; the prefix kept one sync's keys next to each other in the
    unique index, which a 10-million-row ledger otherwise fills at random places: at 1M rows that index
    cost more than half of SQLite's INSERT time (BENCHMARKS.md section 9). Schema v10 gave existing keys
    the same prefix."""
    return "i."
