"""Attention forward: C and Fortran memopt against torch CPU SDPA, fp32.

    python kernels/bench_native_vs_torch.py [--n 1024,2048,4096] [--threads 1,2]
        [--march native] [--repeats 5] [--variants memopt]

Builds the native kernels into kernels/build/bench-<march> with
CFLAGS/FFLAGS = -O3 -fopenmp -march=<march> (torch dispatches to AVX2/AVX-512
at run time, so a baseline -O3 build would not be a fair comparison), runs
each program over the n-sweep per thread count, and prints medians, GFLOP/s
(4 n^2 d), the ratios C/torch and Fortran/C, and parallel efficiency
t(1)/(T t(T)).  Each thread count of torch runs in its own process.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = Path(__file__).resolve().parent

TORCH_SNIPPET = r"""
import statistics, sys, time, torch
threads, d, repeats = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
g = torch.Generator().manual_seed(0)
for n in map(int, sys.argv[4].split(",")):
    q, k, v = (torch.randn(1, 1, n, d, generator=g) for _ in range(3))
    f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)
    f(); f()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    print(n, statistics.median(ts))
"""


def build(march: str) -> Path:
    out = KERNELS / "build" / f"bench-{march}"
    flags = f"-O3 -fopenmp -march={march}"
    make = ["make", "-s", "-C", str(KERNELS), f"BUILD={out}", f"CFLAGS={flags}", f"FFLAGS={flags}"]
    subprocess.run([*make, "c"], check=True)
    if subprocess.run([*make, "fortran"], check=False).returncode != 0:
        print("(no Fortran build: the table has C and torch only)", file=sys.stderr)
    return out


def native(binary: Path, variant: str, ns: list[int], d: int, threads: int, repeats: int) -> dict[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.csv"
        subprocess.run([str(binary), "--n", ",".join(map(str, ns)), "--d", str(d), "--threads", str(threads),
                        "--variant", variant, "--repeats", str(repeats), "--warmup", "1", "--out", str(out)],
                       check=True)
        times: dict[int, list[float]] = {}
        with out.open() as f:
            for row in csv.DictReader(f):
                times.setdefault(int(row["n"]), []).append(float(row["time_s"]))
    return {n: statistics.median(t) for n, t in times.items()}


def torch_sdpa(ns: list[int], d: int, threads: int, repeats: int) -> dict[int, float]:
    proc = subprocess.run([sys.executable, "-c", TORCH_SNIPPET, str(threads), str(d), str(repeats),
                           ",".join(map(str, ns))], check=True, capture_output=True, text=True)
    return {int(a): float(b) for a, b in (line.split() for line in proc.stdout.splitlines())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", default="1024,2048,4096")
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--march", default="native")
    p.add_argument("--variants", default="memopt", help="attention_forward variants, e.g. memopt,naive")
    a = p.parse_args()
    ns = [int(x) for x in a.n.split(",")]
    threads = [int(x) for x in a.threads.split(",")]
    out = build(a.march)
    impls = [i for i in ("c", "fortran") if (out / i / "attention_forward").exists()]
    res: dict[tuple[str, str, int], dict[int, float]] = {}
    for t in threads:
        res[("torch", "sdpa", t)] = torch_sdpa(ns, a.d, t, a.repeats)
        for impl in impls:
            for v in a.variants.split(","):
                res[(impl, v, t)] = native(out / impl / "attention_forward", v, ns, a.d, t, a.repeats)
    print(f"attention_forward fp32, d={a.d}, -march={a.march}, median of {a.repeats}; "
          "ms (GFLOP/s); eff = t(1)/(T t(T))")
    keys = [k for k in res if k[2] == threads[0]]
    head = f"{'n':>6} {'T':>3} " + " ".join(f"{k[0] + '/' + k[1]:>20}" for k in keys)
    head += f" {'C/torch':>8} {'F/C':>6} {'eff C':>6}"
    print(head)
    for n in ns:
        for t in threads:
            cells = []
            for k in keys:
                s = res[(k[0], k[1], t)][n]
                cells.append(f"{s * 1e3:9.2f} ({4 * n * n * a.d / s / 1e9:6.1f})")
            c = res.get(("c", "memopt", t), {}).get(n)
            f = res.get(("fortran", "memopt", t), {}).get(n)
            tt = res[("torch", "sdpa", t)][n]
            c1 = res.get(("c", "memopt", threads[0]), {}).get(n)
            line = f"{n:>6} {t:>3} " + " ".join(f"{x:>20}" for x in cells)
            line += f" {c / tt:8.2f}" if c else f" {'':>8}"
            line += f" {f / c:6.2f}" if c and f else f" {'':>6}"
            line += f" {c1 / (t / threads[0] * c):6.2f}" if c and c1 else ""
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
