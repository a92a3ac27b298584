"""GPU clocks and throttle reasons in `campaign compare`'s provenance diff:
the jobs' rows carry them (kernels/torch/gpu_state.py), the
ledger keeps them, compare shows what differs under "gpu clocks".

Real CLI, real local-backend jobs and SQLite ledger; the kernel is the fake
one writing the columns a CUDA torch kernel writes (FAKE_GPU_STATE), since no
GPU is here (the columns themselves are written by the real program on the
H200: tests/kernels/test_torch_kernels.py::test_cuda_short_calls_batched)."""

from __future__ import annotations

import json
from pathlib import Path

from analysis.provenance_diff import category, provenance_diff
from campaign.cli.compare_provenance import provenance_lines
from tests.conftest import run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

FAKE_ENV = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}


def _submit(led: Path, cwd: Path, name: str, state: str) -> None:
    env = dict(FAKE_ENV, FAKE_GPU_STATE=state)
    proc = run_cli("--ledger", str(led), "submit", "experiment=compare_ok", f"campaign.name={name}",
                   cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr


def test_compare_shows_the_clock_and_throttle_change_of_the_jobs(tmp_path: Path) -> None:
    led = tmp_path / "ledger.sqlite"
    _submit(led, tmp_path, "cool", "1980,3201,none")
    _submit(led, tmp_path, "capped", "1410,3201,sw_power_cap+power_limit")
    proc = run_cli("--ledger", str(led), "compare", "cool", "capped")
    assert proc.returncode == 0, proc.stderr
    assert "gpu clocks: gpu.sm_clock_mhz: 1980 -> 1410" in proc.stdout
    assert "gpu clocks: gpu.throttle_reasons: none -> sw_power_cap+power_limit" in proc.stdout
    assert "mem_clock_mhz" not in proc.stdout  # the same on both sides: not a difference
    js = run_cli("--ledger", str(led), "compare", "cool", "capped", "--format", "json")
    assert js.returncode == 0, js.stderr
    diffs = {d["key"]: d for d in json.loads(js.stdout)["provenance"] if d["category"] == "gpu clocks"}
    assert set(diffs) == {"gpu.sm_clock_mhz", "gpu.throttle_reasons"}
    assert diffs["gpu.sm_clock_mhz"]["base"] == ["1980"] and diffs["gpu.sm_clock_mhz"]["new"] == ["1410"]
    back = run_cli("--ledger", str(led), "compare", "capped", "cool")
    assert back.returncode == 0 and "gpu clocks: gpu.sm_clock_mhz: 1410 -> 1980" in back.stdout, back.stderr


def test_imported_rows_carry_their_clocks_too(tmp_path: Path) -> None:
    """Rows imported from another site's CSV (`campaign import --campaign`)
    with the clock columns compare like a campaign's jobs."""
    led = tmp_path / "ledger.sqlite"
    head = ("cluster,partition,kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,"
            "gpu_sm_mhz,gpu_mem_mhz,gpu_throttle\n")
    for name, sm, why in (("siteA", "1980", "none"), ("siteB", "1755", "hw_thermal_slowdown")):
        rows = "".join(f"h200,gpu,decode,torch,sdpa,cuda,bf16,{n},128,1,{r},{1e-5 * (1 + r / 100)},{sm},3201,{why}\n"
                       for n in (1024, 2048) for r in range(4))
        (tmp_path / f"{name}.csv").write_text(head + rows)
        proc = run_cli("--ledger", str(led), "import", str(tmp_path / f"{name}.csv"), "--campaign", name)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("--ledger", str(led), "compare", "siteA", "siteB")
    assert proc.returncode == 0, proc.stderr
    assert "gpu clocks: gpu.sm_clock_mhz: 1980 -> 1755" in proc.stdout
    assert "gpu clocks: gpu.throttle_reasons: none -> hw_thermal_slowdown" in proc.stdout
    # rows that recorded no clocks (CPU, an older program): one side only, never "changed"
    (tmp_path / "old.csv").write_text("".join(",".join(line.split(",")[:12]) + "\n"
                                              for line in (tmp_path / "siteA.csv").read_text().splitlines()))
    assert run_cli("--ledger", str(led), "import", str(tmp_path / "old.csv"), "--campaign", "old").returncode == 0
    one = run_cli("--ledger", str(led), "compare", "siteA", "old")
    assert one.returncode == 0, one.stderr
    assert "gpu clocks: 3 key(s) recorded on one side only" in one.stdout
    assert "gpu clocks: gpu." not in one.stdout  # no "base -> new" line
    # a date selection takes job rows only: imported rows have no start time
    dated = run_cli("--ledger", str(led), "compare", "campaign=siteA,since=2000-01-01", "siteB")
    assert dated.returncode == 2 and "no usable results" in dated.stderr


def test_gpu_records_are_their_own_category_and_list_every_value_seen() -> None:
    base = [{"gpu": {"sm_clock_mhz": "1980", "throttle_reasons": "none"}}]
    new = [{"gpu": {"sm_clock_mhz": "1980", "throttle_reasons": "none"}},
           {"gpu": {"sm_clock_mhz": "1755", "throttle_reasons": "hw_thermal_slowdown"}}]
    diffs = provenance_diff(base, new)
    assert [d.category for d in diffs] == ["gpu clocks", "gpu clocks"]
    assert provenance_lines(diffs) == ["gpu clocks: gpu.sm_clock_mhz: 1980 -> 1755 | 1980",
                                  "gpu clocks: gpu.throttle_reasons: none -> hw_thermal_slowdown | none"]
    assert category("gpu.sm_clock_mhz") == "gpu clocks" and category("gpu_model") == "node"
