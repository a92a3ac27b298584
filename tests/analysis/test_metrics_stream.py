"""`report --json` streamed (analysis/metrics_stream.py): the same bytes as
the one-object dump, chunk by chunk, and only the metrics asked for."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from analysis import METRIC_KEYS, metrics_json
from analysis import metrics_stream as ms
from tests.analysis.conftest import RowMaker

SIZES = [64, 128, 256, 512]


def _table(rows: RowMaker) -> pd.DataFrame:
    anvil = rows({(t, n): [2.5e-6 * n / t, 2.6e-6 * n / t] for t in (1, 2, 4) for n in SIZES})
    memopt = rows({(t, n): [1.5e-6 * n / t, 1.6e-6 * n / t] for t in (1, 2, 4) for n in SIZES}, variant="memopt")
    delta = rows({(t, n): [1e-6 * n / t, 1.1e-6 * n / t] for t in (1, 2, 4) for n in SIZES}, cluster="delta")
    return pd.concat([anvil, memopt, delta], ignore_index=True)


def _stream(frame: pd.DataFrame, **kw: object) -> str:
    out = io.StringIO()
    ms.write_metrics_json(frame, None, out, **kw)  # type: ignore[arg-type]
    return out.getvalue()


@pytest.mark.parametrize("chunk", [1, 3, 100_000])
def test_stream_is_the_dump_byte_for_byte(rows: RowMaker, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    frame = _table(rows)
    monkeypatch.setattr(ms, "CHUNK_ROWS", chunk)
    text = _stream(frame)
    assert text == json.dumps(metrics_json(frame, None))
    doc = json.loads(text)
    assert list(doc) == list(METRIC_KEYS) and len(doc["speedup"]) > 3  # several chunks when chunk < 4


def test_keys_and_cluster_limit_the_output(rows: RowMaker) -> None:
    frame = _table(rows)
    full = metrics_json(frame, None, cluster="delta")
    doc = json.loads(_stream(frame, cluster="delta", keys=["ratios", "speedup"]))
    assert list(doc) == ["speedup", "ratios"]  # the schema's order, whatever order they were asked in
    assert doc == {k: full[k] for k in ("speedup", "ratios")}
    assert doc["speedup"] and {r["cluster"] for r in doc["speedup"]} == {"delta"}


def test_unknown_key_is_named() -> None:
    with pytest.raises(ValueError, match="unknown metric key.*nope"):
        ms.check_keys(["speedup", "nope"])
