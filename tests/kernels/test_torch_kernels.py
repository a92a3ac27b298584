"""Torch kernel programs against their contract (docs/contracts.md).

CPU tests, which run everywhere; the CUDA ones are test_torch_kernels_cuda.py.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels.torch import harness, reference
from tests.kernels.torch_programs import HAS_CUDA, KERNELS, TOL, kernel_module, read_csv, run_kernel

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("torch_threads_restored")


@pytest.mark.parametrize(("name", "variant", "backend"), KERNELS, ids=lambda x: str(x))
def test_cpu_fp32_check_and_csv(tmp_path: Path, name: str, variant: str, backend: str) -> None:
    code, header, rows = run_kernel(
        name, tmp_path, "--n", "64,100,256", "--variant", variant, "--check",
        "--repeats", "2", "--warmup", "1")
    assert code == 0
    assert header == list(harness.CSV_COLUMNS)
    assert [(r["n"], r["repeat"]) for r in rows] == [
        ("64", "0"), ("64", "1"), ("100", "0"), ("100", "1"), ("256", "0"), ("256", "1")]
    for r in rows:
        assert (r["kernel"], r["impl"], r["variant"], r["device"], r["dtype"], r["d"]) == (
            name, "torch", variant, "cpu", "fp32", "64")
        assert r["backend"] == backend
        assert r["gpu_model"] == "" and r["l2_flush"] == "0"
        assert int(r["threads"]) == torch.get_num_threads()
        assert float(r["time_s"]) > 0 and float(r["first_call_s"]) > 0
        err = float(r["rel_err"])
        assert math.isfinite(err) and err <= TOL["fp32"], (r["n"], err)
    assert not (tmp_path / f"{name}.csv.tmp").exists()


@pytest.mark.parametrize(("name", "variant", "backend"),
                         [k for k in KERNELS if k[1] != "compiled"], ids=lambda x: str(x))
def test_cpu_bf16_within_tolerance(tmp_path: Path, name: str, variant: str, backend: str) -> None:
    code, _, rows = run_kernel(name, tmp_path, "--n", "100", "--variant", variant,
                               "--dtype", "bf16", "--check", "--repeats", "1", "--warmup", "0")
    assert code == 0
    err = float(rows[0]["rel_err"])
    # bf16 rounding must be visible (else the check compared the wrong thing)
    assert 1e-4 < err <= TOL["bf16"]


@pytest.mark.parametrize(("name", "variant"), [
    ("attention_forward", "naive"), ("attention_forward", "memopt"),
    ("attention_backward", "naive"), ("attention_fwdbwd", "fused"),
])
def test_large_n_checks_row_subset(tmp_path: Path, name: str, variant: str) -> None:
    n = reference.FULL_CHECK_MAX_N + 100
    code, _, rows = run_kernel(name, tmp_path, "--n", str(n), "--variant", variant, "--d", "16",
                               "--check", "--repeats", "1", "--warmup", "0")
    assert code == 0
    assert float(rows[0]["rel_err"]) <= TOL["fp32"]


def test_without_check_rel_err_is_empty(tmp_path: Path) -> None:
    code, _, rows = run_kernel("decode", tmp_path, "--n", "64", "--repeats", "3")
    assert code == 0
    assert [r["rel_err"] for r in rows] == ["", "", ""]
    assert [r["repeat"] for r in rows] == ["0", "1", "2"]


def test_unwritten_output_gives_nan(tmp_path: Path) -> None:
    """A kernel that forgets to write its poisoned output must fail the check."""

    def build(ctx: harness.CaseContext) -> harness.Case:
        out = ctx.empty(ctx.n, ctx.d)
        ref = torch.ones(ctx.n, ctx.d, dtype=torch.float64)
        return harness.Case(run=lambda: (out,), check=lambda o: harness.rel_err([(o[0], ref)]),
                            poison=harness.nan_poison(out))

    spec = harness.KernelSpec(name="lazy", variants=("naive",), build=build,
                              peak_bytes=lambda *a: 0)
    out = tmp_path / "lazy.csv"
    assert harness.main(spec, ["--n", "8", "--check", "--repeats", "1", "--out", str(out)]) == 0
    assert read_csv(out)[1][0]["rel_err"] == "nan"


def test_rel_err_values() -> None:
    ref = torch.tensor([3.0, 4.0], dtype=torch.float64)
    assert harness.rel_err([(torch.tensor([3.0, 4.0]), ref)]) == 0.0
    assert harness.rel_err([(torch.tensor([3.0, 4.5]), ref)]) == pytest.approx(0.1)
    # the worst output wins, not an average
    worst = harness.rel_err([(torch.tensor([3.0, 4.0]), ref), (torch.tensor([0.0, 4.0]), ref)])
    assert worst == pytest.approx(0.6)
    assert math.isnan(harness.rel_err([(torch.tensor([math.inf, 4.0]), ref)]))


def test_inputs_are_seeded_fresh_and_nonzero() -> None:
    args = argparse.Namespace()

    def ctx(n: int, seed: int) -> harness.CaseContext:
        return harness.CaseContext(n=n, d=4, variant="naive", device=torch.device("cpu"),
                                   dtype=torch.float32, args=args, seed=seed)

    a, b = ctx(8, 0).randn(8, 4), ctx(8, 0).randn(8, 4)
    assert torch.equal(a, b)
    assert not torch.equal(a, ctx(8, 1).randn(8, 4))
    assert not torch.equal(a[:4], ctx(4, 0).randn(4, 4))
    assert bool((a != 0).all())
    assert 0.3 < float(a.std()) < 2.0


def test_reference_backward_matches_autograd() -> None:
    gen = torch.Generator().manual_seed(3)
    q, k, v, do = (torch.randn(40, 8, generator=gen, dtype=torch.float64) for _ in range(4))
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
    o = torch.softmax(leaves[0] @ leaves[1].T / math.sqrt(8), dim=-1) @ leaves[2]
    expect = torch.autograd.grad(o, leaves, do)
    got = reference.attention_backward_from_p(q, k, v, do, reference.softmax_rows(q, k))
    for g, e in zip(got, expect, strict=True):
        assert g is not None
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)
    rows = torch.tensor([0, 7, 39])
    dq_rows, dk, dv = reference.attention_backward_from_p(
        q, k, v, do, reference.softmax_rows(q, k, rows), rows)
    torch.testing.assert_close(dq_rows, expect[0][rows], rtol=1e-10, atol=1e-12)
    assert dk is None and dv is None


def test_reference_mlp_backward_matches_autograd() -> None:
    gen = torch.Generator().manual_seed(4)
    xh, dy = (torch.randn(10, 6, generator=gen, dtype=torch.float64) for _ in range(2))
    wg, wu = (torch.randn(6, 9, generator=gen, dtype=torch.float64) for _ in range(2))
    wd = torch.randn(9, 6, generator=gen, dtype=torch.float64)
    leaves = [t.clone().requires_grad_(True) for t in (xh, wg, wu, wd)]
    y = (torch.nn.functional.silu(leaves[0] @ leaves[1]) * (leaves[0] @ leaves[2])) @ leaves[3]
    expect = torch.autograd.grad(y, leaves, dy)
    got = reference.mlp_backward(xh, dy, wg, wu, wd)
    for g, e in zip(got, (expect[0], expect[1], expect[2], expect[3]), strict=True):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)


def test_check_rows_subset() -> None:
    assert reference.check_rows(reference.FULL_CHECK_MAX_N) is None
    rows = reference.check_rows(100_000)
    assert rows is not None
    assert len(rows) == reference.CHECK_ROWS
    assert int(rows[0]) == 0 and int(rows[-1]) == 99_999


@pytest.mark.parametrize("bad", [
    ["--n", "0"], ["--n", "64,x"], ["--n", "64,"], ["--n", "64", "--threads", "0"],
    ["--n", "64", "--repeats", "0"], ["--n", "64", "--warmup", "-1"], ["--n", "64", "--d", "0"],
    ["--n", "64", "--device", "tpu"], ["--n", "64", "--dtype", "fp64"],
    ["--n", "64", "--variant", "memopt"], ["--n", "64", "--bogus", "1"], ["--repeats", "2"],
])
def test_bad_args_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        kernel_module("decode").main([*bad, "--out", str(tmp_path / "x.csv")])
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_missing_out_directory_exit_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        kernel_module("decode").main(["--n", "64", "--out", str(tmp_path / "no" / "x.csv")])
    assert exc.value.code == 2


@pytest.mark.skipif(HAS_CUDA, reason="tests the CPU-only node")
def test_cuda_requested_without_cuda_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        kernel_module("decode").main(["--n", "64", "--device", "cuda", "--out", str(tmp_path / "x.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CUDA is not available" in err[0]


def test_n_that_does_not_fit_fails_clearly_and_keeps_done_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, rows = run_kernel("attention_forward", tmp_path, "--n", "64,4000000",
                               "--variant", "naive", "--repeats", "1")
    assert code == 1
    assert "n=4000000" in capsys.readouterr().err
    assert [r["n"] for r in rows] == ["64"]


def test_l2_flush_recorded(tmp_path: Path) -> None:
    code, _, rows = run_kernel("decode", tmp_path, "--n", "64", "--repeats", "1", "--l2-flush")
    assert code == 0 and rows[0]["l2_flush"] == "1"


def test_block_ff_default_and_override(tmp_path: Path) -> None:
    from kernels.torch.block_forward import default_ff

    # 64 * ceil((8 d / 3) / 64): 170.67 -> 171 blocks of 64 for d = 4096
    assert (default_ff(64), default_ff(128), default_ff(4096)) == (192, 384, 10944)
    code, _, rows = run_kernel("mlp_backward", tmp_path, "--n", "50", "--d", "24", "--ff", "40",
                               "--check", "--repeats", "1")
    assert code == 0 and float(rows[0]["rel_err"]) <= TOL["fp32"]


@pytest.mark.parametrize("threads", ["1", "2"])
def test_python_m_from_repo_root_reports_threads_and_omp_env(tmp_path: Path, threads: str) -> None:
    out = tmp_path / "d.csv"
    env = dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores")
    proc = subprocess.run(
        [sys.executable, "-m", "kernels.torch.decode", "--n", "64,128", "--threads", threads,
         "--repeats", "2", "--check", "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    _, rows = read_csv(out)
    assert len(rows) == 4
    assert {r["threads"] for r in rows} == {threads}
    assert {(r["omp_proc_bind"], r["omp_places"]) for r in rows} == {("close", "cores")}


def test_python_m_bad_arg_exit_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "kernels.torch.attention_forward", "--n", "-3",
                           "--out", "x.csv"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 2
    assert "usage:" in proc.stderr and "Traceback" not in proc.stderr


def test_splitk_on_cpu_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        kernel_module("decode").main(["--n", "64", "--variant", "splitk",
                                      "--out", str(tmp_path / "x.csv")])
    assert exc.value.code == 2
