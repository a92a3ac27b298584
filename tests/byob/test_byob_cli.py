"""Bring your own benchmark through the installed CLI on this machine
(cluster=local): the docs/byob.md guide as written, the three shipped
third-party benchmarks (conf/kernel/likwid_stream.yaml, mbw.yaml,
sysbench_cpu.yaml) at tiny sizes, `show` quoting a failed sanity line, and
bad declarations refused at compose time (exit 2, the key named, nothing
submitted)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli, sql_rows

GUIDE = REPO / "docs" / "byob.md"


def _guide_files(root: Path) -> None:
    """Every `<!-- file: PATH -->` block of the guide, written under root."""
    text = GUIDE.read_text()
    found = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", text, re.S)
    assert len(found) == 3, "the guide's program, kernel and experiment"
    for rel, body in found:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        if rel.startswith("bin/"):
            path.chmod(0o755)


def _env(root: Path) -> dict[str, str]:
    return {"CAMPAIGN_CONFIG_PATH": str(root / "conf"), "PATH": f"{root / 'bin'}:{os.environ['PATH']}"}


def _results(ledger: Path, env: dict[str, str] | None = None) -> list[dict]:
    proc = run_cli("--ledger", str(ledger), "results", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_guide_runs_as_written(tmp_path: Path) -> None:
    """A program that prints `time: 0.123 s` and follows no contract: swept
    over threads and sizes written 1e4, with check: false (preflight passes on
    exit 0 and parsed figures), its own times as time_s, the cost model's flops."""
    _guide_files(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=mybench_sweep", cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sql_rows(ledger, "SELECT state, count(*) FROM job_attempt GROUP BY state") == [("COMPLETED", 2)]
    rows = _results(ledger)
    assert {(r["threads"], r["n"]) for r in rows} == {(1, 10000), (2, 10000), (1, 20000), (2, 20000)}
    assert len(rows) == 4 * 3  # 3 repeats each
    runs = tmp_path / "runs"
    for r in rows:
        assert r["metric"] == "time" and r["unit"] == "s"
        assert r["time_s"] == r["value"]  # the program's printed time, not the process's
        assert r["flops"] == 2 * r["n"]
        assert r["params"] == "metric=time"
        assert r["d"] is None  # the sweep sets no d: none passed, none in the labels
    printed = {float(m) for f in runs.rglob("fom-n*-r*.out") for m in re.findall(r"time: (\S+) s", f.read_text())}
    assert {r["time_s"] for r in rows} <= printed


def _run_shipped(tmp_path: Path, program: str, experiment: str, *more: str) -> tuple[Path, list[dict]]:
    if shutil.which(program) is None:
        pytest.skip(f"{program} not installed (make test installs it)")
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", f"experiment={experiment}", *more, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    states = sql_rows(ledger, "SELECT state FROM job_attempt")
    assert states and {s for (s,) in states} == {"COMPLETED"}, states
    return ledger, _results(ledger)


def _medians(rows: list[dict], metric: str) -> dict[tuple, float]:
    by: dict[tuple, list[float]] = {}
    for r in rows:
        if r["metric"] == metric:
            by.setdefault((r["variant"], r["threads"], r["n"]), []).append(r["value"])
    return {k: sorted(v)[len(v) // 2] for k, v in by.items()}


def test_likwid_bench_stream_and_triad_over_threads_and_sizes(tmp_path: Path) -> None:
    ledger, rows = _run_shipped(tmp_path, "likwid-bench", "byob_likwid",
                                "cluster.partitions.local.ceilings.mem_bw=2e10")  # a ceiling to plot against
    bw = _medians(rows, "bandwidth")
    assert set(bw) == {(v, t, n) for v in ("stream", "triad") for t in (1, 2) for n in (64, 256)}
    assert all(v > 0 for v in bw.values())
    for r in rows:  # the cost model: iterations x the working set in bytes
        assert r["bytes"] == 200 * r["n"] * 1000
        assert r["unit"] == {"bandwidth": "MB/s", "mflops": "MFLOP/s", "time": "s"}[r["metric"]]
        # likwid's own Time (seconds) is every figure's time_s: bandwidth = bytes / time_s as likwid computes it
        if r["metric"] == "bandwidth":
            assert r["bytes"] / r["time_s"] / 1e6 == pytest.approx(r["value"], rel=0.02)
    report = run_cli("--ledger", str(ledger), "report", "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    md = next((tmp_path / "report").glob("*.md")).read_text()
    section = md[md.index("## Figures of merit"):]
    assert "Median bandwidth [MB/s] per n (higher is better)" in section
    assert "Scaling of bandwidth over threads" in section and "Speedup v/v(base)" in section
    assert "Median time [s] per n (lower is better)" in section
    # bandwidth from the cost model against the 20 GB/s ceiling given above, in the table and the figure
    table = section[section.index("Bandwidth from the cost model"):]
    assert "| 20.0 |" in table and "-bandwidth.png" in section
    html = next((tmp_path / "report").glob("*.html")).read_text()
    assert "Figures of merit" in html
    assert any(f"dashed = the partition{q}s mem_bw ceiling" in html for q in ("'", "&#x27;", "&#39;"))
    # the time sections read one figure per run: no configuration repeated per figure
    assert "metric=" not in md[:md.index("## Figures of merit")]


def test_mbw_bandwidth_vs_array_size(tmp_path: Path) -> None:
    _, rows = _run_shipped(tmp_path, "mbw", "byob_mbw")
    bw = _medians(rows, "bandwidth")
    assert {n for (_, _, n) in bw} == {1, 4} and all(v > 0 for v in bw.values())
    assert {r["unit"] for r in rows if r["metric"] == "bandwidth"} == {"MiB/s"}
    assert all(r["bytes"] == 2 * r["n"] * 2**20 for r in rows)


def test_sysbench_cpu_events_per_second_vs_threads(tmp_path: Path) -> None:
    _, rows = _run_shipped(tmp_path, "sysbench", "byob_sysbench")
    rate = _medians(rows, "events_per_s")
    assert {(t, n) for (_, t, n) in rate} == {(t, n) for t in (1, 2) for n in (200, 400)}
    assert all(v > 0 for v in rate.values())
    assert all(r["higher_is_better"] == 1 for r in rows if r["metric"] == "events_per_s")


BAD_KERNEL = """
name: mine
driven_by: tool
impls:
  py: {{argv: ["mybench", "{{n}}", "{placeholder}"], variants: [plain]}}
figures:
  - {{name: time, regex: '{regex}', unit: s}}
flops: {flops}
"""
BAD_SWEEP = """
name: bad_sweep
check: false
sweeps:
  - {kernel: mine, impls: [py], variants: [plain], n: [10]}
"""


@pytest.mark.parametrize("placeholder,regex,flops,named", [
    ("{block}", "time: ([0-9.]+)", "2*n", "kernels.mine.impls.py.argv[2]: placeholder {block} is not a swept"),
    ("{threads}", "time: ([0-9.]+)", "2*n*block", "kernels.mine.flops='2*n*block' names 'block'"),
    ("{threads}", "time: ([0-9.]+", "2*n", "kernels.mine.figures[0].regex='time: ([0-9.]+' does not compile"),
    ("{threads}", "time: ([0-9.]+)", "__import__('os')", "kernels.mine.flops=\"__import__('os')\": only the"),
])
def test_bad_declarations_exit_2_at_compose_time(tmp_path: Path, placeholder: str, regex: str, flops: str,
                                                named: str) -> None:
    conf = tmp_path / "conf"
    (conf / "kernel").mkdir(parents=True)
    (conf / "experiment").mkdir()
    (conf / "kernel" / "mine.yaml").write_text(BAD_KERNEL.format(placeholder=placeholder, regex=regex, flops=flops))
    (conf / "experiment" / "bad_sweep.yaml").write_text(BAD_SWEEP)
    ledger = tmp_path / "ledger.sqlite"
    for extra in ([], ["--dry-run"]):
        proc = run_cli("--ledger", str(ledger), "submit", "experiment=bad_sweep", *extra, cwd=tmp_path,
                       env={"CAMPAIGN_CONFIG_PATH": str(conf)})
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert named in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not ledger.exists() or sql_rows(ledger, "SELECT count(*) FROM job_attempt") == [(0,)]
    assert not (tmp_path / "runs").exists()


HONEST = """#!/usr/bin/env python3
# follows the kernel contract, has no correctness check: rel_err stays empty
import argparse
p = argparse.ArgumentParser()
for o in ("n", "d", "threads", "repeats", "warmup", "device", "dtype", "variant", "out"):
    p.add_argument("--" + o)
p.add_argument("--check", action="store_true")
a = p.parse_args()
with open(a.out + ".tmp", "w") as f:
    f.write("kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,rel_err\\n")
    for n in a.n.split(","):
        for r in range(int(a.repeats)):
            f.write(f"honest,c,plain,cpu,fp32,{n},{a.d},{a.threads},{r},{1e-6 * int(n)},\\n")
import os
os.replace(a.out + ".tmp", a.out)
"""


def _conf(root: Path, files: dict[str, str]) -> dict[str, str]:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel.startswith("bin/"):
            path.chmod(0o755)
    return _env(root)


def test_preflight_honours_check_false(tmp_path: Path) -> None:
    """A contract program without a check (rel_err empty) passes preflight
    under check: false: it exits 0 and its CSV parses (it was refused before:
    preflight always passed --check and judged rel_err)."""
    env = _conf(tmp_path, {
        "bin/honest": HONEST,
        "conf/kernel/honest.yaml": "name: honest\nimpls:\n  c: {argv: [honest], variants: [plain]}\n",
        "conf/experiment/honest_sweep.yaml": ("name: honest_sweep\ncheck: false\nrepeats: 2\nsweeps:\n"
                                              "  - {kernel: honest, impls: [c], variants: [plain], n: [1e3, 2e3]}\n"),
    })
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=honest_sweep", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sql_rows(ledger, "SELECT state FROM job_attempt") == [("COMPLETED",)]
    assert {r["n"] for r in _results(ledger)} == {1000, 2000}


WORRIED = """#!/usr/bin/env python3
import sys
print("setting up", sys.argv[1])
print("result: NaN in block 3")
print(f"time: {int(sys.argv[1]) * 1e-6:.6f} s")
"""
FAILING_KERNELS = {
    "conf/kernel/worried.yaml": """name: worried
driven_by: tool
impls:
  py: {argv: [worried, "{n}"], variants: [plain]}
figures:
  - {name: time, regex: 'time: ([0-9.]+) s', unit: s}
sanity:
  - {regex: '(?i)\\bnan\\b', expect: absent}
""",
    "conf/kernel/silent.yaml": """name: silent
driven_by: tool
impls:
  py: {argv: [worried, "{n}"], variants: [plain]}
figures:
  - {name: rate, regex: 'GB/s: ([0-9.]+)', unit: GB/s, higher_is_better: true}
""",
    "conf/experiment/failing.yaml": """name: failing
check: false
preflight: false
repeats: 1
sweeps:
  - {kernel: worried, impls: [py], variants: [plain], n: [100]}
  - {kernel: silent, impls: [py], variants: [plain], n: [100]}
""",
}


def test_show_quotes_the_failed_sanity_line_and_the_lost_pattern(tmp_path: Path) -> None:
    env = _conf(tmp_path, {"bin/worried": WORRIED, **FAILING_KERNELS})
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=failing", cwd=tmp_path, env=env)
    assert proc.returncode != 0  # jobs ended failed
    jobs = dict(sql_rows(ledger, "SELECT r.kernel, a.job_id FROM job_attempt a JOIN run r ON r.id = a.run_id"))
    states = dict(sql_rows(ledger, "SELECT r.kernel, a.state FROM job_attempt a JOIN run r ON r.id = a.run_id"))
    assert states == {"worried": "CHECK_FAILED", "silent": "LOST_OUTPUT"}
    shown = run_cli("--ledger", str(ledger), "show", jobs["worried"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert "'result: NaN in block 3'" in shown.stdout
    shown = run_cli("--ledger", str(ledger), "show", jobs["silent"], env=env)
    assert "pattern 'GB/s: ([0-9.]+)' matched nothing in stdout" in shown.stdout
    assert "time: 0.000100 s" in shown.stdout  # the output's last lines
