"""Tensor-parallel GEMM with all-reduce: a multi-rank torch program of the kernel
contract (docs/design.md#kernel-program-contract,
docs/contracts.md#mpi-and-multi-rank-programs).

Y = X W as Megatron's row-parallel linear computes it: W (k x d) is split by
rows over the ranks, X (n x k) by columns; each rank multiplies its shards
(compute) and an all-reduce sums the partial Y (n x d) (communication).
`strong` keeps k = d whatever the rank count (the same GEMM split finer);
`weak` gives every rank a d x d shard (k = d * ranks: the same work per rank).

One process per rank; the launcher gives rank and world size in the
environment: RANK/WORLD_SIZE/LOCAL_RANK (torchrun), else SLURM_PROCID/
SLURM_NTASKS/SLURM_LOCALID (srun), else OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK
(Open MPI's mpirun), else PMI_RANK/PMI_SIZE (MPICH); none: one rank. The
rendezvous is MASTER_ADDR:MASTER_PORT (default: the Slurm launch node, else
127.0.0.1; port 29500 + job ID mod 1000). NCCL on cuda (one GPU per rank: the
only one the rank sees, else the local rank's), gloo on cpu. Each repeat is timed on every rank between two
barriers; rank 0 writes the slowest rank's times (total, `compute_s`,
`comm_s`), `ranks`, `nodes` (distinct host names) and `flops` (of the whole
GEMM, all ranks).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta

import torch
import torch.distributed as dist

from kernels.torch import harness

NAME = "tp_gemm"
VARIANTS = ("strong", "weak")
EXTRA_COLUMNS = ("ranks", "nodes", "compute_s", "comm_s", "flops", "msg_bytes")
# Environment variables of rank, world size and local rank, by launcher, in the order tried.
RANK_ENVIRONMENTS = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
)


def rank_world(env: Mapping[str, str]) -> tuple[int, int, int]:
    """(rank, world size, local rank) from the first launcher's variables present;
    (0, 1, 0) without any. A value that is no integer, or a rank outside the
    world, is a ValueError naming the variable."""
    for rank_var, size_var, local_var in RANK_ENVIRONMENTS:
        if rank_var in env and size_var in env:
            values = []
            for var in (rank_var, size_var, local_var):
                text = env.get(var, "0" if var == local_var else "")
                if not text.strip().isdigit():
                    raise ValueError(f"{var}={text!r} is not a non-negative integer")
                values.append(int(text))
            rank, size, local = values
            if size < 1 or rank >= size:
                raise ValueError(f"{rank_var}={rank} is outside {size_var}={size}")
            return rank, size, local
    return 0, 1, 0


def rendezvous(env: Mapping[str, str]) -> str:
    """tcp://host:port of rank 0's store (see the module docstring)."""
    host = env.get("MASTER_ADDR") or env.get("SLURM_LAUNCH_NODE_IPADDR") or "127.0.0.1"
    job = env.get("SLURM_JOB_ID", "")
    port = env.get("MASTER_PORT") or str(29500 + (int(job) % 1000 if job.isdigit() else 0))
    return f"tcp://{host}:{port}"


def gpu_of(local_rank: int, visible: int) -> int | None:
    """The GPU of a rank: the only one it sees (a launcher that binds one GPU
    per task, e.g. srun --gpus-per-task=1, sets CUDA_VISIBLE_DEVICES per rank),
    else the local rank's; None when there is none for it (never two ranks on one GPU)."""
    if visible == 1:
        return 0
    return local_rank if local_rank < visible else None


def shard_k(variant: str, d: int, ranks: int) -> int:
    """Rows of W (columns of X) on each rank."""
    if variant == "weak":
        return d
    if d % ranks:
        raise ValueError(f"--d {d} is not divisible by the {ranks} ranks (strong scaling splits d)")
    return d // ranks


def shard_inputs(seed: int, n: int, d: int, k: int, shard: int, dtype: torch.dtype,
                 device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """X shard (n x k) and W shard (k x d): standard normal, W scaled by
    1/sqrt(k * ranks) in effect (1/sqrt(d) per shard keeps Y of order 1), drawn
    from a generator of (seed, n, shard) only, so any rank can redraw any shard."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + n * 31 + shard)
    x = torch.randn(n, k, generator=gen, dtype=torch.float32)
    w = torch.randn(k, d, generator=gen, dtype=torch.float32) / d ** 0.5
    return x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)


def reference(seed: int, n: int, d: int, k: int, ranks: int) -> torch.Tensor:
    """Y in float64 on the CPU from every shard (rank 0, with --check)."""
    total = torch.zeros(n, d, dtype=torch.float64)
    for shard in range(ranks):
        x, w = shard_inputs(seed, n, d, k, shard, torch.float32, torch.device("cpu"))
        total += x.double() @ w.double()
    return total


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def call(x: torch.Tensor, w: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, float, float]:
    """One row-parallel GEMM: (Y, compute seconds, comm seconds) of this rank."""
    t0 = time.perf_counter()
    y = x @ w
    _sync(device)
    t1 = time.perf_counter()
    dist.all_reduce(y)
    _sync(device)
    return y, t1 - t0, time.perf_counter() - t1


def slowest(values: Sequence[float], device: torch.device) -> list[float]:
    """Each value's maximum over the ranks (a repeat lasts as long as its slowest rank)."""
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [float(v) for v in t.cpu()]


def count_nodes() -> int:
    """Distinct hosts of the ranks: Slurm's node name where srun started the
    rank (several slurmd on one machine are several nodes), else the host name."""
    hosts: list[str | None] = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, os.environ.get("SLURMD_NODENAME") or socket.gethostname())
    return len(set(hosts))


def measure_n(args: argparse.Namespace, n: int, rank: int, ranks: int, device: torch.device,
              base: dict[str, str]) -> list[dict[str, str]]:
    """Rows of one n (built on every rank, written by rank 0)."""
    k = shard_k(args.variant, args.d, ranks)
    x, w = shard_inputs(args.seed, n, args.d, k, rank, harness.DTYPES[args.dtype], device)
    dist.barrier()
    y, tc, tm = call(x, w, device)
    first = slowest([tc + tm], device)[0]
    rel = None
    if args.check and rank == 0:  # every rank holds the same reduced Y
        rel = harness.rel_err([(y, reference(args.seed, n, args.d, k, ranks))])
    del y
    for _ in range(args.warmup):
        call(x, w, device)
    rows = []
    elem = torch.empty((), dtype=harness.DTYPES[args.dtype]).element_size()
    for repeat in range(args.repeats):
        dist.barrier()
        t0 = time.perf_counter()
        _, tc, tm = call(x, w, device)
        dist.barrier()
        total, compute_s, comm_s = slowest([time.perf_counter() - t0, tc, tm], device)
        rows.append({**base, "n": str(n), "repeat": str(repeat), "time_s": harness.format_float(total),
                     "first_call_s": harness.format_float(first), "rel_err": harness.format_float(rel),
                     "compute_s": harness.format_float(compute_s), "comm_s": harness.format_float(comm_s),
                     "flops": str(2 * n * k * ranks * args.d), "msg_bytes": str(n * args.d * elem)})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = harness.build_parser(NAME, VARIANTS)
    args = harness.parse_args(parser, argv)
    try:
        rank, ranks, local = rank_world(os.environ)
        shard_k(args.variant, args.d, ranks)
    except ValueError as exc:
        parser.error(str(exc))
    if args.device == "cuda":
        gpu = gpu_of(local, torch.cuda.device_count())
        if gpu is None:
            parser.error(f"local rank {local} has no GPU ({torch.cuda.device_count()} visible): one rank per GPU")
        torch.cuda.set_device(gpu)
    device = harness.setup_runtime(args)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=rendezvous(os.environ), rank=rank, world_size=ranks,
                            timeout=timedelta(minutes=5))
    try:
        base = {**harness.environment_columns(device, args), "kernel": NAME, "variant": args.variant,
                "backend": backend, "ranks": str(ranks), "nodes": str(count_nodes())}
        out = harness.CsvAppender(args.out, (*harness.CSV_COLUMNS, *EXTRA_COLUMNS)) if rank == 0 else None
        for n in args.n:
            rows = measure_n(args, n, rank, ranks, device, base)
            if out is not None:
                out.append(rows)
        if out is not None:
            out.finish()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
