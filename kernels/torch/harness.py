"""Shared harness of the torch kernel programs (docs/contracts.md, "Kernel program contract").

Every kernel program, whatever its language, must parse the same arguments,
time the same way and write the same CSV, so that the submitter and the ledger
treat all implementations alike. A torch kernel module therefore only describes
itself with a `KernelSpec` (name, variants, a peak-memory estimate, and `build`,
which makes the inputs for one n and returns a `Case`); `main(spec)` does the
rest. Other torch kernels (e.g. `gemm_shapes`) may use the pieces on their own:
`build_parser`, `parse_args`, `setup_runtime`, `measure`, `write_csv_atomic`.

Measurement rules the harness enforces (docs/design.md#kernel-program-contract):
- one process runs the whole n-sweep; inputs are fresh, seeded, standard normal
  (never zeros) for every n;
- the first call is timed apart (`first_call_s`: lazy init, JIT, torch.compile);
- W untimed warm-ups, then R timed repeats, each one row;
- the output is poisoned (NaN) before every call where the kernel writes into a
  buffer we own, and `rel_err` turns NaN if any element stayed unwritten.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from kernels.torch.csv_out import CsvAppender, write_csv_atomic  # noqa: F401  (re-exported for gemm_shapes)

CSV_COLUMNS: tuple[str, ...] = (
    "kernel", "impl", "variant", "device", "dtype", "n", "d", "threads", "repeat",
    "time_s", "first_call_s", "rel_err", "gpu_model", "omp_proc_bind", "omp_places",
    "l2_flush", "backend",
)
DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
}
# A buffer written between repeats must exceed the last-level cache; 256 MiB is
# over 2x the L2 of an H200 (60 MB) and over the L3 of common CPU sockets.
FLUSH_BYTES_MIN = 256 * 2**20
# Cycles of GPU spin queued before each timed call: the host then enqueues the
# call while the GPU is still busy, so the events time the device work and not
# the Python launch latency (what triton.testing.do_bench achieves with its
# cache clear). About 0.1 ms at H200 boost clocks; never part of time_s.
SPIN_CYCLES = 200_000
# Fraction of the available memory a run may plan to use before we refuse it.
MEMORY_HEADROOM = 0.9

Outputs = Sequence[torch.Tensor]


class KernelFailure(Exception):
    """An operational failure for one n (e.g. it does not fit): exit 1."""


@dataclass
class Case:
    """One kernel call on fixed inputs for one n.

    `run` is the timed call and returns the outputs; `poison` (untimed) fills
    the buffers `run` writes with NaN; `check` maps the outputs of the last
    timed call to rel_err against the float64 reference; `backend` is recorded.
    """

    run: Callable[[], Outputs]
    check: Callable[[Outputs], float]
    poison: Callable[[], None] = lambda: None
    backend: str = ""


@dataclass(frozen=True)
class CaseContext:
    """What `KernelSpec.build` needs to make one n's inputs."""

    n: int
    d: int
    variant: str
    device: torch.device
    dtype: torch.dtype
    args: argparse.Namespace
    seed: int

    def randn(self, *shape: int, scale: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
        """Standard normal values (times `scale`) drawn on the CPU, so that the
        same seed gives the same inputs on every device, then cast and moved."""
        gen = generator if generator is not None else self.generator()
        x = torch.randn(*shape, generator=gen, dtype=torch.float32)
        if scale != 1.0:
            x.mul_(scale)
        return x.to(device=self.device, dtype=self.dtype)

    def generator(self) -> torch.Generator:
        """A CPU generator seeded from (seed, n): each n gets fresh inputs."""
        return torch.Generator().manual_seed(self.seed * 1_000_003 + self.n)

    def empty(self, *shape: int) -> torch.Tensor:
        return torch.empty(*shape, device=self.device, dtype=self.dtype)


@dataclass(frozen=True)
class KernelSpec:
    """A torch kernel program: its family name, variants and how to build a case.

    `peak_bytes(n, d, variant, elem_size, args)` estimates the device memory one
    n needs, so that a naive variant at an n whose n x n buffers do not fit
    fails with a clear message instead of swapping or being OOM-killed.
    `add_args` adds kernel-specific options (e.g. --ff); `validate` may reject
    combinations through `parser.error` (exit 2).
    """

    name: str
    variants: tuple[str, ...]
    build: Callable[[CaseContext], Case]
    peak_bytes: Callable[[int, int, str, int, argparse.Namespace], int]
    add_args: Callable[[argparse.ArgumentParser], None] | None = None
    validate: Callable[[argparse.Namespace, argparse.ArgumentParser], None] | None = None
    extra_columns: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------- arguments


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0 (warm-ups may be zero)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def positive_int_list(text: str) -> list[int]:
    """argparse type: comma-separated positive integers, e.g. '64,128,256'."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(p == "" for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of sizes")
    return [positive_int(p) for p in parts]


def build_parser(name: str, variants: Sequence[str]) -> argparse.ArgumentParser:
    """The contract's arguments; kernel-specific extras are added by the caller."""
    parser = argparse.ArgumentParser(
        prog=f"python -m kernels.torch.{name}",
        description=f"torch kernel program '{name}' (docs/contracts.md).",
    )
    parser.add_argument("--n", type=positive_int_list, required=True, help="sizes, e.g. 64,128,256")
    parser.add_argument("--d", type=positive_int, default=64, help="head/model dimension")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed repeats per n")
    parser.add_argument("--warmup", type=nonnegative_int, default=1, help="untimed calls per n")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="fp32")
    parser.add_argument("--variant", choices=tuple(variants), default=variants[0])
    parser.add_argument("--check", action="store_true", help="rel_err vs a float64 reference")
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument("--l2-flush", action="store_true", help="write a big buffer before each repeat")
    parser.add_argument("--out", required=True, help="CSV file to write (atomically)")
    return parser


def parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> argparse.Namespace:
    """Parse and validate what argparse alone cannot; errors exit 2 with usage."""
    args = parser.parse_args(argv)
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        parser.error(f"--out: directory {out_dir} does not exist")
    if args.device == "cuda" and not torch.cuda.is_available():
        # One clear line, no usage dump: the arguments are fine, the node is not.
        print(
            f"error: --device cuda but CUDA is not available to torch {torch.__version__} "
            "on this node; use --device cpu or run on a GPU node",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return args


def setup_runtime(args: argparse.Namespace) -> torch.device:
    """Apply --threads and return the device. Deterministic seeds are per n."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.device == "cuda":
        torch.cuda.init()
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


# --------------------------------------------------------------------------- memory


def available_bytes(device: torch.device) -> int:
    """Memory a new allocation can get: free device memory plus what torch's
    caching allocator holds unused, or on the CPU MemAvailable capped by the
    cgroup limit (Slurm jobs run in one)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
    avail = _meminfo_available()
    cgroup = _cgroup_headroom()
    return min(avail, cgroup) if cgroup is not None else avail


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _cgroup_headroom() -> int | None:
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as fh:
            current = int(fh.read().strip())
        return max(0, int(limit) - current)
    except (OSError, ValueError):
        return None


def guard_memory(spec: KernelSpec, args: argparse.Namespace, n: int, device: torch.device) -> None:
    """Refuse an n that cannot fit, before allocating anything for it."""
    elem = torch.empty((), dtype=DTYPES[args.dtype]).element_size()
    need = spec.peak_bytes(n, args.d, args.variant, elem, args)
    have = available_bytes(device)
    if need > MEMORY_HEADROOM * have:
        raise KernelFailure(
            f"{spec.name}/{args.variant} at n={n}, d={args.d}, {args.dtype} needs about "
            f"{need / 2**30:.1f} GiB but only {have / 2**30:.1f} GiB is available on "
            f"{device.type}; use a smaller n or a memory-optimal variant"
        )


# --------------------------------------------------------------------------- timing


class Flusher:
    """Writes a buffer larger than the last-level cache between repeats."""

    def __init__(self, device: torch.device) -> None:
        size = FLUSH_BYTES_MIN
        if device.type == "cuda":
            l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
            size = max(size, 2 * l2)
        self.buffer = torch.empty(size // 4, dtype=torch.float32, device=device)

    def __call__(self) -> None:
        self.buffer.fill_(1.0)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_first_call(fn: Callable[[], Outputs], device: torch.device) -> tuple[float, Outputs]:
    """Wall-clock seconds of one call, host work (compilation) included."""
    _sync(device)
    t0 = time.perf_counter_ns()
    out = fn()
    _sync(device)
    return (time.perf_counter_ns() - t0) * 1e-9, out


def time_call(fn: Callable[[], Outputs], device: torch.device) -> tuple[float, Outputs]:
    """Seconds of one steady-state call: CUDA event pair on the GPU (after a
    synchronize and a short spin, see SPIN_CYCLES), perf_counter_ns on the CPU."""
    if device.type != "cuda":
        t0 = time.perf_counter_ns()
        out = fn()
        return (time.perf_counter_ns() - t0) * 1e-9, out
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(device)
    spin = getattr(torch.cuda, "_sleep", None)  # private API; absent => no spin
    if spin is not None:
        spin(SPIN_CYCLES)
    start.record()
    out = fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3, out


@dataclass
class Measurement:
    """Timings of one n: the first call, and each timed repeat."""

    first_call_s: float
    times_s: list[float]
    outputs: Outputs


def measure(case: Case, repeats: int, warmup: int, device: torch.device,
            flush: Flusher | None = None) -> Measurement:
    """First call, W warm-ups, R timed repeats; poison before every call."""
    case.poison()
    first, out = time_first_call(case.run, device)
    for _ in range(warmup):
        case.poison()
        out = case.run()
    times: list[float] = []
    for _ in range(repeats):
        case.poison()
        if flush is not None:
            flush()
        t, out = time_call(case.run, device)
        times.append(t)
    _sync(device)
    return Measurement(first, times, out)


# --------------------------------------------------------------------------- checks


def nan_poison(*buffers: torch.Tensor) -> Callable[[], None]:
    """A `Case.poison` that fills the given output buffers with NaN."""

    def poison() -> None:
        for buf in buffers:
            buf.fill_(math.nan)

    return poison


def rel_err(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """max over pairs of ||out - ref||_2 / ||ref||_2, in float64 on the CPU.

    Taking the max (not one norm over all outputs) keeps a small gradient from
    hiding behind a large one. NaN or inf anywhere in an output gives NaN."""
    worst = 0.0
    for out, ref in pairs:
        o = out.detach().to("cpu", torch.float64).reshape(ref.shape)
        r = ref.to(torch.float64)
        if not bool(torch.isfinite(o).all()):
            return math.nan
        denom = float(torch.linalg.vector_norm(r))
        err = float(torch.linalg.vector_norm(o - r)) / denom if denom > 0 else float(
            torch.linalg.vector_norm(o - r)
        )
        worst = max(worst, err)
    return worst


def to64(x: torch.Tensor) -> torch.Tensor:
    """The exact inputs the kernel saw (after its dtype rounding), as float64 on CPU."""
    return x.detach().to("cpu", torch.float64)


# --------------------------------------------------------------------------- CSV


def environment_columns(device: torch.device, args: argparse.Namespace) -> dict[str, str]:
    """Columns that describe where the run happened, not what it computed."""
    return {
        "impl": "torch",
        "device": device.type,
        "dtype": args.dtype,
        "d": str(args.d),
        "threads": str(torch.get_num_threads()),
        "gpu_model": torch.cuda.get_device_name(device) if device.type == "cuda" else "",
        "omp_proc_bind": os.environ.get("OMP_PROC_BIND", ""),
        "omp_places": os.environ.get("OMP_PLACES", ""),
        "l2_flush": "1" if args.l2_flush else "0",
    }


def format_float(x: float | None) -> str:
    """Empty for None; 'nan' stays 'nan' (the ledger reads it as a failed check)."""
    if x is None:
        return ""
    return "nan" if math.isnan(x) else f"{x:.9g}"


# --------------------------------------------------------------------------- main


def run_one_n(spec: KernelSpec, args: argparse.Namespace, device: torch.device, n: int,
              flush: Flusher | None) -> list[dict[str, str]]:
    """All rows of one n; raises KernelFailure if it does not fit."""
    guard_memory(spec, args, n, device)
    ctx = CaseContext(n=n, d=args.d, variant=args.variant, device=device,
                      dtype=DTYPES[args.dtype], args=args, seed=args.seed)
    try:
        case = spec.build(ctx)
        m = measure(case, args.repeats, args.warmup, device, flush)
        err = case.check(m.outputs) if args.check else None
    except (torch.OutOfMemoryError, MemoryError) as exc:
        raise KernelFailure(
            f"{spec.name}/{args.variant} at n={n}, d={args.d}, {args.dtype} ran out of "
            f"{device.type} memory ({type(exc).__name__}); use a smaller n"
        ) from None
    except RuntimeError as exc:
        # e.g. a pinned SDPA backend that cannot run these inputs: one line, exit 1
        first = (str(exc).strip().splitlines() or [""])[0]
        raise KernelFailure(f"{spec.name}/{args.variant} at n={n} failed: {first}") from None
    base = environment_columns(device, args)
    base.update(kernel=spec.name, variant=args.variant, n=str(n), backend=case.backend,
                first_call_s=format_float(m.first_call_s), rel_err=format_float(err))
    return [dict(base, repeat=str(i), time_s=format_float(t)) for i, t in enumerate(m.times_s)]


def main(spec: KernelSpec, argv: Sequence[str] | None = None) -> int:
    """The program: parse, sweep n, write the CSV. Returns the exit code."""
    parser = build_parser(spec.name, spec.variants)
    if spec.add_args is not None:
        spec.add_args(parser)
    args = parse_args(parser, argv)
    if spec.validate is not None:
        spec.validate(args, parser)
    device = setup_runtime(args)
    flush = Flusher(device) if args.l2_flush else None
    columns = CSV_COLUMNS + spec.extra_columns
    out = CsvAppender(args.out, columns)
    try:
        for n in args.n:
            out.append(run_one_n(spec, args, device, n, flush))
            if device.type == "cuda":
                torch.cuda.empty_cache()
    except KernelFailure as exc:
        # Keep the sizes that did finish; the exit code marks the run failed.
        out.finish()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out.finish()
    return 0
