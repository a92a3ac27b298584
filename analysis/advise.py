"""Model-shape advice: the co-design paper's rules, and nearby better shapes.

Why: a transformer's hyper-parameters (hidden size h, heads a, vocabulary v,
MLP width) decide the GEMM shapes, and shapes that break the hardware's
alignment (h/a, v, b·s multiples of 64) or fall badly into tiles and waves
run measurably slower for the same model size. This module checks the rules
and proposes the nearest shapes that follow them, ranked by measured
throughput when the ledger has rows for them, else by the wave model
(analysis/waves.py) — and says which one it used.

Pure: pandas and the wave model; the CLI (`campaign advise shape`) formats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from analysis.gpus import get_gpu
from analysis.waves import GemmShape, layer_gemms, predicted_time_s

MLP_GEMMS = ("mlp_up", "mlp_down")
ALIGN = 64


@dataclass(frozen=True)
class Check:
    """One rule of the paper: whether the shape follows it, and why not."""

    rule: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Proposal:
    """One candidate value for one hyper-parameter.

    `throughput_tflops` is *useful* throughput: the FLOPs of the GEMMs that
    the candidate changes, counted at the unpadded vocabulary for `vocab`
    (padding columns are waste), over their time. `speedup` is the current
    shape's time over this candidate's for the same work (for `ffn`, the
    ratio of throughputs, as the work differs). `source` says whether the
    number was measured or modelled.
    """

    kind: str  # "heads", "vocab" or "ffn"
    value: int
    h_over_a: int | None
    throughput_tflops: float
    speedup: float | None
    source: str  # "measured" or "model"
    rank: int
    note: str = ""


@dataclass
class ShapeAdvice:
    """What `advise_shape` found: rule checks, ranked proposals, evidence."""

    h: int
    a: int
    vocab: int
    seq: int
    batch: int
    tp: int
    gpu: str
    checks: list[Check] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    current: list[Proposal] = field(default_factory=list)  # the given shape, per kind
    evidence: str = ""

    @property
    def ok(self) -> bool:
        """True when every rule holds."""
        return all(c.ok for c in self.checks)


def swiglu_intermediate(h: int, multiple_of: int = 256, ffn_dim_multiplier: float = 1.0) -> int:
    """The SwiGLU width Llama uses: int(2·4h/3), scaled, rounded *up* to `multiple_of`.

    Llama-2-7B: h=4096 → int(10922.67)=10922 → 256·ceil(10922/256) = 11008
    (= 256·43). With multiple_of=64 it gives 10944.
    """
    hidden = int(2 * (4 * h) / 3)
    hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * math.ceil(hidden / multiple_of)


def head_candidates(h: int, a: int, batch: int = 1, tp: int = 1) -> list[int]:
    """Head counts a' with a' | h, 64 | h/a' and tp | batch·a', nearest to a first.

    Such an a' divides h/64, so the divisors of h/64 are tried, in pairs up to its square root:
    trying every count up to h never ends for the h a user may type."""
    if h % ALIGN:
        return []
    m = h // ALIGN
    divisors = {d for i in range(1, math.isqrt(m) + 1) if m % i == 0 for d in (i, m // i)}
    cands = [x for x in divisors if (batch * x) % tp == 0]
    return sorted(cands, key=lambda x: (abs(x - a), -x))


def padded_vocab(vocab: int, multiple: int = ALIGN) -> int:
    """Smallest multiple of `multiple` ≥ vocab (50257 → 50304)."""
    return multiple * math.ceil(vocab / multiple)


def _checks(h: int, a: int, vocab: int, seq: int, batch: int, tp: int, ffn: int | None) -> list[Check]:
    out = []
    if h % a:
        out.append(Check("a divides h", False, f"h={h} is not divisible by a={a}"))
    else:
        d = h // a
        out.append(Check("h/a multiple of 64", d % ALIGN == 0, f"h/a = {d}" + ("" if d % ALIGN == 0 else f" = 64·{d / ALIGN:.3g}")))
    out.append(Check("vocab multiple of 64", vocab % ALIGN == 0, f"v = {vocab}, v mod 64 = {vocab % ALIGN}"))
    bs = batch * seq
    out.append(Check("b·s multiple of 64", bs % ALIGN == 0, f"b·s = {bs}"))
    out.append(Check("(b·a)/t integer", (batch * a) % tp == 0, f"b·a = {batch * a}, t = {tp}"))
    out.append(Check("h/t integer", h % tp == 0, f"h = {h}, t = {tp}"))
    if ffn is not None:
        f = ffn if ffn else 4 * h
        out.append(Check("ffn/t multiple of 64", (f // tp) % ALIGN == 0 and f % tp == 0, f"ffn = {f}, t = {tp}"))
    return out


def _subset(shapes: list[GemmShape], names: tuple[str, ...]) -> list[GemmShape]:
    return [s for s in shapes if s.name in names]


def _measured_time(measured: pd.DataFrame | None, variants: tuple[str, ...], **params: int) -> tuple[float, int] | None:
    """Sum over `variants` of the median time of the matching gemm_shapes rows,
    and the number of rows used; None unless every variant is covered."""
    if measured is None or measured.empty:
        return None
    df = measured
    if "kernel" in df.columns:
        df = df[df["kernel"] == "gemm_shapes"]
    for col, val in params.items():
        if col not in df.columns:
            return None
        df = df[pd.to_numeric(df[col], errors="coerce") == val]
    total, rows = 0.0, 0
    for v in variants:
        sel = df[df["variant"] == v]
        if sel.empty:
            return None
        total += float(sel["time_s"].median())
        rows += len(sel)
    return total, rows


def _of_gpu(measured: pd.DataFrame | None, gpu: str) -> pd.DataFrame | None:
    """The rows timed on `gpu` (their `gpu_model` names it: `NVIDIA H100 80GB HBM3` for h100): another
    GPU's or a CPU's timings of the same shapes say nothing of this one, and pooled with its own they
    would move its medians."""
    if measured is None or measured.empty or "gpu_model" not in measured.columns:
        return None
    names = measured["gpu_model"].astype("string").str.lower().str.replace(r"[\s-]", "", regex=True)
    return measured[names.str.contains(gpu, regex=False).fillna(False).to_numpy(dtype=bool)]


class _Ranker:
    """Times candidates by measurement where the ledger covers them, else model."""

    def __init__(self, gpu: str, measured: pd.DataFrame | None) -> None:
        self.gpu = gpu
        self.measured = measured
        self.rows_used = 0
        self.kinds_measured: set[str] = set()
        self.kinds_model: set[str] = set()

    def times(self, kind: str, cands: list[tuple[list[GemmShape], dict[str, int]]],
              whole: str | None = None) -> tuple[list[float], str]:
        """Times for all candidates of one kind from one source (never mixed:
        a measured time and a modelled one are not comparable). `whole` names
        a measured variant that times all the GEMMs as one sequence (`layer`),
        preferred over the sum of the single GEMMs' medians."""
        tries = ([(whole,)] if whole else []) + [tuple(s.name for s in cands[0][0])]
        for names in tries:
            meas = [_measured_time(self.measured, names, **p) for _, p in cands]
            if all(m is not None for m in meas):
                self.rows_used += sum(m[1] for m in meas if m is not None)
                self.kinds_measured.add(kind)
                return [m[0] for m in meas if m is not None], "measured"
        self.kinds_model.add(kind)
        return [predicted_time_s(shapes, self.gpu) for shapes, _ in cands], "model"

    def evidence(self) -> str:
        parts = []
        if self.kinds_measured:
            parts.append(f"measured: {self.rows_used} rows from the ledger ({', '.join(sorted(self.kinds_measured))})")
        if self.kinds_model:
            parts.append(f"model: waves on {self.gpu} ({', '.join(sorted(self.kinds_model))})")
        return "; ".join(parts)


_Item = tuple[int, int | None, float, float, str]  # value, h/a, useful flops, time, note


def _rank(kind: str, items: Sequence[_Item], cur: tuple[float, float] | None, source: str, better_is: str) -> list[Proposal]:
    """items: (value, h/a, useful flops, time, note); rank by time or by throughput."""
    def key(it: _Item) -> float:
        return it[3] if better_is == "time" else -(it[2] / it[3])

    out = []
    for rank, (value, d, flops, t, note) in enumerate(sorted(items, key=key), start=1):
        tput = flops / t / 1e12
        if cur is None:
            speed = None
        elif better_is == "time":
            speed = cur[1] / t
        else:
            speed = tput / (cur[0] / cur[1] / 1e12)
        out.append(Proposal(kind, value, d, tput, speed, source, rank, note))
    return out


def _heads(h: int, a: int, seq: int, batch: int, tp: int, vocab: int, ffn: int, ranker: _Ranker) -> tuple[list[Proposal], Proposal | None]:
    layer = ("qkv", "score", "attn_v", "proj", "mlp_up", "mlp_down")
    if h % a == 0 and (h // a) % ALIGN == 0:
        return [], None  # the rule holds: changing heads is a modelling decision
    valid = head_candidates(h, a, batch, tp)
    below = [x for x in valid if x < a][:1]
    above = [x for x in valid if x > a][:1]
    cands = below + above  # the nearest on each side, e.g. 2560/32 -> 20, 40
    values = ([a] if h % a == 0 and (batch * a) % tp == 0 else []) + cands
    if not cands:
        return [], None
    shapes = [[s for s in layer_gemms(h, x, batch, seq, vocab, tp, ffn) if s.name in layer] for x in values]
    params = [{"h": h, "a": x, "b": batch, "t": tp, "ffn": ffn, "n": seq} for x in values]
    times, source = ranker.times("heads", list(zip(shapes, params, strict=True)), whole="layer")
    flops = [float(sum(s.flops for s in sh)) for sh in shapes]
    items = [(x, h // x, f, t, "") for x, f, t in zip(values, flops, times, strict=True)]
    cur = None
    if values[0] == a:
        cur = (items[0][2], items[0][3])
        current = _rank("heads", [items[0]], None, source, "time")[0]
        items = items[1:]
    else:
        current = None
    props = _rank("heads", items, cur, source, "time")
    return props, current


def _vocab(h: int, a: int, vocab: int, seq: int, batch: int, tp: int, ranker: _Ranker) -> tuple[list[Proposal], Proposal | None]:
    if vocab % ALIGN == 0:
        return [], None
    values = [vocab, padded_vocab(vocab, ALIGN)]
    p128 = padded_vocab(vocab, 128)
    if p128 not in values:
        values.append(p128)
    shapes = [[GemmShape("logits", batch * seq, v, h)] for v in values]
    params = [{"h": h, "b": batch, "v": v, "n": seq} for v in values]
    times, source = ranker.times("vocab", list(zip(shapes, params, strict=True)))
    useful = 2.0 * batch * seq * h * vocab
    notes = ["", "next multiple of 64", "next multiple of 128"]
    items = [(v, None, useful, t, notes[i]) for i, (v, t) in enumerate(zip(values, times, strict=True))]
    cur = (items[0][2], items[0][3])
    current = _rank("vocab", [items[0]], None, source, "time")[0]
    return _rank("vocab", items[1:], cur, source, "time"), current


def _ffn(h: int, a: int, seq: int, batch: int, tp: int, vocab: int, ffn: int | None, multiple_of: int, ranker: _Ranker) -> tuple[list[Proposal], Proposal | None]:
    target = 8 * h / 3
    llama = swiglu_intermediate(h, multiple_of)
    lo, hi = ALIGN * math.floor(target / ALIGN), ALIGN * math.ceil(target / ALIGN)
    named: dict[int, str] = {}
    for value, why in ((llama, f"Llama rule, multiple_of={multiple_of}"), (hi, "multiple of 64 above 8h/3"),
                       (lo, "multiple of 64 below 8h/3")):
        named[value] = f"{named[value]}; {why}" if value in named else why
    values = ([ffn] if ffn else []) + [v for v in dict.fromkeys([llama, hi, lo]) if v != ffn and v % tp == 0]
    if not values:  # no width near 8h/3 divides over t ranks
        return [], None
    shapes = [_subset(layer_gemms(h, a if h % a == 0 else 1, batch, seq, vocab, tp, v), MLP_GEMMS) for v in values]
    params = [{"h": h, "b": batch, "t": tp, "ffn": v, "n": seq} for v in values]
    times, source = ranker.times("ffn", list(zip(shapes, params, strict=True)))
    items = [(v, None, float(sum(s.flops for s in sh)), t, named.get(v, "")) for v, sh, t in zip(values, shapes, times, strict=True)]
    if ffn:
        cur = (items[0][2], items[0][3])
        return _rank("ffn", items[1:], cur, source, "throughput"), _rank("ffn", [items[0]], None, source, "throughput")[0]
    return _rank("ffn", items, None, source, "throughput"), None


# The largest whole number a float holds exactly: the model's FLOP and time arithmetic is in floats,
# and a larger dimension would be rounded (or, past 1e308, not convertible at all).
MAX_DIMENSION = 2**53


def advise_shape(
    h: int,
    a: int,
    vocab: int,
    seq: int = 2048,
    batch: int = 1,
    tp: int = 1,
    gpu: str = "h200",
    measured: pd.DataFrame | None = None,
    ffn: int | None = None,
    multiple_of: int = 256,
) -> ShapeAdvice:
    """Check (h, a, vocab, seq, batch, tp) against the paper's rules and propose
    nearby shapes (heads, padded vocab, SwiGLU width), ranked.

    `measured`: gemm_shapes result rows (columns variant, time_s, gpu_model and
    the shape parameters h, a, b, v, t, ffn, n) — only those timed on `gpu`,
    used for a kind only when they cover every candidate of that kind. `ffn`: the current SwiGLU width, if any.
    Raises ValueError for an unknown gpu (naming the known ones) or a
    dimension that is not positive or past MAX_DIMENSION.
    """
    spec = get_gpu(gpu)
    if min(h, a, vocab, seq, batch, tp) <= 0:
        raise ValueError("h, a, vocab, seq, batch and tp must be positive")
    if max(h, a, vocab, seq, batch, tp) > MAX_DIMENSION:
        raise ValueError(f"h, a, vocab, seq, batch and tp must be at most 2**53 ({MAX_DIMENSION}): the wave model "
                         f"computes in floating point")
    ranker = _Ranker(spec.name, _of_gpu(measured, spec.name))
    advice = ShapeAdvice(h, a, vocab, seq, batch, tp, spec.name, checks=_checks(h, a, vocab, seq, batch, tp, ffn))
    for props, cur in (
        _heads(h, a, seq, batch, tp, vocab, ffn or 0, ranker),
        _vocab(h, a, vocab, seq, batch, tp, ranker),
        _ffn(h, a, seq, batch, tp, vocab, ffn, multiple_of, ranker),
    ):
        advice.proposals.extend(props)
        if cur is not None:
            advice.current.append(cur)
    advice.evidence = ranker.evidence()
    return advice


def format_advice(advice: ShapeAdvice) -> str:
    """Human-readable advice: checks, current shape, ranked proposals, evidence."""
    lines = [
        (
            f"Shape h={advice.h} a={advice.a} vocab={advice.vocab} seq={advice.seq} "
            f"batch={advice.batch} tp={advice.tp} on {advice.gpu}"
        ),
        "Rules:",
    ]
    for c in advice.checks:
        lines.append(f"  [{'ok' if c.ok else 'FAIL'}] {c.rule}: {c.detail}")
    labels = {"heads": "heads a", "vocab": "vocabulary", "ffn": "SwiGLU ffn"}
    for kind in ("heads", "vocab", "ffn"):
        props = [p for p in advice.proposals if p.kind == kind]
        cur = [p for p in advice.current if p.kind == kind]
        if not props:
            continue
        lines.append(f"{labels[kind]}:")
        for p in cur:
            lines.append(f"  current {_describe(p)}")
        for p in props:
            sp = f", {p.speedup:.2f}x vs current" if p.speedup is not None else ""
            lines.append(f"  #{p.rank} {_describe(p)}{sp}")
    lines.append(f"Evidence: {advice.evidence}")
    return "\n".join(lines)


def _describe(p: Proposal) -> str:
    name = {"heads": "a", "vocab": "v", "ffn": "ffn"}[p.kind]
    d = f" (h/a={p.h_over_a})" if p.h_over_a is not None else ""
    note = f" [{p.note}]" if p.note else ""
    return f"{name}={p.value}{d}: {p.throughput_tflops:.0f} TFLOP/s {p.source}{note}"
