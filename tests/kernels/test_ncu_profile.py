"""`--profile ncu` (kernels/torch/profile.py, ncu.py) on real Nsight Compute output.

The fixtures under tests/fixtures/ncu/ are ncu 2025.3's own CSVs from the
H200 campaign (scripts/h200_counters.sh); the expected values are computed
here from the same file with the csv module, never copied.
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import defaultdict
from pathlib import Path

import pytest

from kernels.torch import attention_forward, ncu, perf, profile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
RAW = sorted(FIXTURES.glob("*.ncu.csv"))


def per_kernel(path: Path) -> dict[str, dict[str, float]]:
    """kernel ID -> metric -> value, read independently of ncu.parse."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("==")]
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for rec in csv.DictReader(lines):
        if rec["Section Name"] == ncu.METRICS_SECTION and rec["Metric Name"]:
            out[rec["ID"]][rec["Metric Name"]] = float(rec["Metric Value"].replace(",", ""))
    return out


@pytest.mark.parametrize("path", RAW, ids=[p.name for p in RAW])
def test_parse_keeps_every_kernel_and_its_name(path: Path) -> None:
    parsed = ncu.parse(path.read_text())
    expected = per_kernel(path)
    assert parsed.failure() is None and not parsed.errors
    assert len(parsed.kernels) == len(expected) > 1
    assert all(k.name for k in parsed.kernels)
    names = ncu.kernel_names(parsed.kernels)
    assert all(k.name in names for k in parsed.kernels)


@pytest.mark.parametrize("path", RAW, ids=[p.name for p in RAW])
def test_combine_sums_counts_and_weights_ratios_by_duration(path: Path) -> None:
    parsed = ncu.parse(path.read_text())
    combined = {m: v for m, v, _ in ncu.combine(parsed.kernels)}
    kernels = per_kernel(path)
    for metric in ("dram__bytes_read.sum", "dram__bytes_write.sum", ncu.DURATION,
                   "smsp__inst_executed_op_global_red.sum"):
        assert combined[metric] == pytest.approx(sum(k[metric] for k in kernels.values()))
    active = "sm__warps_active.avg.pct_of_peak_sustained_active"
    weights = [k[ncu.DURATION] for k in kernels.values()]
    mean = sum(k[active] * w for k, w in zip(kernels.values(), weights)) / sum(weights)
    assert combined[active] == pytest.approx(mean)
    assert combined["launches"] == len(kernels)
    theoretical = "Occupancy: Theoretical Occupancy"
    assert 0 < combined[theoretical] <= 100 and combined[active] <= combined[theoretical] * 1.05


def test_fused_backward_counts_global_reductions() -> None:
    """The flash backward accumulates dQ with global reductions: the fixture
    of attention_fwdbwd shows them; naive forward (matmuls, softmax) has none."""
    fused = dict((m, v) for m, v, _ in ncu.combine(
        ncu.parse((FIXTURES / "attention_fwdbwd_fused_n2048.ncu.csv").read_text()).kernels))
    naive = dict((m, v) for m, v, _ in ncu.combine(
        ncu.parse((FIXTURES / "attention_forward_naive_n8192.ncu.csv").read_text()).kernels))
    assert fused["smsp__inst_executed_op_global_red.sum"] > 0
    assert naive["dram__bytes_read.sum"] > fused["dram__bytes_read.sum"]


def test_errors_without_counters_are_the_failure_reason() -> None:
    text = ("==PROF== Connected to process 1 (/usr/bin/python3)\n"
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
            "Performance Counters on the target device 0.\n"
            "==PROF== Disconnected from process 1\n")
    parsed = ncu.parse(text)
    assert parsed.kernels == []
    reason = parsed.failure()
    assert reason is not None and "ERR_NVGPUCTRPERM" in reason
    assert ncu.parse("").failure() == "ncu profiled no kernels"


def test_child_argv_profiles_one_n_once_and_never_checks() -> None:
    argv = ["--n", "1024,2048", "--d", "128", "--repeats", "10", "--warmup=3", "--check", "--device",
            "cuda", "--profile", "ncu", "--profiler-path", "/opt/ncu", "--sdpa-backend", "cudnn",
            "--out", "/tmp/x.csv", "--l2-flush"]
    child = profile.child_argv("kernels.torch.attention_forward", argv, 2048, 3, "/tmp/c.csv")
    tail = child[3:]
    assert child[1:3] == ["-m", "kernels.torch.attention_forward"]
    for gone in ("--check", "--profile", "--profiler-path", "--l2-flush", "1024,2048", "/tmp/x.csv"):
        assert gone not in tail
    assert tail[tail.index("--n") + 1] == "2048" and tail[tail.index("--repeats") + 1] == "1"
    assert tail[tail.index("--warmup") + 1] == "3" and tail.count("--warmup") == 1
    assert tail[tail.index("--sdpa-backend") + 1] == "cudnn" and tail[-1] == profile.CHILD_FLAG


def test_missing_ncu_is_a_row_with_the_reason(tmp_path: Path) -> None:
    args = argparse.Namespace(profile="ncu", profiler_path=str(tmp_path / "no-ncu"), warmup=1, ncu_metrics=None)
    identity = {"kernel": "attention_forward", "impl": "torch", "variant": "naive", "dtype": "bf16", "d": "64"}
    rows = profile.profile_n("kernels.torch.attention_forward", [], args, 256, identity)
    assert len(rows) == 1 and "ncu not found" in rows[0]["error"] and str(tmp_path) in rows[0]["error"]
    profile.write(str(tmp_path / "results.csv"), rows)
    with (tmp_path / "results.counters.csv").open() as fh:
        back = list(csv.DictReader(fh))
    assert tuple(back[0]) == profile.COUNTER_COLUMNS and back[0]["n"] == "256"


def test_profile_ncu_needs_a_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        attention_forward.main(["--n", "64", "--profile", "ncu", "--out", str(tmp_path / "r.csv")])
    assert exc.value.code == 2 and "needs --device cuda" in capsys.readouterr().err


def test_counters_path_sits_beside_the_results() -> None:
    assert profile.counters_path("/a/results.csv") == "/a/results.counters.csv"
    assert profile.counters_path("/a/out") == "/a/out.counters.csv"
    assert math.isnan(ncu.parse_value("n/a")) and ncu.parse_value("1,234") == 1234.0


def test_perf_without_hardware_events_says_so() -> None:
    """Real `perf stat -x,` output of a VM (this repository's CI machine):
    task-clock counted, every hardware event <not supported>."""
    text = (FIXTURES.parent / "perf" / "attention_forward_n256_vm.perf.csv").read_text()
    rows, failure = perf.parse(text)
    assert [m for m, _, _ in rows] == ["perf.task-clock"] and rows[0][1] > 0
    assert failure is not None and all(e in failure for e in perf.HARDWARE)
    counted = "\n".join(line.replace("<not supported>", "1000") for line in text.splitlines())
    rows, failure = perf.parse(counted)
    values = dict((m, v) for m, v, _ in rows)
    assert failure is None
    assert values["llc_miss_bytes"] == (values["perf.LLC-load-misses"] + values["perf.LLC-store-misses"]) * perf.LINE_BYTES
