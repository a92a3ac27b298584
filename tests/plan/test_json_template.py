"""campaign.json_template writes exactly json.JSONEncoder's text (run keys
and stored specs depend on it byte for byte), whatever the dicts in a row."""

from __future__ import annotations

import json
import random

from campaign.json_template import TemplateEncoder
from tests.fixtures.ledger_rows import SPEC

_ENCODERS = (json.JSONEncoder(check_circular=False).encode,
             json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False).encode)
_ODD = (True, 1, 1.0, 0, False, None, "x", "\x00campaign-json-slot-3\x00", (1, True), [1], {"b": 1, "a": [2]},
        "ü\n", (), float("nan"), -0.0)


def _dicts(seed: int, count: int) -> list[dict[str, object]]:
    rnd = random.Random(seed)
    base = SPEC.to_json()
    out = []
    for i in range(count):
        d = dict(base, extra_args=(("tag", f"t{i}"),))  # a grid point: one fresh value
        for k in rnd.sample(sorted(d), rnd.randint(0, 3)):
            d[k] = rnd.choice(_ODD)
        if rnd.random() < 0.1:
            d["late"] = 1
        if rnd.random() < 0.05:
            d = dict(reversed(list(d.items())))
        out.append(d)
    return out


def test_same_text_as_the_encoder_over_mixed_rows() -> None:
    for encode in _ENCODERS:
        fast = TemplateEncoder(encode)
        for d in _dicts(7, 3000):
            assert fast.encode(d) == encode(d)


def test_a_mutated_list_is_encoded_again() -> None:
    for encode in _ENCODERS:
        fast = TemplateEncoder(encode)
        items = [1]
        d = dict(SPEC.to_json(), extra_args=items)
        assert [fast.encode(d), fast.encode(d)] == [encode(d)] * 2
        items.append(2)
        assert fast.encode(d) == encode(d) and "2" in fast.encode(d)
