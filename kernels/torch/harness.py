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
- W untimed warm-ups, then R timed repeats, each one row; on CUDA a repeat
  times a back-to-back batch of calls when one call is under ~100 us
  (kernels/torch/timing.py, batching.py; `calls` says how many, time_s is
  per call);
- the output is poisoned (NaN) before every call where the kernel writes into a
  buffer we own, and `rel_err` turns NaN if any element stayed unwritten.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from kernels.torch import batching, perf, profile
from kernels.torch.argtypes import nonnegative_float, nonnegative_int, positive_int, positive_int_list

# Re-exported: the kernel programs use them as harness.* (e.g. harness.rel_err).
from kernels.torch.checks import nan_poison, rel_err, to64  # noqa: F401
from kernels.torch.csvout import (  # noqa: F401
    CSV_COLUMNS,
    CsvAppender,
    environment_columns,
    format_float,
    write_csv_atomic,
)
from kernels.torch.gpu_state import COLUMNS as GPU_STATE_COLUMNS
from kernels.torch.gpu_state import GpuState
from kernels.torch.memory import available_bytes
from kernels.torch.timing import (  # noqa: F401  (re-exported: harness.measure etc.)
    FLUSH_BYTES_MIN,
    SPIN_CYCLES,
    Flusher,
    Measurement,
    measure,
    sync,
    time_call,
    time_first_call,
)

DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
}
# Columns a CUDA run adds after the kernel's own (docs/contracts.md): the calls
# each repeat timed together (time_s is per call), the GPU's clocks and
# throttle reasons at this n (kernels/torch/gpu_state.py).
CUDA_COLUMNS: tuple[str, ...] = ("calls", *GPU_STATE_COLUMNS)
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
    parser.add_argument("--batch-target-us", type=nonnegative_float, default=batching.TARGET_S * 1e6,
                        help="CUDA: calls under 100 us are timed in back-to-back batches of about this "
                             "many us (0: one call per repeat)")
    parser.add_argument("--out", required=True, help="CSV file to write (atomically)")
    profile.add_args(parser)
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


# --------------------------------------------------------------------------- profiling


def measure_profiled(case: Case, warmup: int, device: torch.device) -> None:
    """The profiled child's one call (profile.py): first call and warm-ups
    unprofiled, then exactly one call between cudaProfilerStart and Stop
    (ncu), or between perf's `enable` and `disable` (perf.py)."""
    control = perf.Control()
    case.poison()
    case.run()
    for _ in range(warmup):
        case.poison()
        case.run()
    case.poison()
    sync(device)
    if control.active:
        control.send("enable")
    elif device.type == "cuda":
        torch.cuda.profiler.start()
    case.run()
    sync(device)
    if control.active:
        control.send("disable")
    elif device.type == "cuda":
        torch.cuda.profiler.stop()


# --------------------------------------------------------------------------- main


def _case_context(args: argparse.Namespace, device: torch.device, n: int) -> CaseContext:
    return CaseContext(n=n, d=args.d, variant=args.variant, device=device,
                       dtype=DTYPES[args.dtype], args=args, seed=args.seed)


def run_one_n(spec: KernelSpec, args: argparse.Namespace, device: torch.device, n: int,
              flush: Flusher | None, gpu: GpuState | None = None) -> list[dict[str, str]]:
    """All rows of one n; raises KernelFailure if it does not fit. On CUDA
    the rows also carry `calls` (per repeat) and the GPU's clocks and
    throttle reasons (`gpu`, sampled around this n's calls)."""
    guard_memory(spec, args, n, device)
    try:
        case = spec.build(_case_context(args, device, n))
        if gpu is not None:
            gpu.begin()
        m = measure(case, args.repeats, args.warmup, device, flush, args.batch_target_us * 1e-6)
        state = gpu.sample() if gpu is not None else {}
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
    if device.type == "cuda":
        base.update(state, calls=str(m.calls))
    return [dict(base, repeat=str(i), time_s=format_float(t)) for i, t in enumerate(m.times_s)]


def run_profiled_child(spec: KernelSpec, args: argparse.Namespace, device: torch.device) -> int:
    """`--profiled-child` (started by profile.profile_n under ncu): one
    profiled call per n, no CSV; exit 1 with one line if it cannot run."""
    try:
        for n in args.n:
            guard_memory(spec, args, n, device)
            measure_profiled(spec.build(_case_context(args, device, n)), args.warmup, device)
    except (KernelFailure, RuntimeError, MemoryError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"error: profiled call failed: {first}", file=sys.stderr)
        return 1
    return 0


def main(spec: KernelSpec, argv: Sequence[str] | None = None) -> int:
    """The program: parse, sweep n, write the CSV. Returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(spec.name, spec.variants)
    if spec.add_args is not None:
        spec.add_args(parser)
    args = parse_args(parser, argv)
    if spec.validate is not None:
        spec.validate(args, parser)
    if args.profile == "ncu" and args.device != "cuda":
        parser.error("--profile ncu reads GPU counters: it needs --device cuda")
    if args.profile == "perf" and args.device != "cpu":
        parser.error("--profile perf reads CPU counters: it needs --device cpu")
    device = setup_runtime(args)
    if args.profiled_child:
        return run_profiled_child(spec, args, device)
    flush = Flusher(device) if args.l2_flush else None
    counters: list[dict[str, str]] = []
    columns = CSV_COLUMNS + spec.extra_columns + (CUDA_COLUMNS if device.type == "cuda" else ())
    gpu = GpuState.shared(device) if device.type == "cuda" else None
    out = CsvAppender(args.out, columns)  # each n's rows on disk as soon as measured
    identity = {"kernel": spec.name, "impl": "torch", "variant": args.variant,
                "dtype": args.dtype, "d": str(args.d)}
    code = 0
    try:
        for n in args.n:
            out.append(run_one_n(spec, args, device, n, flush, gpu))
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if args.profile != "none":  # after the timed repeats, in its own process
                counters.extend(profile.profile_n(f"kernels.torch.{spec.name}", argv, args, n, identity))
    except KernelFailure as exc:
        # Keep the sizes that did finish; the exit code marks the run failed.
        print(f"error: {exc}", file=sys.stderr)
        code = 1
    out.finish()
    if args.profile != "none":
        profile.write(args.out, counters)
    return code
