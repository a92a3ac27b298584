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
this module exit with its code (FAILED, its stderr tail in ours).

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaign.job import expr

LOST_SUFFIX = ".lost"
CHECK_SUFFIX = ".check"
TAIL_LINES = 5
MAX_OUTPUT = 64 * 2**20  # bytes of a program's stdout/stderr the patterns read (its last ones)
# Units a lower-is-better figure may be in to be the row's time_s (seconds per unit).
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
COLUMNS = ("kernel", "impl", "variant", "device", "dtype", "n", "d", "threads", "repeat", "time_s",
           "metric", "value", "unit", "higher_is_better", "flops", "bytes")
# Contract options that are not program parameters of their own.
_CONTRACT = {"n", "d", "threads", "repeats", "warmup", "device", "dtype", "variant", "out"}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")


class Lost(Exception):
    """A figure whose pattern matched nothing: the reason for LOST_OUTPUT."""


def placeholders(text: str) -> list[str]:
    """The `{name}` placeholders of one template string (`{{` is a literal brace)."""
    return _PLACEHOLDER.findall(text.replace("{{", "").replace("}}", ""))


def render(text: str, values: dict[str, str]) -> str:
    """`text` with each `{name}` replaced by its value (never a format spec or
    attribute: only plain names are placeholders)."""
    out = _PLACEHOLDER.sub(lambda m: values[m.group(1)], text.replace("{{", "\x00").replace("}}", "\x01"))
    return out.replace("\x00", "{").replace("\x01", "}")


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


def _source_text(source: str, stdout: str, stderr: str, values: dict[str, str], cwd: Path) -> str:
    if source == "stdout":
        return stdout
    if source == "stderr":
        return stderr
    path = (cwd / render(source.removeprefix("file:"), values)).resolve()
    if not path.is_relative_to(cwd.resolve()):  # a figure is read from the job's own folder only
        return ""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _tail(text: str) -> str:
    return " | ".join(text.strip().splitlines()[-TAIL_LINES:]) or "(empty)"


def read_figure(fig: dict[str, Any], text: str) -> float:
    """The figure's value in `text`: the last match of its regex (group
    `value`, else the first group, else the whole match) or the last JSON line
    holding its key. Lost when nothing matches or the match is no number."""
    found: str | None = None
    if fig.get("regex"):
        matches = list(re.finditer(fig["regex"], text, re.MULTILINE))
        if matches:
            m = matches[-1]
            found = m.group("value") if "value" in m.re.groupindex else (m.group(1) if m.re.groups else m.group(0))
        what = f"pattern {fig['regex']!r}"
    else:
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict) and fig["json"] in obj:
                    found = str(obj[fig["json"]])
        what = f"JSON key {fig['json']!r}"
    if found is None:
        raise Lost(f"figure {fig['name']}: {what} matched nothing in {fig.get('source', 'stdout')}; "
                   f"last lines: {_tail(text)}")
    try:
        value = float(found.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise Lost(f"figure {fig['name']}: {what} matched {found[:80]!r}, not a finite number; "
                   f"last lines: {_tail(text)}")
    return value


def sanity_problem(rule: dict[str, Any], text: str) -> str | None:
    """Why the output fails a sanity rule (the line quoted), or None."""
    m = re.search(rule["regex"], text, re.MULTILINE)
    if rule.get("expect", "match") == "match":
        if m is None:
            return f"sanity pattern {rule['regex']!r} must match {rule.get('source', 'stdout')} but matched " \
                   f"nothing; last lines: {_tail(text)}"
        return None
    if m is not None:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        line = text[start:end if end >= 0 else len(text)].strip()
        return f"sanity pattern {rule['regex']!r} must not match {rule.get('source', 'stdout')}: line {line!r}"
    return None


def _read_capped(path: Path) -> str:
    """A program's output as text: at most its last MAX_OUTPUT bytes (a program
    printing gigabytes must not take the node's memory; figures come last)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - MAX_OUTPUT))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _run_once(spec: dict[str, Any], values: dict[str, str], cwd: Path, stem: str) -> tuple[int, str, str, float]:
    """One invocation, its output into `stem`.out/.err in the job folder (kept for `show`)."""
    argv = [render(a, values) for a in spec["argv"]]
    env = {**os.environ, **{k: render(v, values) for k, v in spec.get("env", {}).items()}}
    out_path, err_path = cwd / f"{stem}.out", cwd / f"{stem}.err"
    t0 = time.perf_counter()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            code = subprocess.run(argv, stdout=out, stderr=err, env=env, cwd=cwd, check=False).returncode
        except OSError as exc:
            return 127, "", f"cannot start {argv[0]}: {exc}", 0.0
    elapsed = time.perf_counter() - t0
    return code, _read_capped(out_path), _read_capped(err_path), elapsed


def time_of(found: list[tuple[dict[str, Any], float]], elapsed: float) -> float:
    """The run's time_s, shared by all its figures: the first lower-is-better
    figure in a time unit (the program's own timing, without process start),
    else the wall time of the whole invocation."""
    for fig, value in found:
        scale = TIME_UNITS.get(str(fig.get("unit", "")))
        if scale is not None and not fig.get("higher_is_better", False) and value > 0:
            return value * scale
    return elapsed if elapsed > 0 else 1e-9


def _cost(spec: dict[str, Any], values: dict[str, str]) -> dict[str, float]:
    """The cost model at this point; a count that cannot be evaluated (an
    overflow at a huge n) is left empty with a warning, never a lost run."""
    out: dict[str, float] = {}
    given = dict(values)
    if spec.get("element_bytes"):  # the element size of this run's dtype (a missing one is fp32's)
        size = spec["element_bytes"].get(values.get("dtype") or "fp32")
        if size is not None:
            given["element_bytes"] = str(size)
    for name, text in spec.get("cost_params", {}).items():
        if given.get(name, "") == "":  # derived only where the run has none
            try:
                given[name] = repr(expr.evaluate(text, values))
            except expr.ExprError as exc:
                print(f"campaign.job.fom: {name} not evaluated: {exc}", file=sys.stderr)
    for what in ("flops", "bytes"):
        if spec.get(what):
            try:
                out[what] = expr.evaluate(spec[what], given)
            except expr.ExprError as exc:
                print(f"campaign.job.fom: {what} not evaluated: {exc}", file=sys.stderr)
    return out


def _verdict(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)


def _rows(spec: dict[str, Any], base: dict[str, str], n: int, r: int, found: list[tuple[dict[str, Any], float]],
          elapsed: float, values: dict[str, str]) -> list[dict[str, Any]]:
    """The CSV rows of one repeat: one per figure, sharing time_s and the cost model."""
    cost = _cost(spec, values)
    seconds = repr(time_of(found, elapsed))
    fixed = {"fixed_duration": 1} if spec.get("fixed_duration") else {}
    return [fixed | {"kernel": spec["kernel"], "impl": spec["impl"], "variant": base["variant"], "device": base["device"],
             "dtype": base["dtype"], "n": n, "d": base["d"], "threads": base["threads"], "repeat": r,
             "time_s": seconds, "metric": fig["name"], "value": repr(value), "unit": fig.get("unit", ""),
             "higher_is_better": int(bool(fig.get("higher_is_better", False))),
             "flops": repr(cost["flops"]) if "flops" in cost else "",
             "bytes": repr(cost["bytes"]) if "bytes" in cost else ""} for fig, value in found]


def measure(spec: dict[str, Any], contract: dict[str, Any], params: dict[str, str], cwd: Path) -> int:
    """Every n x (warm-ups + repeats); the exit code. As the contract asks, the
    CSV is `F.tmp` while it runs, each n's rows appended and flushed when that n
    is done (a job stopped at its walltime keeps the n it finished), renamed to
    `F` at the end; a lost figure leaves `F.lost` instead, a failed sanity
    pattern `F.check` beside it."""
    out = Path(contract["out"])
    ns = [int(v) for v in contract["n"].split(",")]
    repeats, warmup = int(contract.get("repeats", 1)), int(contract.get("warmup", 0))
    base = {"d": contract.get("d", ""), "threads": contract.get("threads", "1"), "dtype": contract.get("dtype", ""),
            "variant": contract.get("variant", ""), "device": contract.get("device", "cpu"), **params}
    base.update({k.replace("-", "_"): v for k, v in params.items()})
    sources = {f.get("source", "stdout") for f in spec["figures"]} | {s.get("source", "stdout")
                                                                      for s in spec.get("sanity", [])}
    problems: list[str] = []
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        # a fixed-duration program's rows say so (an extra column): the analysis never judges its time
        columns = COLUMNS + (("fixed_duration",) if spec.get("fixed_duration") else ())
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for n in ns:
            rows: list[dict[str, Any]] = []
            for r in range(-warmup, repeats):
                values = {**base, "n": str(n), "repeat": str(max(r, 0))}
                code, stdout, stderr, elapsed = _run_once(spec, values, cwd,
                                                          f"fom-n{n}-{'w' if r < 0 else 'r'}{abs(r)}")
                if code != 0:
                    print(f"campaign.job.fom: {spec['argv'][0]} exited with {code} at n={n}: {_tail(stderr)}",
                          file=sys.stderr)
                    return code
                if r < 0:
                    continue
                texts = {s: _source_text(s, stdout, stderr, values, cwd) for s in sources}
                try:
                    found = [(fig, read_figure(fig, texts[fig.get("source", "stdout")])) for fig in spec["figures"]]
                except Lost as exc:
                    _verdict(out.with_name(out.name + LOST_SUFFIX), f"n={n} repeat={r}: {exc}")
                    print(f"campaign.job.fom: {exc}", file=sys.stderr)
                    return 0
                problems += [f"n={n} repeat={r}: {p}" for rule in spec.get("sanity", [])
                             if (p := sanity_problem(rule, texts[rule.get("source", "stdout")]))]
                rows += _rows(spec, base, n, r, found, elapsed, values)
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
    return measure(spec, contract, params, Path.cwd())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
