"""One-call H200 validation of the torch kernels (run with the device tool).

    python3 scripts/h200_kernel_checks.py --out $OUT

Why one script: device time is scarce (minutes per session), so everything
that needs the GPU happens in one process and one call, and each section
writes its results before the next starts (a timeout keeps what was done).

Sections, in order (measurements first, tests last, so a slow compile in the
tests cannot cost the numbers):
1. ceilings: bf16 GEMM 8192^3 on random data, device copy bandwidth (bytes read
   + written) and read bandwidth, all with triton.testing.do_bench (median);
2. attention_forward/memopt bf16 d=128 at n = 8192, 16384, 32768: our harness
   (program semantics, CSV rows) and do_bench on the same call; their ratio
   (target within 5%) and the rate 4 n^2 d / t against the GEMM rate (target 70%);
3. decode bf16 d=128 (and d=64 at the largest n), n up to 1,048,576: every
   variant/backend, bandwidth 2 n d * 2 B / t against the copy bandwidth
   (target 90%), plus an exploratory chunked matrix-vector formulation;
4. naive vs fused: attention_forward naive vs memopt, and
   attention_forward naive + attention_backward naive vs attention_fwdbwd fused;
5. pytest -k cuda on tests/kernels/test_torch_kernels_cuda.py (bf16 and fp32 --check).

What the sections share is scripts/h200_measure.py; the decode sections (and
the split-K grid) are scripts/h200_decode_checks.py.

Outputs under --out: harness_rows.csv (every harness row, with a `section`
column), results.json (everything else), pytest_cuda.txt, summary.txt.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h200_measure as measure
import torch
from h200_decode_checks import decode, splitk_grid
from h200_measure import REPO, RESULTS, T0, bench, case_for, harness_median, run_program, save, say

from kernels.torch import attention_backward as attn_bwd
from kernels.torch import attention_forward as attn_fwd
from kernels.torch import attention_fwdbwd as attn_fb

# --------------------------------------------------------------------------- sections


def ceilings() -> None:
    m = 8192 if measure.DEVICE == "cuda" else 512
    elems = 2**30 // 2 if measure.DEVICE == "cuda" else 2**24  # 1 GiB of bf16 on the GPU
    gen = torch.Generator(device=measure.DEVICE).manual_seed(0)
    a = torch.randn(m, m, device=measure.DEVICE, dtype=torch.bfloat16, generator=gen)
    b = torch.randn(m, m, device=measure.DEVICE, dtype=torch.bfloat16, generator=gen)
    t_gemm = bench(lambda: torch.mm(a, b))
    src = torch.randn(elems, device=measure.DEVICE, dtype=torch.bfloat16, generator=gen)
    dst = torch.empty_like(src)
    t_copy = bench(lambda: dst.copy_(src))
    t_read = bench(lambda: torch.amax(src))
    RESULTS["ceilings"] = {
        "gemm_bf16_8192_tflops": 2 * m**3 / t_gemm / 1e12,
        "copy_bw_TBps": 2 * src.numel() * 2 / t_copy / 1e12,
        "read_bw_TBps_amax": src.numel() * 2 / t_read / 1e12,
    }
    c = RESULTS["ceilings"]
    say(f"ceilings: GEMM bf16 8192^3 {c['gemm_bf16_8192_tflops']:.0f} TFLOP/s; copy "
        f"{c['copy_bw_TBps']:.2f} TB/s (read+write); read (amax) {c['read_bw_TBps_amax']:.2f} TB/s")


def attention_memopt(sizes: list[int]) -> None:
    gemm = RESULTS["ceilings"]["gemm_bf16_8192_tflops"]
    out: list[dict[str, Any]] = []
    for backend in ("flash", "cudnn", "efficient"):
        try:
            rows = run_program("attn_memopt", attn_fwd.main, [
                "--n", ",".join(map(str, sizes)), "--d", "128", "--variant", "memopt",
                "--sdpa-backend", backend, "--dtype", "bf16", "--device", measure.DEVICE,
                "--repeats", "20", "--warmup", "5", "--check"])
        except Exception as exc:  # a backend may refuse these shapes
            say(f"  attention memopt {backend}: {type(exc).__name__}: {exc}")
            continue
        for n in sizes:
            if not any(int(r["n"]) == n for r in rows):
                continue
            t_h, err = harness_median(rows, n)
            t_b = bench(case_for(attn_fwd.SPEC, n, 128, "memopt", sdpa_backend=backend).run)
            flops = 4 * n * n * 128
            rec = {"backend": backend, "n": n, "harness_s": t_h, "do_bench_s": t_b,
                   "harness_over_do_bench": t_h / t_b, "tflops_harness": flops / t_h / 1e12,
                   "tflops_do_bench": flops / t_b / 1e12, "frac_gemm": flops / t_b / 1e12 / gemm,
                   "rel_err": err}
            out.append(rec)
            say(f"attn fwd memopt {backend:9s} n={n:6d}: harness {t_h*1e3:8.3f} ms, do_bench "
                f"{t_b*1e3:8.3f} ms, ratio {t_h/t_b:.3f}; {rec['tflops_do_bench']:.0f} TFLOP/s = "
                f"{rec['frac_gemm']*100:.0f}% of GEMM; rel_err {err}")
        RESULTS["attention_memopt"] = out


def timing_check(n: int) -> None:
    """Harness vs do_bench twice each on attention memopt/cudnn (the first call
    saw the harness 10% under do_bench at n = 32768): noise, or clocks?"""
    out: list[dict[str, Any]] = []
    case = case_for(attn_fwd.SPEC, n, 128, "memopt", sdpa_backend="cudnn")
    for i in range(2):
        rows = run_program("timing_check", attn_fwd.main, [
            "--n", str(n), "--d", "128", "--variant", "memopt", "--sdpa-backend", "cudnn",
            "--dtype", "bf16", "--device", measure.DEVICE, "--repeats", "20", "--warmup", "5"])
        t_h = harness_median(rows, n)[0]
        t_b = bench(case.run)
        t_short = t_b
        if measure.DEVICE == "cuda":
            from triton.testing import do_bench

            t_short = float(do_bench(case.run, warmup=5, rep=20, return_mode="median")) * 1e-3
        out.append({"round": i, "harness_s": t_h, "do_bench_s": t_b, "do_bench_rep20ms_s": t_short})
        say(f"timing check n={n} round {i}: harness {t_h*1e3:.3f} ms, do_bench {t_b*1e3:.3f} ms, "
            f"do_bench(rep=20ms) {t_short*1e3:.3f} ms, harness/do_bench {t_h/t_b:.3f}")
    RESULTS["timing_check"] = out


def naive_vs_fused(sizes: list[int]) -> None:
    common = ["--n", ",".join(map(str, sizes)), "--d", "128", "--dtype", "bf16", "--device", measure.DEVICE,
              "--repeats", "10", "--warmup", "3", "--check"]
    fwd_naive = run_program("naive_vs_fused", attn_fwd.main, [*common, "--variant", "naive"])
    fwd_memopt = run_program("naive_vs_fused", attn_fwd.main, [*common, "--variant", "memopt"])
    bwd_naive = run_program("naive_vs_fused", attn_bwd.main, [*common, "--variant", "naive"])
    fused = {b: run_program("naive_vs_fused", attn_fb.main, [*common, "--sdpa-backend", b])
             for b in ("flash", "cudnn")}
    out: list[dict[str, Any]] = []
    for n in sizes:
        rec: dict[str, Any] = {"n": n}
        for key, rows in (("fwd_naive", fwd_naive), ("fwd_memopt_flash", fwd_memopt),
                          ("bwd_naive", bwd_naive), ("fwdbwd_fused_flash", fused["flash"]),
                          ("fwdbwd_fused_cudnn", fused["cudnn"])):
            if any(int(r["n"]) == n for r in rows):
                rec[key + "_s"], rec[key + "_rel_err"] = harness_median(rows, n)
        if "fwd_naive_s" in rec and "fwd_memopt_flash_s" in rec:
            rec["fwd_naive_over_memopt"] = rec["fwd_naive_s"] / rec["fwd_memopt_flash_s"]
        if {"fwd_naive_s", "bwd_naive_s", "fwdbwd_fused_flash_s"} <= rec.keys():
            rec["fwdbwd_naive_over_fused"] = (rec["fwd_naive_s"] + rec["bwd_naive_s"]) / rec[
                "fwdbwd_fused_flash_s"]
        out.append(rec)
        say(f"naive vs fused n={n:6d}: " + ", ".join(
            f"{k}={v*1e3:.3f}ms" if k.endswith("_s") else f"{k}={v:.2f}"
            for k, v in rec.items() if k != "n" and not k.endswith("rel_err")))
    RESULTS["naive_vs_fused"] = out


def cuda_tests(out: Path, timeout_s: float) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "cuda",
           "tests/kernels/test_torch_kernels_cuda.py"]
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                              timeout=max(30.0, timeout_s), check=False)
        text, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        text, code = f"TIMEOUT after {exc.timeout:.0f}s\n{partial}", -1
    (out / "pytest_cuda.txt").write_text(text)
    tail = [ln for ln in text.strip().splitlines() if ln.strip()][-1:]
    RESULTS["pytest_cuda"] = {"returncode": code, "tail": tail}
    say(f"pytest -k cuda: exit {code}: {tail}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="wall seconds for the whole script; tests get what is left")
    parser.add_argument("--sections", default="ceilings,attention_memopt,decode,naive_vs_fused,tests",
                        help="comma list of: ceilings,attention_memopt,decode,splitk_grid,"
                             "timing_check,naive_vs_fused,tests (ceilings is always run)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, CPU if no GPU: tests this script, measures nothing")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        if not args.smoke:
            print("error: no CUDA device (use --smoke to exercise the script on a CPU)",
                  file=sys.stderr)
            return 1
        measure.DEVICE = "cpu"
    else:
        props = torch.cuda.get_device_properties(0)
        RESULTS["device"] = {"name": torch.cuda.get_device_name(0), "torch": torch.__version__,
                             "sms": props.multi_processor_count,
                             "l2_bytes": getattr(props, "L2_cache_size", None)}
    say(f"device: {RESULTS.get('device', measure.DEVICE)}")
    small = args.smoke
    sections: list[tuple[str, Callable[[], None]]] = [
        ("ceilings", ceilings),
        ("attention_memopt", lambda: attention_memopt([256, 512] if small else [8192, 16384, 32768])),
        ("decode", lambda: decode([4096, 16384] if small else [65536, 262144, 1048576])),
        ("naive_vs_fused", lambda: naive_vs_fused(
            [256, 4200] if small else [4096, 8192, 16384, 32768])),
        ("splitk_grid", lambda: splitk_grid(4096 if small else 1048576, 128)),
        ("timing_check", lambda: timing_check(512 if small else 32768)),
    ]
    wanted = {"ceilings", *args.sections.split(",")}
    for name, fn in sections:
        if name not in wanted:
            continue
        t = time.monotonic()
        try:
            fn()
        except Exception as exc:
            say(f"SECTION {name} FAILED: {type(exc).__name__}: {exc}")
            RESULTS.setdefault("failed_sections", []).append(f"{name}: {exc!r}")
        RESULTS.setdefault("section_seconds", {})[name] = time.monotonic() - t
        save(out)
        if measure.DEVICE == "cuda":
            torch.cuda.empty_cache()
    if "tests" in wanted:
        cuda_tests(out, args.budget_s - (time.monotonic() - T0))
    say(f"total {time.monotonic() - T0:.0f} s")
    save(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
