"""Natural keys of result rows (issue 11: imports are idempotent, no row is
counted twice in a median).

A row is one (configuration, n, repeat) of one source: the key hashes the
configuration columns, the swept axes, the repeat and every extra column that
is not itself a measurement (a `--a 20,32,40` sweep inside one process gives
one row per value of `a` at the same n and repeat), scoped by where the row
came from ("import", or the attempt that measured it). The same data imported
twice, or under another file name, has the same keys; imported rows add
their measured values to the key (see natural_key).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]  # json.dumps' own string encoder
from typing import Any

from campaign.results.row_texts import rows_joined

KEY_COLUMNS = ("cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads", "n", "d",
               "repeat", "job_id")
MEASURED_EXTRAS = frozenset({"first_call_s", "value"})  # measured values (a figure of merit's `value`): not part of a row's identity
MEASURED_COLUMNS = ("time_s", "flops", "bytes", "rel_err")
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


def attempt_scope(attempt_id: int) -> str:
    return f"attempt:{attempt_id}"


def key_prefix(scope: str) -> str:
    """What a key starts with: the attempt's id, zero-padded, for a job's rows ("i." for every other
    scope). The hash alone (it already includes the scope) makes a key unique; the prefix only puts
    one sync's keys next to each other in the unique index, which a 10-million-row ledger otherwise
    fills at random places: at 1M rows that index cost more than half of SQLite's INSERT time
    (BENCHMARKS.md section 9). Schema v10 gave existing keys the same prefix."""
    if scope.startswith("attempt:"):
        return f"{int(scope[8:]):012d}."
    return "i."


def _fragments(values: Sequence[Any], same: bool = False) -> str | list[str]:
    """Each value as json.dumps writes it inside natural_key's list; one str
    when every row has the same value (the run's own columns). `same`: the
    list holds one object in every row (its text is that object's, whatever
    its type)."""
    if same:
        return _fragment(values[0])
    if values.count(values[0]) == len(values):
        types = set(map(type, values))
        if len(types) == 1 and float not in types:  # (1 == 1.0 == True, 0.0 == -0.0: not one text)
            return _fragments_of(values[:1], types)[0]
        return _fragments_of(values, types)
    return _fragments_of(values, set(map(type, values)))


def _fragment(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return str(encode_basestring_ascii(value))
    if kind is int:
        return int.__repr__(value)
    return "null" if value is None else json.dumps(value, separators=(",", ":"), default=str)


def _fragments_of(values: Sequence[Any], types: set[type]) -> list[str]:
    if types == {str}:
        return list(map(encode_basestring_ascii, values))
    if types == {int}:
        return list(map(int.__repr__, values))
    if types == {type(None)}:
        return ["null"] * len(values)
    return [json.dumps(v, separators=(",", ":"), default=str) for v in values]


def _pairs(extra: dict[str, Any] | None) -> str:
    pairs = sorted((str(k), str(v)) for k, v in (extra or {}).items() if k not in MEASURED_EXTRAS)
    return "[" + ",".join(f"[{encode_basestring_ascii(k)},{encode_basestring_ascii(v)}]" for k, v in pairs) + "]]"


def natural_keys(columns: Mapping[str, Sequence[Any]], length: int, scope: str,
                 extra_columns: Mapping[str, Sequence[str | None]] | None = None,
                 extra_rows: Sequence[dict[str, Any] | None] | None = None,
                 same: Collection[str] = ()) -> list[str]:
    """natural_key(row, scope) of every row of these columns, built column by
    column (the same JSON text and hash, without a dict per row). The extra
    values come as columns (None: not in that row) or as each row's dict.
    `same` names columns (key or extra) whose list holds one object in every
    row: their text is written once, unchecked."""
    if length == 0:
        return []
    parts: list[str | Sequence[str]] = ["[" + encode_basestring_ascii(scope)]
    for col in KEY_COLUMNS:
        values = columns.get(col)
        parts += [",", "null" if values is None else _fragments(values, col in same)]
    parts.append(",")
    if extra_rows is not None:
        parts.append([_pairs(e) for e in extra_rows])
    else:
        parts += _extra_parts(extra_columns or {}, same)
    return hashed(key_prefix(scope), _blobs(parts, length))


def _extra_parts(extra_columns: Mapping[str, Sequence[str | None]], same: Collection[str]) -> list[str | Sequence[str]]:
    """The sorted [key, value] pairs of the extra columns that are not
    measurements, closing natural_key's list: with a value in every row, the
    keys are written once and only the values vary."""
    named = sorted((str(k), k) for k in extra_columns if k not in MEASURED_EXTRAS)
    if not named:
        return ["[]]"]
    if all(None not in extra_columns[k] for _, k in named):
        parts: list[str | Sequence[str]] = ["["]
        for i, (text, k) in enumerate(named):
            values = extra_columns[k]
            parts += [("," if i else "") + f"[{encode_basestring_ascii(text)},",
                      encode_basestring_ascii(str(values[0])) if k in same else
                      [encode_basestring_ascii(str(v)) for v in values], "]"]
        return [*parts, "]]"]
    cells = [[None if v is None else f"[{encode_basestring_ascii(text)},{encode_basestring_ascii(str(v))}]"
              for v in extra_columns[k]] for text, k in named]
    return [[f"[{','.join(c for c in row if c is not None)}]]" for row in zip(*cells)]]


def _blobs(parts: Sequence[str | Sequence[str]], length: int) -> list[bytes]:
    """The rows' texts (the parts concatenated), UTF-8 (each is ASCII: the JSON encoder escapes
    the rest)."""
    blobs = rows_joined(parts, length).encode().split(b"\n")
    blobs.pop()  # after the last row's newline
    return blobs


def hashed(prefix: str, blobs: Sequence[bytes]) -> list[str]:
    """prefix + the first 32 hex digits of each blob's SHA-256."""
    sha = hashlib.sha256
    return [prefix + sha(blob).hexdigest()[:32] for blob in blobs]
