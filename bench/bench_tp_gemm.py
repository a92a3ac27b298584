"""The tensor-parallel GEMM (kernels/torch/tp_gemm.py) on the ranks a machine has:
one rank per GPU over NCCL, and CPU ranks 1, 2, 4 over gloo (BENCHMARKS.md).

Run (on the GPU machine; only torch needed there):
    python3 bench/bench_tp_gemm.py run --out DIR [--gpu-n 1024,4096,16384] [--gpu-d 8192]
Then, where pandas and scipy are (the analysis):
    .venv/bin/python bench/bench_tp_gemm.py summarize DIR
`run` writes one CSV per launch (the kernel CSV contract) and `launches.txt`
(each launch's argv, wall seconds and exit status); `summarize` prints the
medians, strong/weak scaling, the serial fractions and comm vs compute as
Markdown tables (analysis/rank_scaling.py), with the file each row came from
as its job ID.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CPU_RANKS = (1, 2, 4)


def _launch(ranks: int, args: list[str], out: Path, log: list[str]) -> None:
    argv = [sys.executable, "-m", "kernels.torch.spawn_ranks", str(ranks), sys.executable, "-m",
            "kernels.torch.tp_gemm", *args, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "NCCL_NVLS_ENABLE": "0"}  # never NVLink multicast
    start = time.perf_counter()
    code = subprocess.run(argv, env=env, check=False).returncode
    log.append(f"{out.name}\t{ranks} ranks\t{time.perf_counter() - start:.1f} s\texit {code}\t{' '.join(args)}")
    print(log[-1], flush=True)


def run(out: Path, gpu_n: str, gpu_d: int, cpu_threads: int) -> None:
    import torch  # the machine's own

    out.mkdir(parents=True, exist_ok=True)
    log: list[str] = [f"torch {torch.__version__}, cuda {torch.cuda.is_available()}, "
                      f"{torch.cuda.device_count()} GPU(s), {os.cpu_count()} CPUs"]
    gpus = torch.cuda.device_count()
    if gpus:
        common = ["--device", "cuda", "--dtype", "bf16", "--d", str(gpu_d), "--repeats", "10", "--warmup", "3"]
        _launch(1, [*common[:4], "--n", "256", "--d", "1024", "--repeats", "3", "--check"], out / "gpu-check.csv", log)
        for ranks in sorted({1, gpus}):
            for variant in ("strong", "weak"):
                _launch(ranks, [*common, "--n", gpu_n, "--variant", variant], out / f"gpu-{variant}-{ranks}.csv", log)
    for ranks in CPU_RANKS:
        for variant in ("strong", "weak"):
            _launch(ranks, ["--device", "cpu", "--dtype", "fp32", "--n", "256,1024", "--d", "2048", "--threads",
                            str(cpu_threads), "--repeats", "5", "--warmup", "1", "--check", "--variant", variant],
                    out / f"cpu-{variant}-{ranks}.csv", log)
    (out / "launches.txt").write_text("\n".join(log) + "\n")


def summarize(folder: Path) -> None:
    import pandas as pd

    sys.path.insert(0, str(REPO))
    from analysis import rank_scaling

    frames = []
    for path in sorted(folder.glob("*.csv")):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if rows:
            frames.append(pd.DataFrame(rows).assign(cluster="h200", partition=path.stem.split("-")[0],
                                                    job_id=path.stem))
    table = pd.concat(frames, ignore_index=True)
    for col in ("n", "d", "threads", "repeat", "ranks", "nodes"):
        table[col] = table[col].astype(int)
    for col in ("time_s", "compute_s", "comm_s", "flops", "rel_err"):
        table[col] = pd.to_numeric(table[col], errors="coerce")
    table["params"] = ""
    med = (table.groupby(["job_id", "device", "dtype", "variant", "ranks", "n", "d", "threads"])
           .agg(median_s=("time_s", "median"), compute_s=("compute_s", "median"), comm_s=("comm_s", "median"),
                flops=("flops", "first"), rel_err=("rel_err", "max"), repeats=("time_s", "size")).reset_index())
    med["tflops"] = med["flops"] / med["median_s"] / 1e12
    show = {"medians": med, "strong": rank_scaling.strong_scaling(table), "weak": rank_scaling.weak_scaling(table),
            "serial fraction": rank_scaling.serial_fractions(table), "comm vs compute": rank_scaling.comm_compute(table)}
    for name, frame in show.items():
        print(f"\n### {name}\n")
        shown = frame.drop(columns=["cluster", "impl", "kernel", "params"], errors="ignore")
        print("| " + " | ".join(shown.columns) + " |")
        print("|" + "---|" * len(shown.columns))
        for row in shown.itertuples(index=False):
            print("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--gpu-n", default="1024,4096,16384")
    r.add_argument("--gpu-d", type=int, default=8192)
    r.add_argument("--cpu-threads", type=int, default=2, help="torch threads per CPU rank (fixed over rank counts)")
    s = sub.add_parser("summarize")
    s.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.cmd == "run":
        run(args.out, args.gpu_n, args.gpu_d, args.cpu_threads)
    else:
        summarize(args.folder)


if __name__ == "__main__":
    main()
