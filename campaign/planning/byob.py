"""Bring your own benchmark: the compose-time side of `driven_by: tool` kernels.

A kernel YAML may declare any program (docs/byob.md): an argument template
with `{placeholders}`, figures of merit read by pattern, sanity patterns and
cost expressions. Everything that can be wrong with that is refused here,
before anything is planned or submitted, with the key named (exit 2): a
pattern that does not compile, a figure with neither regex nor json, an
expression outside the whitelist (campaign.job.expr) or naming a parameter
the sweep does not have, a placeholder that is not swept. Then the planner
puts campaign.job.fom in the program's place, with the declaration as one
JSON argument, so the run's key changes whenever the declaration does.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from campaign.config.groups import config_dirs
from campaign.config.schema import KernelSpec, SweepSpec
from campaign.job import expr
from campaign.job.files import CANCEL_FILE, EXIT_FILE, START_FILE, STDERR_FILE, STDOUT_FILE
from campaign.job.fom import MODULE
from campaign.job.fom_launch import REDUCTIONS
from campaign.job.fom_read import RANK
from campaign.job.problem_size import NO_SIZE, reads
from campaign.job.template import INPUT_NAME, SHAPE_PARAMS, placeholders, reread
from campaign.planning import nested_launch, sweep_keys
from campaign.plumbing.errors import ConfigError

DRIVERS = ("program", "tool")
REPEAT_BY = ("launch", "program")
SOURCES = ("stdout", "stderr")
# What every run has, whatever its sweep: the contract's own parameters and its shape.
BUILTIN_PARAMS = ("n", "threads", "d", "dtype", "variant", "device", "repeat", "repeats", "warmup", *SHAPE_PARAMS)
# what the job itself writes in the attempt folder (its CSV, verdicts and the driver's outputs by prefix)
JOB_FILES = (START_FILE, EXIT_FILE, STDOUT_FILE, STDERR_FILE, CANCEL_FILE, "ranks")
DEFAULT_D = 64  # a contract program's --d when the sweep sets none


def sizes(values: list[Any], where: str) -> tuple[int, ...]:
    """Sizes as integers: 1000000, 1e6 and "1e6" are the same size; 1.5, 0,
    true and names are refused."""
    out = []
    for v in values or []:
        number: float | None = None
        if isinstance(v, bool):
            number = None
        elif isinstance(v, int):
            number = v
        elif isinstance(v, (float, str)):
            try:
                number = float(v)
            except ValueError:
                number = None
        if number is not None and math.isfinite(number) and number <= 0:
            raise ConfigError(f"{where}.n must be a non-empty list of positive sizes, got {values}")
        if number is None or not math.isfinite(number) or number != int(number) or number > 2**62:
            raise ConfigError(f"{where}.n expects a list of integers, e.g. [1,2] (1e6 is 1000000), got {v!r}")
        if int(number) in out:  # the program measured it twice: rows of one n and repeat twice, LOST_OUTPUT
            raise ConfigError(f"{where}.n lists the size {int(number)} twice ({values}): give each size once")
        out.append(int(number))
    if not out:
        raise ConfigError(f"{where}.n must be a non-empty list of positive sizes, got {values}")
    return tuple(out)


def sizes_of(kernel: KernelSpec, sweep: SweepSpec, where: str) -> tuple[int, ...]:
    """The sweep's sizes. A tool-driven program that reads no {n} (problem_size.reads, the rule the
    ingest stores its rows' NULL n by) has none: its sweep leaves n out and it runs once per repeat
    at NO_SIZE; an n sweep would run the same command once per n and store sizes it never saw, so
    it is refused. One that reads {n}, and a contract program, need the sizes."""
    if kernel.driven_by != "tool":
        if sweep.n is None:
            raise ConfigError(
                f"{where}.n is missing: kernel {kernel.name} takes a problem size (a contract "
                "program loops over --n); give the sizes, e.g. n: [1000]"
            )
        return sizes(sweep.n, where)
    impls = [i for i in sweep.impls if i in kernel.impls] or list(kernel.impls)  # (an unknown one: refused later)
    sized = {i: "n" in reads(driver_spec(kernel, i)) for i in impls}
    if sweep.n is None:
        reader = next((i for i in impls if sized[i]), None)
        if reader is None:
            return NO_SIZE
        raise ConfigError(
            f"{where}.n is missing: kernel {kernel.name} takes a problem size (its program "
            f"({reader}) reads {{n}}); give the sizes, e.g. n: [1000], or drop {{n}} from a "
            "tool-driven program that has none"
        )
    blind = next((i for i in impls if not sized[i]), None)
    if blind is not None:
        raise ConfigError(
            f"{where}.n: kernel {kernel.name}'s program ({blind}) reads no {{n}} in its argv, env, "
            "script, inputs or figure sources, so an n sweep would run the same command once per "
            "n; remove n from the sweep, or put {n} in the program's arguments"
        )
    return sizes(sweep.n, where)


def check_d(sweep: SweepSpec, where: str) -> None:
    if sweep.d is not None and (isinstance(sweep.d, bool) or sweep.d <= 0):
        raise ConfigError(f"{where}.d must be positive, got {sweep.d}")


def d_of(sweep: SweepSpec, kernel: KernelSpec) -> int | None:
    """The run's d: the sweep's; left out, 64 for a contract program (its
    --d, as always) and none for a tool-driven benchmark (no d=64 in its
    labels; `{d}` then needs the sweep to set it)."""
    if sweep.d is not None:
        return sweep.d
    return None if kernel.driven_by == "tool" else DEFAULT_D


def _source(value: str, where: str) -> None:
    if value not in SOURCES and not (value.startswith("file:") and len(value) > 5):
        raise ConfigError(f"{where}.source={value[:60]!r}: use stdout, stderr or file:<path>")
    path = value.removeprefix("file:")
    if value.startswith("file:") and (path.startswith("/") or ".." in path.split("/")):
        raise ConfigError(f"{where}.source={value[:60]!r}: a file in the job's folder (a relative path, no ..)")


def _regex(value: str, where: str) -> None:
    try:
        re.compile(value, re.MULTILINE)
    except re.error as exc:
        raise ConfigError(f"{where}.regex={value[:60]!r} does not compile: {exc}") from None


def check_kernel(key: str, kernel: KernelSpec) -> None:
    """What a kernel YAML's benchmark declaration must be, without a sweep."""
    where = f"kernels.{key}"
    if kernel.driven_by not in DRIVERS:
        raise ConfigError(f"{where}.driven_by={kernel.driven_by!r} is not one of {', '.join(DRIVERS)}")
    for what, text in cost_expressions(kernel):
        try:
            expr.parse(str(text))
        except expr.ExprError as exc:
            raise ConfigError(f"{where}.{what}={str(text)[:60]!r}: {exc}") from None
    for name, size in kernel.element_bytes.items():
        if not _numeric(size) or float(size) <= 0:
            raise ConfigError(f"{where}.element_bytes.{name}={size!r}: the bytes of one element, a positive number")
    for name in kernel.cost_params:
        if not name.isidentifier() or name in COST_NAMES:
            raise ConfigError(f"{where}.cost_params.{name}: not a parameter name an expression can read")
    if kernel.repeat_by not in REPEAT_BY:
        raise ConfigError(f"{where}.repeat_by={kernel.repeat_by!r} is not one of {', '.join(REPEAT_BY)}")
    if isinstance(kernel.result_rank, bool) or not isinstance(kernel.result_rank, int) or kernel.result_rank < 0:
        raise ConfigError(
            f"{where}.result_rank={kernel.result_rank!r}: the rank whose output holds the figures, a whole number >= 0"
        )
    scripted = [i for i, impl in kernel.impls.items() if impl.script is not None]
    if kernel.driven_by == "program":
        if (
            kernel.figures
            or kernel.sanity
            or kernel.env
            or kernel.inputs
            or kernel.input_templates
            or scripted
            or kernel.repeat_by != "launch"
            or kernel.result_rank
            or kernel.fixed_duration
        ):
            raise ConfigError(
                f"{where}: figures, sanity, env, inputs, script, repeat_by, result_rank and "
                "fixed_duration need driven_by: tool (a program-driven kernel repeats itself and "
                "writes the contract CSV from rank 0)"
            )
        return
    _inputs(kernel, where)
    for iname in scripted:
        for name in reread(str(kernel.impls[iname].script)):
            raise ConfigError(
                f"{where}.impls.{iname}.script: placeholder {{{name}}} stands where no quoting keeps "
                "a value as it is (inside backticks or ${...}, or after a command substitution in a "
                "here-document): set a variable first (v={" + name + '}) and use "$v" there'
            )
    if not kernel.figures:
        raise ConfigError(f"{where}.figures is empty: a tool-driven benchmark needs at least one figure of merit")
    names = set()
    for i, fig in enumerate(kernel.figures):
        at = f"{where}.figures[{i}]"
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.+-]*", fig.name or "") or len(fig.name) > 64:
            raise ConfigError(
                f"{at}.name={str(fig.name)[:60]!r} is not a valid figure name: an ASCII letter, "
                "then ASCII letters, digits and _ . + - (at most 64; no space), e.g. events_per_s"
            )
        if fig.name in names:
            raise ConfigError(f"{at}.name={fig.name!r} appears twice")
        names.add(fig.name)
        if len(fig.unit) > 40 or re.search(r"[\x00-\x1f\x7f,\"]", fig.unit):
            raise ConfigError(
                f"{at}.unit={fig.unit[:40]!r}: at most 40 characters, no comma, quote or control "
                "character (it is a cell of the results CSV)"
            )
        if (fig.regex is None) == (fig.json is None):
            raise ConfigError(f"{at}: give exactly one of regex or json")
        if fig.regex is not None:
            _regex(fig.regex, at)
        _source(fig.source, at)
        if fig.reduce is not None and fig.reduce not in REDUCTIONS:
            raise ConfigError(
                f"{at}.reduce={fig.reduce!r}: one of {', '.join(REDUCTIONS)}, over the ranks' stdout, stderr or files"
            )
        if fig.reduce is not None and fig.source.startswith("file:") and RANK not in placeholders(fig.source):
            raise ConfigError(
                f"{at}.reduce={fig.reduce!r} over a file: name each rank's file with {{{RANK}}}, "
                f"e.g. source: 'file:out.{{{RANK}}}' (one file is read once)"
            )
        if fig.duration and not kernel.fixed_duration:
            raise ConfigError(
                f"{at}.duration: only a program declared fixed_duration: true runs for a set time; "
                "a time this program measures is a figure like any other (drop duration)"
            )
    for i, rule in enumerate(kernel.sanity):
        at = f"{where}.sanity[{i}]"
        _regex(rule.regex, at)
        _source(rule.source, at)
        if rule.expect not in ("match", "absent"):
            raise ConfigError(f"{at}.expect={rule.expect!r}: use match or absent")


def _inputs(kernel: KernelSpec, where: str) -> None:
    """Input file names are plain files of the attempt folder; a template file
    is read here, once, into `inputs` (its text travels with the run and its
    hash is in the run's identity, so an edited template is a new run)."""
    for name in [*kernel.inputs, *kernel.input_templates]:
        if not INPUT_NAME.fullmatch(name) or name in JOB_FILES or name.startswith(("results.csv", "fom-")):
            raise ConfigError(
                f"{where}.inputs: {name[:60]!r} is not an input file name: a plain file name in the "
                "attempt folder (letters, digits, . _ + -; no folder), none of the job's own files"
            )
    for name, given in kernel.input_templates.items():
        if name in kernel.inputs:
            raise ConfigError(f"{where}.input_templates.{name}: also in {where}.inputs; give it once")
        path = Path(given).expanduser()
        found = [path] if path.is_absolute() else [base / path for base in [Path.cwd(), *config_dirs()]]
        hit = next((p for p in found if p.is_file()), None)
        if hit is None:
            raise ConfigError(
                f"{where}.input_templates.{name}={given[:80]!r}: no such file (absolute, or relative "
                "to this folder or a config folder)"
            )
        try:
            kernel.inputs[name] = hit.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{where}.input_templates.{name}: cannot read {hit}: {exc}") from None
    kernel.input_templates = {}


COST_KEYS = ("flops", "bytes", "write_bytes")
COST_NAMES = ("element_bytes",)  # what a kernel's declaration itself provides to its expressions


def cost_expressions(kernel: KernelSpec) -> list[tuple[str, str]]:
    """(key, text) of every cost expression a kernel declares: flops, bytes,
    write_bytes and each derived parameter (cost_params.NAME)."""
    out = [(what, str(text)) for what in COST_KEYS if (text := getattr(kernel, what)) is not None]
    return out + [(f"cost_params.{name}", str(text)) for name, text in kernel.cost_params.items()]


def _numeric(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def swept(sweep: SweepSpec) -> set[str]:
    """The parameter names a run of `sweep` has (program option names also as
    identifiers: `sdpa-backend` is `sdpa_backend` in an expression)."""
    keys = {*sweep.args, *sweep.grid}
    builtin = {*BUILTIN_PARAMS} - ({"d"} if sweep.d is None else set())
    return {*builtin, *keys, *(k.replace("-", "_") for k in keys)}


def check_sweep(kernel: KernelSpec, sweep: SweepSpec, index: int) -> None:
    """Placeholders and expressions name only what the sweep has."""
    known = swept(sweep)
    where = f"kernels.{kernel.name}"
    sweep_keys.check(kernel.driven_by, sweep, index)
    numeric = known - {"dtype", "variant", "device"} | ({"d"} if kernel.driven_by == "program" else set())
    numeric |= {*kernel.cost_params} | ({"element_bytes"} if kernel.element_bytes else set())
    # a tool-driven program swept without n has no problem size (sizes_of): a cost of n would be worked out
    # at the driver's n = 1 and stored as the program's FLOPs or bytes, a wrong number
    unsized = kernel.driven_by == "tool" and sweep.n is None
    numeric -= {"n"} if unsized else set()
    for what, text in cost_expressions(kernel):
        # a derived parameter reads only the run's own (no chain, no cycle)
        readable = numeric - set(kernel.cost_params) if what.startswith("cost_params.") else numeric
        unknown = sorted(expr.names(str(text)) - readable)
        if unsized and "n" in unknown:
            raise ConfigError(
                f"{where}.{what}={str(text)[:60]!r} reads n, but the program reads no {{n}} "
                f"(experiment.sweeps.{index} gives no sizes): it has no problem size, so a cost of n "
                "would be worked out at n = 1; write the cost without n, or give the program {n}"
            )
        if unknown:
            raise ConfigError(
                f"{where}.{what}={str(text)[:60]!r} names {unknown[0]!r}, not a numeric parameter of "
                f"experiment.sweeps.{index} (known: {', '.join(sorted(readable))})"
            )
        values = {**{k: [v] for k, v in sweep.args.items()}, **sweep.grid}
        for name in sorted(expr.names(str(text))):
            given = values.get(name, values.get(name.replace("_", "-"), []))
            bad = next((v for v in given if not _numeric(v)), None)
            if bad is not None:
                raise ConfigError(
                    f"{where}.{what}={str(text)[:60]!r} reads {name}, but experiment.sweeps.{index} "
                    f"gives it the value {str(bad)[:40]!r}, not a number"
                )
    nested_launch.check(kernel, sweep, index)
    if kernel.driven_by != "tool":
        return
    whole = all(isinstance(v, int) for v in (*sweep.nodes, *sweep.ranks_per_node))  # else the layouts refuse them
    fewest = min(sweep.nodes) * min(sweep.ranks_per_node) if whole and sweep.nodes and sweep.ranks_per_node else 1
    if kernel.result_rank >= fewest:
        raise ConfigError(
            f"{where}.result_rank={kernel.result_rank}: experiment.sweeps.{index} has runs of "
            f"{fewest} rank(s) (ranks are numbered from 0)"
        )
    templates = [(f"impls.{i}.argv[{j}]", a) for i, impl in kernel.impls.items() for j, a in enumerate(impl.argv)]
    templates += [(f"impls.{i}.script", impl.script) for i, impl in kernel.impls.items() if impl.script]
    templates += [(f"env.{k}", v) for k, v in kernel.env.items()]
    templates += [(f"inputs.{k}", v) for k, v in kernel.inputs.items()]
    templates += [(f"figures[{i}].source", f.source) for i, f in enumerate(kernel.figures)]
    templates += [(f"sanity[{i}].source", r.source) for i, r in enumerate(kernel.sanity)]
    for at, text in templates:
        for name in placeholders(str(text)):
            # {rank}: a file source's rank (the result rank's file, or each rank's under reduce)
            if name not in known and not (name == RANK and at.endswith(".source")):
                raise ConfigError(
                    f"{where}.{at}: placeholder {{{name}}} is not a swept parameter of "
                    f"experiment.sweeps.{index} (known: {', '.join(sorted(known))}); add it to the "
                    "sweep's grid or args"
                )


def repeat_by(kernel: KernelSpec, launched: bool) -> str:
    """What a run records of its launches (RunSpec.repeat_by): a launched
    tool-driven benchmark's `repeat_by`; "" for one launch (or process) per
    job, as a contract program or a process that is not launched has."""
    return kernel.repeat_by if launched and kernel.driven_by == "tool" else ""


def driver_spec(kernel: KernelSpec, impl: str) -> dict[str, Any]:
    """The declaration the driver runs (campaign.job.fom): what tool_argv gives it as one JSON argument."""
    spec: dict[str, Any] = {
        "kernel": kernel.name,
        "impl": impl,
        "argv": list(kernel.impls[impl].argv),
        "env": dict(kernel.env),
        "figures": [
            {
                "name": f.name,
                "regex": f.regex,
                "json": f.json,
                "source": f.source,
                "unit": f.unit,
                "higher_is_better": f.higher_is_better,
                **({"reduce": f.reduce} if f.reduce else {}),
                **({"duration": True} if f.duration else {}),
            }
            for f in kernel.figures
        ],
        "sanity": [{"regex": s.regex, "source": s.source, "expect": s.expect} for s in kernel.sanity],
        "flops": kernel.flops,
        "bytes": kernel.bytes,
    }
    # only when declared: the runs of a declaration without them keep their keys
    extra = {
        "write_bytes": kernel.write_bytes,
        "element_bytes": dict(kernel.element_bytes),
        "cost_params": dict(kernel.cost_params),
        "result_rank": kernel.result_rank,
        "repeat_by": kernel.repeat_by if kernel.repeat_by != "launch" else None,
        "script": kernel.impls[impl].script,
        "inputs": dict(kernel.inputs),
        "fixed_duration": kernel.fixed_duration,
    }
    spec.update({k: v for k, v in extra.items() if v})
    return spec


def tool_argv(python: str, kernel: KernelSpec, impl: str) -> tuple[str, ...]:
    """The driver's command in the program's place: the declaration as one JSON argument."""
    return (python, "-m", MODULE, json.dumps(driver_spec(kernel, impl), sort_keys=True, separators=(",", ":")))


def is_tool(argv: tuple[str, ...]) -> bool:
    """A run's program is the tool driver (it takes the run's shape as options)."""
    return argv[1:3] == ("-m", MODULE)
