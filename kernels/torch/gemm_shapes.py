"""GEMMs of a transformer decoder layer, at chosen model shapes (co-design paper).

Why a program of its own: the co-design paper's claims (h/a and vocabulary
multiples of 64 run faster; tile and wave quantization decide throughput) are
about the GEMM shapes a model's hyper-parameters produce, so this times
exactly those GEMMs — one row per (s, shape, GEMM, repeat) — and records the
GEMM's (m, k, n, batch) and FLOPs so analysis/waves.py can set each row
against the model without knowing the layer's algebra.

The GEMMs (b batch, s = --n sequence length, h hidden, a heads, t tensor
parallel, v vocabulary, f = 4h, or --ffn for SwiGLU):
    qkv      (b·s, h)     x (h, 3h/t)
    score    b·a/t × (s, h/a) x (h/a, s)
    attn_v   b·a/t × (s, s)   x (s, h/a)
    proj     (b·s, h/t)   x (h/t, h)
    mlp_up   (b·s, h)     x (h, f/t)      SwiGLU: gate and up, batch = 2
    mlp_down (b·s, f/t)   x (f/t, h)
    logits   (b·s, h)     x (h, v)        (not divided by t, as in the paper)
    layer    qkv, score, attn_v, proj, mlp_up, mlp_down timed as one sequence
             (the logit GEMM runs once per model, not per layer)
    raw      (m, k) x (k, nn) from --m --k --nn (lists: one process sweeps
             their product; rows carry the --n value they ran under, which
             the raw GEMM ignores, so give --n one value)
All shape arguments take comma lists; one process runs their product and
skips (with a note on stderr) combinations that are not valid shapes.

Timing, warm-up, the separate first call, atomic CSV: the shared harness
(kernels/torch/harness.py). Inputs: standard normal from a seeded generator
on the device (never zeros; on the device because the attention inputs reach
gigabytes, too slow to draw on the host).

--check: rel_err of each GEMM against float64 on a sub-block — at most
CHECK_BLOCK rows × CHECK_BLOCK columns of the output of the first
CHECK_BATCH batch entries, with the full k — so the check costs O(k) per
entry at any shape and is never skipped. `layer` reports the worst of its
GEMMs.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from kernels.torch import harness as hz

KERNEL = "gemm_shapes"
LAYER_GEMMS: tuple[str, ...] = ("qkv", "score", "attn_v", "proj", "mlp_up", "mlp_down")
MODEL_GEMMS: tuple[str, ...] = (*LAYER_GEMMS, "logits")
ALL_GEMMS: tuple[str, ...] = (*MODEL_GEMMS, "layer", "raw")
DEFAULT_GEMMS: tuple[str, ...] = (*MODEL_GEMMS, "layer")
EXTRA_COLUMNS: tuple[str, ...] = ("h", "a", "b", "v", "t", "ffn", "m", "k", "nn", "batch", "flops")
CHECK_BLOCK = 128
CHECK_BATCH = 2


@dataclass(frozen=True)
class Gemm:
    """`batch` independent (m, k) x (k, n) products (one launch each for
    SwiGLU's gate/up pair, one batched launch for the attention BMMs)."""

    name: str
    m: int
    n: int
    k: int
    batch: int = 1
    bmm: bool = False  # one batched launch (torch.bmm) vs `batch` launches

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.batch


@dataclass(frozen=True)
class Shape:
    """One model-shape combination of the sweep."""

    h: int
    a: int
    b: int
    v: int
    t: int
    ffn: int


def layer_gemms(shape: Shape, s: int) -> list[Gemm]:
    """The seven GEMMs of the module docstring; ValueError if not a valid shape.

    analysis/waves.py `layer_gemms` mirrors this (kernels import no analysis);
    tests/shapes pin that both agree."""
    h, a, b, v, t, ffn = shape.h, shape.a, shape.b, shape.v, shape.t, shape.ffn
    if h % a or h % t or (b * a) % t:
        raise ValueError(f"h={h} a={a} b={b} t={t}: need a | h, t | h and t | b·a")
    f = 4 * h if ffn == 0 else ffn
    if f % t:
        raise ValueError(f"ffn={f} is not divisible by t={t}")
    d, bs, heads = h // a, b * s, b * a // t
    return [
        Gemm("qkv", bs, 3 * h // t, h),
        Gemm("score", s, s, d, heads, bmm=True),
        Gemm("attn_v", s, d, s, heads, bmm=True),
        Gemm("proj", bs, h, h // t),
        Gemm("mlp_up", bs, f // t, h, 1 if ffn == 0 else 2),
        Gemm("mlp_down", bs, h, f // t),
        Gemm("logits", bs, v, h),
    ]


class Operands:
    """Inputs and output buffers of one Gemm, and its timed call and check."""

    def __init__(self, g: Gemm, device: torch.device, dtype: torch.dtype, gen: torch.Generator) -> None:
        self.g = g
        shapes: list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]
        if g.bmm:
            shapes = [((g.batch, g.m, g.k), (g.batch, g.k, g.n), (g.batch, g.m, g.n))]
        else:
            shapes = [((g.m, g.k), (g.k, g.n), (g.m, g.n))] * g.batch
        # SwiGLU gate and up share the activation x, as in a real layer.
        x = torch.randn(*shapes[0][0], device=device, dtype=dtype, generator=gen)
        self.a = [x for _ in shapes]
        self.b = [torch.randn(*sb, device=device, dtype=dtype, generator=gen) for _, sb, _ in shapes]
        self.c = [torch.empty(*sc, device=device, dtype=dtype) for _, _, sc in shapes]

    def run(self) -> list[torch.Tensor]:
        op = torch.bmm if self.g.bmm else torch.mm
        for a, b, c in zip(self.a, self.b, self.c, strict=True):
            op(a, b, out=c)
        return self.c

    def poison(self) -> None:
        for c in self.c:
            c.fill_(float("nan"))

    def check(self, outs: Sequence[torch.Tensor]) -> float:
        """rel_err on a CHECK_BLOCK² sub-block of the first CHECK_BATCH entries."""
        r, q = CHECK_BLOCK, CHECK_BLOCK
        pairs = []
        for a, b, c in zip(self.a, self.b, outs, strict=True):
            if self.g.bmm:
                a, b, c = a[:CHECK_BATCH], b[:CHECK_BATCH], c[:CHECK_BATCH]
            ref = hz.to64(a[..., :r, :]) @ hz.to64(b[..., :, :q])
            pairs.append((c[..., :r, :q], ref))
        return hz.rel_err(pairs)


def gemm_bytes(g: Gemm, elem: int) -> int:
    """Device memory one Gemm's operands take (for the memory guard)."""
    per = g.m * g.k + g.k * g.n + g.m * g.n
    return elem * (per * g.batch - (g.batch - 1) * g.m * g.k * (not g.bmm))


def _extra(shape: Shape | None, g: Gemm | None, flops: int) -> dict[str, str]:
    row = {c: "" for c in EXTRA_COLUMNS}
    if shape is not None:
        row.update(h=str(shape.h), a=str(shape.a), b=str(shape.b), v=str(shape.v), t=str(shape.t), ffn=str(shape.ffn))
    if g is not None:
        row.update(m=str(g.m), k=str(g.k), nn=str(g.n), batch=str(g.batch))
    row["flops"] = str(flops)
    return row


def _layer_case(ops: dict[str, Operands]) -> hz.Case:
    parts = [ops[name] for name in LAYER_GEMMS]

    def run() -> list[torch.Tensor]:
        outs: list[torch.Tensor] = []
        for p in parts:
            outs.extend(p.run())
        return outs

    def poison() -> None:
        for p in parts:
            p.poison()

    def check(outs: Sequence[torch.Tensor]) -> float:
        errs, i = [], 0
        for p in parts:
            errs.append(p.check(outs[i : i + len(p.c)]))
            i += len(p.c)
        return float("nan") if any(math.isnan(e) for e in errs) else max(errs)

    return hz.Case(run=run, check=check, poison=poison)


def _measure_rows(case: hz.Case, args: argparse.Namespace, device: torch.device, base: dict[str, str]) -> list[dict[str, str]]:
    gpu = hz.GpuState.shared(device) if device.type == "cuda" else None
    if gpu is not None:
        gpu.begin()
    m = hz.measure(case, args.repeats, args.warmup, device, None, args.batch_target_us * 1e-6)
    state = gpu.sample() if gpu is not None else {}
    err = case.check(m.outputs) if args.check else None
    row = dict(base, first_call_s=hz.format_float(m.first_call_s), rel_err=hz.format_float(err))
    if device.type == "cuda":
        row.update(state, calls=str(m.calls))
    return [dict(row, repeat=str(i), time_s=hz.format_float(t)) for i, t in enumerate(m.times_s)]


def _guard(need: int, what: str, device: torch.device) -> None:
    have = hz.available_bytes(device)
    if need > hz.MEMORY_HEADROOM * have:
        raise hz.KernelFailure(
            f"gemm_shapes {what} needs about {need / 2**30:.1f} GiB but only "
            f"{have / 2**30:.1f} GiB is available on {device.type}; use smaller shapes"
        )


def run_shape(shape: Shape, s: int, gemms: Sequence[str], args: argparse.Namespace,
              device: torch.device, env: dict[str, str]) -> list[dict[str, str]]:
    """Rows of every requested model GEMM (and `layer`) at one shape and s."""
    all_g = {g.name: g for g in layer_gemms(shape, s)}
    names = [n for n in MODEL_GEMMS if n in gemms or ("layer" in gemms and n in LAYER_GEMMS)]
    dtype = hz.DTYPES[args.dtype]
    elem = torch.empty((), dtype=dtype).element_size()
    _guard(sum(gemm_bytes(all_g[n], elem) for n in names), f"at s={s} {shape}", device)
    gen = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + s)
    ops = {n: Operands(all_g[n], device, dtype, gen) for n in names}
    base = dict(env, kernel=KERNEL, n=str(s), d=str(shape.h // shape.a), backend="")
    rows: list[dict[str, str]] = []
    for n in names:
        if n in gemms:
            case = hz.Case(run=ops[n].run, check=ops[n].check, poison=ops[n].poison)
            rows += _measure_rows(case, args, device, dict(base, variant=n, **_extra(shape, all_g[n], all_g[n].flops)))
    if "layer" in gemms:
        flops = sum(all_g[n].flops for n in LAYER_GEMMS)
        rows += _measure_rows(_layer_case(ops), args, device, dict(base, variant="layer", **_extra(shape, None, flops)))
    return rows


def run_raw(m: int, k: int, nn: int, s: int, args: argparse.Namespace,
            device: torch.device, env: dict[str, str]) -> list[dict[str, str]]:
    """Rows of one raw (m, k) x (k, nn) GEMM."""
    g = Gemm("raw", m, nn, k)
    dtype = hz.DTYPES[args.dtype]
    _guard(gemm_bytes(g, torch.empty((), dtype=dtype).element_size()), f"raw {m}x{k}x{nn}", device)
    gen = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + m + 7 * k + 13 * nn)
    op = Operands(g, device, dtype, gen)
    case = hz.Case(run=op.run, check=op.check, poison=op.poison)
    base = dict(env, kernel=KERNEL, variant="raw", n=str(s), d="", backend="", **_extra(None, g, g.flops))
    return _measure_rows(case, args, device, base)


def _int_list(text: str) -> list[int]:
    """Comma list of integers >= 0 (ffn=0 means 4h)."""
    try:
        values = [int(p) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: values must be >= 0")
    return values


def _gemm_list(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",")]
    bad = [n for n in names if n not in ALL_GEMMS and n != "all"]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown gemm {bad[0]!r}; known: {', '.join(ALL_GEMMS)}, all")
    return names


def build_parser() -> argparse.ArgumentParser:
    """The contract's arguments plus the shape arguments (module docstring)."""
    p = hz.build_parser(KERNEL, ("all", *ALL_GEMMS))
    p.add_argument("--gemm", type=_gemm_list, default=None,
                   help="comma list of " + ",".join(ALL_GEMMS) + " (default: --variant; 'all' = all but raw)")
    ints = hz.positive_int_list
    p.add_argument("--h", type=ints, default=[2560], help="hidden size(s)")
    p.add_argument("--a", type=ints, default=[32], help="attention heads")
    p.add_argument("--b", type=ints, default=[1], help="micro-batch size")
    p.add_argument("--v", type=ints, default=[50257], help="vocabulary size(s)")
    p.add_argument("--t", type=ints, default=[1], help="tensor-parallel degree")
    p.add_argument("--ffn", type=_int_list, default=[0], help="0 = 4h MLP, else SwiGLU intermediate size")
    p.add_argument("--m", type=ints, default=None, help="raw GEMM rows")
    p.add_argument("--k", type=ints, default=None, help="raw GEMM inner dimension")
    p.add_argument("--nn", type=ints, default=None, help="raw GEMM columns")
    return p


def resolve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[list[str], list[Shape]]:
    """Requested GEMMs and the valid shape combinations; exit 2 when none."""
    names = args.gemm if args.gemm is not None else [args.variant]
    gemms = list(dict.fromkeys(g for n in names for g in (DEFAULT_GEMMS if n == "all" else (n,))))
    if "raw" in gemms and not (args.m and args.k and args.nn):
        parser.error("--gemm raw needs --m, --k and --nn")
    shapes: list[Shape] = []
    if any(g != "raw" for g in gemms):
        for combo in itertools.product(args.h, args.a, args.b, args.v, args.t, args.ffn):
            shape = Shape(*combo)
            try:
                layer_gemms(shape, args.n[0])
            except ValueError as exc:
                print(f"note: skipping {shape}: {exc}", file=sys.stderr)
                continue
            shapes.append(shape)
        if not shapes:
            parser.error("no valid shape among --h/--a/--b/--t/--ffn (need a | h, t | h, t | b·a, t | ffn)")
    return gemms, shapes


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, sweep s × shapes × GEMMs (then raw), write the CSV. Exit code."""
    parser = build_parser()
    args = hz.parse_args(parser, argv)
    if args.profile != "none":  # one process sweeps many GEMMs: no per-n profiled call (yet)
        parser.error("--profile is not implemented for gemm_shapes")
    gemms, shapes = resolve(args, parser)
    device = hz.setup_runtime(args)
    env = hz.environment_columns(device, args)
    columns = hz.CSV_COLUMNS + EXTRA_COLUMNS + (hz.CUDA_COLUMNS if device.type == "cuda" else ())
    # each s (the n of the contract) on disk as soon as all its shapes are measured: a job stopped by
    # its walltime keeps the finished s for the ledger, like every other kernel (campaign.partial)
    out = hz.CsvAppender(args.out, columns)
    rows: list[dict[str, str]] = []
    try:
        for s in args.n:
            rows = []
            for shape in shapes:
                rows += run_shape(shape, s, gemms, args, device, env)
                _release(device)
            if "raw" in gemms:
                for m, k, nn in itertools.product(args.m, args.k, args.nn):
                    rows += run_raw(m, k, nn, s, args, device, env)
            _release(device)
            out.append(rows)
    except (hz.KernelFailure, torch.OutOfMemoryError) as exc:
        out.append(rows)  # as before: a failed run's file holds what it measured, the exit code says it failed
        out.finish()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out.finish()
    return 0


def _release(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()


if __name__ == "__main__":
    raise SystemExit(main())
