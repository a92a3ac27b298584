"""JSON text of many similar flat dicts (run specs) from a template of the
previous one: the text json.JSONEncoder.encode gives, at a fraction of its
cost when consecutive dicts differ in a few values. A 100,000-run submit
encodes each spec twice (the sorted compact JSON its key hashes, the spec the
ledger stores), yet runs planned one after another share all but their grid
values (RunSpec.evolve copies the references).

A value is taken from the template only when it is the same object as there
and immutable all the way down (str, numbers, None, tuples of those):
identity, not equality, since `True == 1` and `1 == 1.0` encode differently.
The other values are encoded one by one into the template's slots. Any other
dict (other key types, a template whose slot markers are not each found
exactly once) is encoded whole."""

from __future__ import annotations

from collections.abc import Callable
from operator import is_
from typing import Any

_ATOMS = (str, int, float, bool, type(None))
_UNSET = object()  # in a template's values at its slots: `is` no value, so a slot always reads as changed


def _immutable(value: Any) -> bool:
    if type(value) is tuple:
        return all(_immutable(v) for v in value)
    return type(value) in _ATOMS


class _Template:
    __slots__ = ("names", "values", "pattern", "order", "parts")

    def __init__(self, names: tuple[str, ...], values: list[Any], order: list[int], parts: list[str]) -> None:
        self.names = names
        self.values = values  # the kept values; _UNSET at the slots
        self.pattern = [v is not _UNSET for v in values]  # what map(is_, ...) gives for a dict that fits
        self.order = order  # the slots, in the order their values appear in the text
        self.parts = parts  # the text around the slots: len(order) + 1 pieces


class TemplateEncoder:
    """`encode(data)` == `encoder(data)` for dicts of JSON values, `encoder`
    being a json.JSONEncoder's encode (any sort_keys and separators)."""

    def __init__(self, encoder: Callable[[Any], str]) -> None:
        self._encode = encoder
        self._template: _Template | None = None

    def encode(self, data: dict[str, Any]) -> str:
        values = list(data.values())
        tpl = self._template  # read once: another thread may replace it meanwhile
        if (tpl is not None and len(values) == len(tpl.values) and list(map(is_, values, tpl.values)) == tpl.pattern
                and tuple(data) == tpl.names):
            out = [tpl.parts[0]]
            for k, i in enumerate(tpl.order):
                out.append(self._encode(values[i]))
                out.append(tpl.parts[k + 1])
            return "".join(out)
        text = self._encode(data)
        self._template = self._make(data, values, tpl)
        return text

    def _make(self, data: dict[str, Any], values: list[Any], last: _Template | None) -> _Template | None:
        """A template for the dicts after this one: its slots are the values
        that changed since the last template (none for the first dict)."""
        names = tuple(data)
        if not all(type(k) is str for k in names):
            return None
        if last is not None and names == last.names:
            slots = [i for i, (v, old) in enumerate(zip(values, last.values)) if v is not old]
        else:
            slots = []
        if not all(_immutable(v) for i, v in enumerate(values) if i not in slots):
            return None
        marked = dict(data)
        markers = {i: self._encode(f"\x00campaign-json-slot-{i}\x00") for i in slots}
        for i in slots:
            marked[names[i]] = f"\x00campaign-json-slot-{i}\x00"
        text = self._encode(marked)
        if any(text.count(m) != 1 for m in markers.values()):
            return None
        order = sorted(slots, key=lambda i: text.index(markers[i]))
        parts = []
        rest = text
        for i in order:
            head, _, rest = rest.partition(markers[i])
            parts.append(head)
        parts.append(rest)
        kept = [_UNSET if i in slots else v for i, v in enumerate(values)]
        return _Template(names, kept, order, parts)
