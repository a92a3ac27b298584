"""The tool-driven benchmark driver: any program, declared in YAML alone.

A kernel YAML with `driven_by: tool` names a program that follows no
contract (docs/byob.md): its `argv` is a template with placeholders for the
swept parameters, and its figures of merit are read from its output by
pattern. The planner then starts this module in the program's place,
`python -m campaign.job.fom SPEC_JSON --n ... --out F` (the kernel-program
contract of docs/design.md), so the job runner, the preflight, sync, reruns
and the analysis treat it like every contract program. Here it runs the
program once per n and warm-up/repeat, times each run, reads the figures,
checks the sanity patterns and writes the contract CSV: one row per n,
repeat and figure (columns `metric, value, unit, higher_is_better`,
docs/contracts.md).

Why the verdict files: a figure whose pattern matched nothing leaves no
CSV but `F.lost` (the pattern and the output's last lines), so the job is
LOST_OUTPUT with that reason; a sanity pattern that fails leaves `F.check`
(the line quoted), so the job is CHECK_FAILED with its rows kept
(campaign.results.reader reads both). A program that exits non-zero makes
this module exit with its code, 128 + N for signal N (FAILED, its stderr tail in ours).

Each repeat is one invocation, unless the declaration says `repeat_by:
program` (the program repeats itself: one invocation per n, `{repeats}` and
`{warmup}` in its arguments, each figure's last `repeats` matches one per
repeat). A launched benchmark (an MPI program) gets the launcher through
`--launch` and starts each invocation through it (campaign.job.fom_launch).
The figures and sanity patterns are read by campaign.job.fom_read.

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaign.job import cost
from campaign.job.error_line import exit_words
from campaign.job.fom_launch import OPTION, Launch
from campaign.job.fom_read import (
    Lost,
    Output,
    figure_values,
    read_capped,
    sanity_problem,
    source_file,
    source_text,
)
from campaign.job.problem_size import DRIVER, NO_SIZE, reads
from campaign.job.procs import (
    SETTLE_S,
    answer_for_descendants,
    descendants,
    stop_new_descendants,
    wait_commands_end,
)
from campaign.job.rank import rank_output
from campaign.job.start_failure import NOT_STARTED, cannot_start, runtime_missing
from campaign.job.template import program_argv, render, shape_values, write_inputs
from resultschema.columns import TOOL_COLUMNS

MODULE = DRIVER  # what the planner puts in a tool-driven program's place (this module)
# What the driver's measurement is, in a tool-driven run's identity (campaign.planning.identity):
# raised when how it starts, times or reads a program changes, so that runs measured the old way are
# never pooled with new ones; an edit of campaign that changes neither keeps the runs measured before.
PROTOCOL = 1
# The run's shape (campaign.planning.run_spec.RunSpec.command gives them to this driver only)
SHAPE_OPTIONS = ("nodes", "ranks-per-node", "gpus")

LOST_SUFFIX = ".lost"
CHECK_SUFFIX = ".check"
# Units a lower-is-better figure may be in to be the row's time_s (seconds per unit).
# per second, a divisor: 9 ms / 1e3 is the double nearest 0.009, where 9 * 1e-3 is 0.009000000000000001
TIME_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
COLUMNS = TOOL_COLUMNS  # the contract CSV's columns this driver writes (resultschema.columns)
SET_TIME = "set_time"  # the extra column of a figure declared `duration`: the set time, which no analysis reads
# Contract options that are not program parameters of their own.
_CONTRACT = {"n", "d", "threads", "repeats", "warmup", "device", "dtype", "variant", "out", OPTION[2:], *SHAPE_OPTIONS}


def parse_args(argv: Sequence[str]) -> tuple[dict[str, Any], dict[str, str], bool]:
    """The contract options (`--n 1,2 ... --out F`), the extra `--key value`
    parameters, and `--check`."""
    opts: dict[str, str] = {}
    check = False
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--check":
            check = True
            i += 1
            continue
        if not word.startswith("--") or i + 1 >= len(argv):
            raise SystemExit(f"campaign.job.fom: unexpected argument {word!r}")
        opts[word[2:]] = argv[i + 1]
        i += 2
    contract = {k: opts.pop(k) for k in list(opts) if k in _CONTRACT}
    return contract, opts, check


def _run_once(
    spec: dict[str, Any], values: dict[str, str], cwd: Path, stem: str, launch: Launch | None
) -> tuple[int, Output, float]:
    """One invocation (through the launcher when launched), its input files
    written first, its output into `stem`.out/.err in the job folder (kept
    for `show`), each rank's beside. The files the figures and rules read are
    not there when it starts (each invocation's is set aside once read,
    `_set_aside`; any other is removed): a file this invocation did not write
    (a rank that wrote it only in its warm-up) is then absent, never an earlier
    invocation's value read again as this one's."""
    _clear_sources(spec, values, cwd, launch.ranks if launch is not None else 1)  # what no invocation set aside
    write_inputs(spec.get("inputs", {}), values, cwd)
    program = program_argv(spec, values)
    # `wrap`: the container the tool starts in (campaign.planning.run_env), its words taken as they are
    # but the one at `wrap_cwd`, the folder the tool starts in: this one; the launcher, when launched,
    # goes outside it (one container per rank)
    wrap = list(spec.get("wrap", ()))
    if "wrap_cwd" in spec:
        wrap[spec["wrap_cwd"]] = str(cwd)
    argv = [*wrap, *program]
    env = {**os.environ, **{k: render(v, values) for k, v in spec.get("env", {}).items()}}
    out_path, err_path = cwd / f"{stem}.out", cwd / f"{stem}.err"
    if launch is not None:
        launch.clear()
        argv = launch.command(cwd / stem, argv)
    before = descendants(os.getpid())  # none where this module is the process (main): a caller's own stay
    t0 = time.perf_counter()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            code = subprocess.run(argv, stdout=out, stderr=err, env=env, cwd=cwd, check=False).returncode
        except OSError as exc:
            return NOT_STARTED, Output("", cannot_start(argv, exc, env)), 0.0
    elapsed = time.perf_counter() - t0
    if launch is not None and launch.daemons:  # the launcher's own daemons, ending with its step: not left
        wait_commands_end(before, launch.daemons, SETTLE_S)
    # what it left running would run on beside the next invocations (timed with them) and to the job's end:
    # also what left its process group (setsid) or its parent (a double fork), handed to this subreaper
    if left := stop_new_descendants(before):
        print(f"campaign.job.fom: {program_name(spec)} left process(es) {left} running: stopped", file=sys.stderr)
    # each stream as Output.where names it, and what it holds
    read = {name: read_capped(path) for name, path in (("stdout", out_path), ("stderr", err_path))}
    for r in range(launch.ranks if launch is not None else 0):
        read |= {f"rank {r}'s {s}": read_capped(rank_output(str(cwd / stem), r, s[3:])) for s in ("stdout", "stderr")}
    ranks = tuple((read[f"rank {r}'s stdout"][0], read[f"rank {r}'s stderr"][0]) for r in range(len(read) // 2 - 1))
    cut = tuple((name, size) for name, (_, size) in read.items() if size)
    ends, unfinished = launch.ends() if launch is not None else ((), [])
    stderr = read["stderr"][0]
    if launch is not None and code == 0 and unfinished:  # the launcher returned 0, but not every rank ran to its end
        stderr, code = f"{stderr}campaign: {launch.missing(unfinished)}\n", 1
    return code, Output(read["stdout"][0], stderr, ranks, ends, cut), elapsed


def _source_files(spec: dict[str, Any], values: dict[str, str], cwd: Path, ranks: int) -> list[Path]:
    """The files the figures and sanity rules read (`file:` sources), each rank's, for these values."""
    sources = {f.get("source", "stdout") for f in spec["figures"]} | {
        s.get("source", "stdout") for s in spec.get("sanity", [])
    }
    return [p for s in sources for r in range(ranks) if (p := source_file(s, values, cwd, r)) is not None]


def _clear_sources(spec: dict[str, Any], values: dict[str, str], cwd: Path, ranks: int) -> None:
    """Remove the `file:` sources before an invocation (what an earlier one left)."""
    for path in _source_files(spec, values, cwd, ranks):
        if not path.is_dir():  # a folder of that name is no figure's file: read, it is named as one
            path.unlink(missing_ok=True)


def _set_aside(spec: dict[str, Any], values: dict[str, str], cwd: Path, ranks: int, stem: str) -> None:
    """Keep an invocation's `file:` sources, once read, as `<name>.<stem>` beside its
    `<stem>.out` (a program that appends to its file, hpcc's hpccoutf.txt, leaves one per
    invocation), so that the next invocation starts without them."""
    for path in _source_files(spec, values, cwd, ranks):
        if path.is_file():
            os.replace(path, path.with_name(f"{path.name}.{stem}"))


def program_name(spec: dict[str, Any]) -> str:
    """How an error names the program: its argv[0], or its script's kernel."""
    return f"the script of {spec['kernel']}" if spec.get("script") else str(spec["argv"][0])


def time_of(found: list[tuple[dict[str, Any], float]], elapsed: float) -> float:
    """The run's time_s, shared by all its figures: the first lower-is-better
    figure in a time unit (the program's own timing, without process start),
    else the wall time of the whole invocation."""
    for fig, value in found:
        scale = TIME_UNITS.get(str(fig.get("unit", "")))
        if scale is not None and not fig.get("higher_is_better", False) and value > 0:
            return value / scale
    return elapsed if elapsed > 0 else 1e-9


def _cost(spec: dict[str, Any], values: dict[str, str]) -> dict[str, float]:
    """The cost model at this point; a count that cannot be worked out is left
    empty with a warning, never a lost run (submit refuses a run whose planned
    values give none: campaign.planning.cost_check)."""
    out, problems = cost.counts(spec, values)
    for problem in problems:
        print(f"campaign.job.fom: {problem.key} not evaluated: {problem.reason}", file=sys.stderr)
    return out


def _verdict(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)


def _rows(
    spec: dict[str, Any],
    base: dict[str, str],
    n: int,
    r: int,
    found: list[tuple[dict[str, Any], float]],
    elapsed: float,
    values: dict[str, str],
) -> list[dict[str, Any]]:
    """The CSV rows of one repeat: one per figure, sharing time_s and the cost model."""
    counts = _cost(spec, values)
    seconds = repr(time_of(found, elapsed))
    fixed = {"fixed_duration": 1} if spec.get("fixed_duration") else {}
    return [
        fixed
        | ({SET_TIME: 1} if fig.get("duration") else {})
        | {
            "kernel": spec["kernel"],
            "impl": spec["impl"],
            "variant": base["variant"],
            "device": base["device"],
            "dtype": base["dtype"],
            "n": n,
            "d": base["d"],
            "threads": base["threads"],
            "repeat": r,
            "time_s": seconds,
            "metric": fig["name"],
            "value": repr(value),
            "unit": fig.get("unit", ""),
            "higher_is_better": int(bool(fig.get("higher_is_better", False))),
            "flops": repr(counts["flops"]) if "flops" in counts else "",
            "bytes": repr(counts["bytes"]) if "bytes" in counts else "",
        }
        for fig, value in found
    ]


def point_values(contract: dict[str, Any], params: dict[str, str]) -> dict[str, str]:
    """The placeholders every invocation of the run shares, its repeat counts included ({repeats},
    {warmup}: what a program that repeats itself reads); n and repeat come per invocation."""
    shape = shape_values(
        int(contract.get("nodes", 1)), int(contract.get("ranks-per-node", 1)), int(contract.get("gpus", 0))
    )
    base = {
        "d": contract.get("d", ""),
        "threads": contract.get("threads", "1"),
        "dtype": contract.get("dtype", ""),
        "variant": contract.get("variant", ""),
        "device": contract.get("device", "cpu"),
        **shape,
        **params,
        "repeats": str(int(contract.get("repeats", 1))),
        "warmup": str(int(contract.get("warmup", 0))),
    }
    base.update({k.replace("-", "_"): v for k, v in params.items()})
    return base


def sized(spec: dict[str, Any], ns: Sequence[int]) -> bool:
    """Whether a message names the invocation's n: not for a program without a problem size
    (campaign.job.problem_size: it reads no {n}, and the n=1 it runs at is no size of its)."""
    return tuple(ns) != NO_SIZE or "n" in reads(spec)


def preview(argv: Sequence[str]) -> list[str]:
    """What the first invocation of a run of this driver gets (first n, repeat
    0): the program's argv and each input file, as rendered; [] for a command
    that is not this driver (the dry run shows it under the run's command)."""
    at = next((i for i in range(len(argv) - 1) if argv[i] == "-m" and argv[i + 1] == MODULE), None)
    if at is None or at + 2 >= len(argv):
        return []
    spec = json.loads(argv[at + 2])
    contract, params, _check = parse_args(argv[at + 3 :])
    values = {**point_values(contract, params), "n": contract["n"].split(",")[0], "repeat": "0"}
    program = program_argv(spec, values)
    point = f"n={values['n']}, " if sized(spec, [int(v) for v in contract["n"].split(",")]) else ""
    lines = [f"argv at {point}repeat 0: {shlex.join(program)}"]
    for name, text in sorted(spec.get("inputs", {}).items()):
        lines += [f"input file {name}:", *(f"  {line}" for line in render(text, values).splitlines())]
    return lines


def measure(spec: dict[str, Any], contract: dict[str, Any], params: dict[str, str], cwd: Path) -> int:
    """Every n x (warm-ups + repeats); the exit code. As the contract asks, the
    CSV is `F.tmp` while it runs, each n's rows appended and flushed when that n
    is done (a job stopped at its walltime keeps the n it finished), renamed to
    `F` at the end; a lost figure leaves `F.lost` instead, a failed sanity
    pattern `F.check` beside it."""
    out = Path(contract["out"])
    ns = [int(v) for v in contract["n"].split(",")]
    repeats, warmup = int(contract.get("repeats", 1)), int(contract.get("warmup", 0))
    launch = Launch.from_json(contract[OPTION[2:]]) if contract.get(OPTION[2:]) else None
    ranks_of = launch.ranks if launch is not None else 1
    rank = int(spec.get("result_rank", 0))
    by_program = spec.get("repeat_by") == "program"
    base = point_values(contract, params)
    named = sized(spec, ns)
    sources = {f.get("source", "stdout") for f in spec["figures"]} | {
        s.get("source", "stdout") for s in spec.get("sanity", [])
    }
    problems: list[str] = []
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        # a fixed-duration program's rows say so (an extra column): the analysis never judges its time
        columns = (
            COLUMNS
            + (("fixed_duration",) if spec.get("fixed_duration") else ())
            + ((SET_TIME,) if any(f.get("duration") for f in spec["figures"]) else ())
        )
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for n in ns:
            rows: list[dict[str, Any]] = []
            # (first repeat, repeats) of each invocation: one per warm-up and repeat, or one per n
            calls = [(0, repeats)] if by_program else [(r, 1) for r in range(-warmup, repeats)]
            for r, count in calls:
                values = {**base, "n": str(n), "repeat": str(max(r, 0))}
                point = f"n={n} repeat={r}" if named else f"repeat={r}"
                stem = f"fom-n{n}" if by_program else f"fom-n{n}-{'w' if r < 0 else 'r'}{abs(r)}"
                code, output, elapsed = _run_once(spec, values, cwd, stem, launch)
                if code != 0:
                    code = output.exit_code(code)
                    at = f" at n={n}" if named else ""
                    said = exit_words(code).removeprefix("exit ")  # a signal by its name: "-11, SIGSEGV"
                    # the tool's container runtime missing on this node is the subject, not the tool
                    why = output.stderr if runtime_missing(output.stderr, os.environ) else None
                    print(
                        f"campaign.job.fom: {why or f'{program_name(spec)} exited with {said}{at}: {output.failure()}'}",
                        file=sys.stderr,
                    )
                    # killed by signal N (-N here): 128 + N, as a shell says it (sys.exit(-11) would be 245)
                    return 128 - code if code < 0 else code
                if r < 0:
                    _set_aside(spec, values, cwd, ranks_of, stem)
                    continue
                texts = {s: source_text(s, output, values, cwd, rank) for s in sources}
                try:
                    most = repeats + warmup if by_program else None  # what it printed, warm-ups included
                    found = [
                        (fig, figure_values(fig, output, values, cwd, count, rank, most)) for fig in spec["figures"]
                    ]
                except Lost as exc:
                    _verdict(out.with_name(out.name + LOST_SUFFIX), f"{point}: {exc}")
                    print(f"campaign.job.fom: {exc}", file=sys.stderr)
                    return 0
                _set_aside(spec, values, cwd, ranks_of, stem)
                problems += [
                    f"{point}: {p}"
                    for rule in spec.get("sanity", [])
                    if (p := sanity_problem(rule, texts[rule.get("source", "stdout")]))
                ]
                for i in range(count):  # the program's own repeats share the invocation's wall time
                    rows += _rows(
                        spec,
                        base,
                        n,
                        r + i,
                        [(fig, v[i]) for fig, v in found],
                        elapsed / count,
                        {**values, "repeat": str(r + i)},
                    )
            writer.writerows(rows)
            f.flush()
    if problems:
        _verdict(out.with_name(out.name + CHECK_SUFFIX), problems[0])
    os.replace(tmp, out)
    return 0


def main(argv: Sequence[str]) -> int:
    if not argv:
        raise SystemExit("usage: python -m campaign.job.fom SPEC_JSON --n N[,N...] ... --out FILE")
    spec = json.loads(argv[0])
    contract, params, _check = parse_args(argv[1:])
    if "out" not in contract or "n" not in contract:
        raise SystemExit("campaign.job.fom: --n and --out are required")
    # what a program orphans comes to this process, not to init: the stop after each invocation and a cancel find it
    answer_for_descendants()
    return measure(spec, contract, params, Path.cwd())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
