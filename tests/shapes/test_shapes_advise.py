"""The shape advisor: the co-design paper's rules and its example shapes."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from analysis.advise import (
    Proposal,
    ShapeAdvice,
    advise_shape,
    format_advice,
    head_candidates,
    padded_vocab,
    swiglu_intermediate,
)


def _by_kind(advice: ShapeAdvice, kind: str) -> dict[int, Proposal]:
    return {p.value: p for p in advice.proposals if p.kind == kind}


def test_gpt3_2p7b_heads_and_vocab() -> None:
    adv = advise_shape(2560, 32, 50257, batch=4, gpu="h200")
    checks = {c.rule: c.ok for c in adv.checks}
    assert checks == {"h/a multiple of 64": False, "vocab multiple of 64": False, "b·s multiple of 64": True,
                      "(b·a)/t integer": True, "h/t integer": True}
    heads = _by_kind(adv, "heads")
    assert set(heads) == {20, 40}
    assert heads[20].h_over_a == 128 and heads[40].h_over_a == 64
    assert heads[20].rank == 1  # larger h/a: the attention BMMs are less memory-bound
    assert heads[20].speedup is not None and heads[20].speedup > 1.0
    assert heads[20].source == "model"
    vocab = _by_kind(adv, "vocab")
    assert list(vocab) == [50304]
    assert vocab[50304].speedup is not None and vocab[50304].speedup > 2.0
    assert adv.evidence == "model: waves on h200 (ffn, heads, vocab)"
    assert [c.value for c in adv.current] == [32, 50257]


def test_rules_helpers() -> None:
    assert padded_vocab(50257) == 50304
    assert padded_vocab(50304) == 50304
    assert padded_vocab(50257, 128) == 50304
    assert head_candidates(2560, 32)[:2] == [40, 20]
    assert head_candidates(2560, 32, batch=1, tp=8) == [40, 8]  # t | b·a


def test_swiglu_llama_rule() -> None:
    assert swiglu_intermediate(4096) == 11008 == 256 * 43
    assert swiglu_intermediate(4096, multiple_of=64) == 10944
    assert swiglu_intermediate(5120) == 13824  # Llama-2-13B
    adv = advise_shape(4096, 32, 32000)
    ffn = _by_kind(adv, "ffn")
    assert set(ffn) == {11008, 10944, 10880}
    assert "Llama rule" in ffn[11008].note
    assert _by_kind(adv, "heads") == {} and _by_kind(adv, "vocab") == {}  # rules hold
    adv64 = advise_shape(4096, 32, 32000, multiple_of=64)
    assert "Llama rule" in _by_kind(adv64, "ffn")[10944].note


def test_ffn_check_and_current() -> None:
    adv = advise_shape(4096, 32, 32000, ffn=10922)
    assert {c.rule: c.ok for c in adv.checks}["ffn/t multiple of 64"] is False
    cur = [c for c in adv.current if c.kind == "ffn"]
    assert cur[0].value == 10922
    assert all(p.speedup is not None and p.speedup > 2.0 for p in adv.proposals if p.kind == "ffn")


def test_unknown_gpu() -> None:
    with pytest.raises(ValueError, match="unknown gpu 'tpu'; known: .*h200"):
        advise_shape(2560, 32, 50257, gpu="tpu")


def _layer_rows(a: int, time_s: float, gpu_model: str | None = "NVIDIA H200") -> list[dict[str, object]]:
    return [{"kernel": "gemm_shapes", "variant": "layer", "h": 2560, "a": a, "b": 4, "t": 1, "ffn": 0,
             "n": 2048, "v": 50257, "time_s": time_s, "repeat": r, "gpu_model": gpu_model} for r in range(3)]


def test_measured_rows_rank_when_they_cover_every_candidate() -> None:
    # Pretend the ledger says a=40 is fastest: measured beats the model.
    rows = _layer_rows(32, 0.010) + _layer_rows(20, 0.009) + _layer_rows(40, 0.008)
    adv = advise_shape(2560, 32, 50257, batch=4, measured=pd.DataFrame(rows))
    heads = _by_kind(adv, "heads")
    assert heads[40].rank == 1 and heads[40].source == "measured"
    assert heads[40].speedup == pytest.approx(0.010 / 0.008)
    assert adv.evidence.startswith("measured: 9 rows from the ledger (heads)")
    assert "model: waves on h200 (ffn, vocab)" in adv.evidence


def test_measured_rows_of_another_gpu_or_the_cpu_are_not_this_gpus() -> None:
    """--gpu h100 ranks by H100 rows only: an A100's or a CPU's timings of the
    same shapes say nothing about it, and pooled with the H100's they move its medians."""
    other = (_layer_rows(32, 0.010, "NVIDIA A100-SXM4-80GB") + _layer_rows(20, 0.009, "NVIDIA A100-SXM4-80GB")
             + _layer_rows(40, 0.008, "NVIDIA A100-SXM4-80GB") + _layer_rows(40, 0.001, None))
    adv = advise_shape(2560, 32, 50257, batch=4, gpu="h100", measured=pd.DataFrame(other))
    assert _by_kind(adv, "heads")[20].source == "model" and "measured" not in adv.evidence
    mine = _layer_rows(32, 0.020, "NVIDIA H100 80GB HBM3") + _layer_rows(20, 0.010, "NVIDIA H100 80GB HBM3") \
        + _layer_rows(40, 0.040, "NVIDIA H100 80GB HBM3")
    adv = advise_shape(2560, 32, 50257, batch=4, gpu="h100", measured=pd.DataFrame(other + mine))
    heads = _by_kind(adv, "heads")
    assert heads[20].source == "measured" and heads[20].rank == 1
    assert heads[20].speedup == pytest.approx(0.020 / 0.010)
    assert adv.evidence.startswith("measured: 9 rows from the ledger (heads)")


def test_partial_coverage_falls_back_to_the_model() -> None:
    rows = _layer_rows(32, 0.010) + _layer_rows(20, 0.009)  # no a=40
    adv = advise_shape(2560, 32, 50257, batch=4, measured=pd.DataFrame(rows))
    assert _by_kind(adv, "heads")[20].source == "model"
    assert "measured" not in adv.evidence


def test_h200_ledger_rows_confirm_the_paper() -> None:
    from pathlib import Path

    d = Path(__file__).resolve().parents[2] / "bench" / "results" / "h200" / "shapes"
    if not (d / "gpt3_2p7b.csv").exists():
        pytest.skip("no H200 results in bench/")
    measured = pd.concat([pd.read_csv(d / f) for f in ("gpt3_2p7b.csv", "vocab.csv")])
    adv = advise_shape(2560, 32, 50257, batch=4, measured=measured)
    heads, vocab = _by_kind(adv, "heads"), _by_kind(adv, "vocab")
    assert heads[20].source == "measured" and heads[20].rank == 1
    assert 1.05 < (heads[20].speedup or 0) < 1.2  # measured 1.10x
    assert (vocab[50304].speedup or 0) > 4  # measured 5.4x on the H200


def test_format_advice_text() -> None:
    text = format_advice(advise_shape(2560, 32, 50257, batch=4))
    assert "[FAIL] h/a multiple of 64: h/a = 80" in text
    assert "a=20 (h/a=128)" in text
    assert "v=50304" in text and "next multiple of 64" in text
    assert text.splitlines()[-1] == "Evidence: model: waves on h200 (ffn, heads, vocab)"


def test_a_tp_no_swiglu_width_divides_proposes_no_width() -> None:
    """t = 4096 divides h and b·a, but none of the SwiGLU widths near 8h/3: the advice ended in an
    IndexError (an empty candidate list ranked) instead of proposing no width."""
    adv = advise_shape(4096, 32, 50000, batch=128, tp=4096)
    assert _by_kind(adv, "ffn") == {}
    assert [c.ok for c in adv.checks if c.rule in ("h/t integer", "(b·a)/t integer")] == [True, True]


def test_head_candidates_of_a_large_h_come_from_its_divisors() -> None:
    """The candidates were sought by trying every count from 1 to h: an h of 3 * 2**28 took about a
    minute, one of 1e10 more than 100 s, and the largest h accepted (2**53) never answered. They are
    the divisors of h/64."""
    h = 3 * 2**28
    start = time.process_time()
    cands = head_candidates(h, 5)
    assert time.process_time() - start < 10  # the old search: 8e8 trials
    assert cands[:2] == [6, 4] and len(cands) == 23 * 2  # h/64 = 3 * 2**22 has 23 * 2 divisors
    assert all((h // x) % 64 == 0 for x in cands)
    assert head_candidates(4096 + 1, 32) == []  # no h/a' can be a multiple of 64
    assert head_candidates(2560, 32) == [40, 20, 10, 8, 5, 4, 2, 1]
