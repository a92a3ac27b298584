"""The decode sections of the H200 checks (scripts/h200_kernel_checks.py runs
them): every decode variant and backend against the copy bandwidth, an
exploratory chunked matrix-vector form, and a do_bench grid over the split-K
kernel's knobs around its defaults.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import h200_measure as measure
import torch
from h200_measure import RESULTS, bench, case_for, harness_median, run_program, say

from kernels.torch import decode as decode_k


def _decode_chunked(n: int, d: int) -> Callable[[], torch.Tensor]:
    """Exploratory: scores by one matrix-vector product, then the P V reduction
    split into 256 independent chunks (a batched GEMV) and summed."""
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(d, generator=gen).to(measure.DEVICE, torch.bfloat16)
    k = torch.randn(n, d, generator=gen).to(measure.DEVICE, torch.bfloat16)
    v = torch.randn(n, d, generator=gen).to(measure.DEVICE, torch.bfloat16)
    chunks = 256 if n % 256 == 0 else 1

    def run() -> torch.Tensor:
        p = torch.softmax(torch.mv(k, q) * (1 / math.sqrt(d)), dim=0)
        part = torch.bmm(p.view(chunks, 1, -1), v.view(chunks, -1, d))
        return part.sum(dim=0, dtype=torch.float32)

    return run


def decode(sizes: list[int]) -> None:
    copy_bw = RESULTS["ceilings"]["copy_bw_TBps"]
    out: list[dict[str, Any]] = []
    configs = [("splitk", "auto"), ("naive", "auto"), ("sdpa", "flash"), ("sdpa", "cudnn")]
    # sdpa/efficient ran at 0.02 TB/s on the first H200 call (35 ms at n = 2^20): dropped
    shapes = [(n, 128) for n in sizes] + [(sizes[-1], 64)]
    for variant, backend in configs:
        for d in sorted({d for _, d in shapes}, reverse=True):
            ns = [n for n, dd in shapes if dd == d]
            try:
                rows = run_program("decode", decode_k.main, [
                    "--n", ",".join(map(str, ns)), "--d", str(d), "--variant", variant,
                    "--sdpa-backend", backend, "--dtype", "bf16", "--device", measure.DEVICE,
                    "--repeats", "20", "--warmup", "5", "--check", "--l2-flush"])
            except Exception as exc:
                say(f"  decode {variant}/{backend} d={d}: {type(exc).__name__}: {exc}")
                continue
            for n in ns:
                if not any(int(r["n"]) == n for r in rows):
                    continue
                t_h, err = harness_median(rows, n)
                t_b = bench(case_for(decode_k.SPEC, n, d, variant, sdpa_backend=backend).run)
                nbytes = 2 * n * d * 2
                rec = {"variant": variant, "backend": backend, "n": n, "d": d, "harness_s": t_h,
                       "do_bench_s": t_b, "bw_TBps_harness": nbytes / t_h / 1e12,
                       "bw_TBps_do_bench": nbytes / t_b / 1e12,
                       "frac_copy_bw": nbytes / t_b / 1e12 / copy_bw, "rel_err": err}
                out.append(rec)
                say(f"decode {variant}/{backend:9s} n={n:8d} d={d:3d}: harness {t_h*1e6:8.1f} us "
                    f"({rec['bw_TBps_harness']:.2f} TB/s), do_bench {t_b*1e6:8.1f} us "
                    f"({rec['bw_TBps_do_bench']:.2f} TB/s) = {rec['frac_copy_bw']*100:.0f}% of copy; "
                    f"rel_err {err}")
    for n, d in shapes:
        t_b = bench(_decode_chunked(n, d))
        nbytes = 2 * n * d * 2
        out.append({"variant": "chunked-explore", "n": n, "d": d, "do_bench_s": t_b,
                    "bw_TBps_do_bench": nbytes / t_b / 1e12,
                    "frac_copy_bw": nbytes / t_b / 1e12 / copy_bw})
        say(f"decode chunked-explore  n={n:8d} d={d:3d}: do_bench {t_b*1e6:8.1f} us "
            f"({nbytes / t_b / 1e12:.2f} TB/s) = {nbytes / t_b / 1e12 / copy_bw * 100:.0f}% of copy")
    RESULTS["decode"] = out


def splitk_grid(n: int, d: int) -> None:
    """do_bench over the split-K decode kernel's knobs around the defaults."""
    copy_bw = RESULTS["ceilings"]["copy_bw_TBps"]
    q, k, v = _decode_inputs(n, d)
    out: list[dict[str, Any]] = []
    for block_n in (32, 64, 128):
        for per_sm in (2, 4, 8, 16):
            for warps in (4, 8):
                plan = decode_k.splitk_plan(n, d, torch.device(measure.DEVICE), block_n, per_sm, warps)
                try:
                    t = bench(functools.partial(decode_k.decode_splitk, q, k, v, plan))
                except Exception as exc:
                    say(f"  splitk {plan}: {type(exc).__name__}: {exc}")
                    continue
                bw = 2 * n * d * 2 / t / 1e12
                out.append({"block_n": block_n, "per_sm": per_sm, "warps": warps,
                            "splits": plan.splits, "do_bench_s": t, "bw_TBps": bw,
                            "frac_copy_bw": bw / copy_bw})
    out.sort(key=lambda r: r["do_bench_s"])
    RESULTS["splitk_grid"] = {"n": n, "d": d, "configs": out}
    for r in out[:5]:
        say(f"splitk grid n={n} d={d} block_n={r['block_n']:3d} per_sm={r['per_sm']:2d} "
            f"warps={r['warps']} splits={r['splits']:5d}: {r['do_bench_s']*1e6:.1f} us "
            f"{r['bw_TBps']:.2f} TB/s = {r['frac_copy_bw']*100:.0f}% of copy")


def _decode_inputs(n: int, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device=measure.DEVICE).manual_seed(2)
    return tuple(torch.randn(*shape, device=measure.DEVICE, generator=gen).to(torch.bfloat16)  # type: ignore[return-value]
                 for shape in ((1, d), (n, d), (n, d)))
