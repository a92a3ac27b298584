"""The C and Fortran kernel programs against the kernel program contract.

Built once per session with `make -C kernels` (incremental).  Every kernel x
impl x variant runs at n = 64, 100 (not a tile multiple), 256 and d = 32, 64
with --check; --dump outputs are checked a second time against float64 torch,
independently of the programs' own references.  Fortran tests skip when
gfortran is not installed.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
BUILD = KERNELS / "build"

COLUMNS = [
    "kernel",
    "impl",
    "variant",
    "device",
    "dtype",
    "n",
    "d",
    "threads",
    "repeat",
    "time_s",
    "first_call_s",
    "rel_err",
    "gpu_model",
    "omp_proc_bind",
    "omp_places",
    "l2_flush",
    "backend",
]

# (kernel, variant, takes --ff)
CASES = [
    ("attention_forward", "naive", False),
    ("attention_forward", "memopt", False),
    ("attention_backward", "naive", False),
    ("attention_fwdbwd", "fused", False),
    ("decode", "naive", False),
    ("block_forward", "naive", True),
    ("mlp_backward", "naive", True),
]
HAVE_FC = shutil.which("gfortran") is not None
IMPLS = ["c", pytest.param("fortran", marks=pytest.mark.skipif(not HAVE_FC, reason="gfortran not installed"))]


@pytest.fixture(scope="session")
def built() -> Path:
    """Build the C programs (and the Fortran ones where gfortran exists)."""
    targets = ["c", "fortran"] if HAVE_FC else ["c"]
    proc = subprocess.run(["make", "-C", str(KERNELS), *targets], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return BUILD


def run(
    binary: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("OMP_PROC_BIND", "OMP_PLACES")}
    full_env["OMP_WAIT_POLICY"] = "passive"  # idle threads sleep: libgomp's spinning was most of a small run's CPU
    full_env.update(env or {})
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, env=full_env, timeout=timeout, check=False
    )


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def run_rows(
    built: Path, impl: str, kernel: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> list[dict[str, str]]:
    out = tmp_path / f"{impl}_{kernel}.csv"
    proc = run(built / impl / kernel, *args, "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert not Path(str(out) + ".tmp").exists()
    header, rows = read_csv(out)
    assert header[: len(COLUMNS)] == COLUMNS
    return rows


# ---- correctness with the in-program float64 reference --------------------------------


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("d", [32, 64])
@pytest.mark.parametrize("kernel,variant,takes_ff", CASES)
def test_check_small_sizes(
    built: Path, tmp_path: Path, impl: str, kernel: str, variant: str, takes_ff: bool, d: int
) -> None:
    rows = run_rows(
        built,
        impl,
        kernel,
        tmp_path,
        "--n",
        "64,100,256",
        "--d",
        str(d),
        "--variant",
        variant,
        "--check",
        "--repeats",
        "2",
        "--warmup",
        "1",
    )
    assert [(int(r["n"]), int(r["repeat"])) for r in rows] == [(n, r) for n in (64, 100, 256) for r in (0, 1)]
    for r in rows:
        assert (r["kernel"], r["impl"], r["variant"], r["device"], r["dtype"]) == (kernel, impl, variant, "cpu", "fp32")
        assert int(r["d"]) == d
        assert r["gpu_model"] == "" and r["backend"] == "" and r["l2_flush"] == "0"
        assert float(r["time_s"]) > 0 and float(r["first_call_s"]) > 0
        err = float(r["rel_err"])
        assert 0 < err <= 1e-4, (r["n"], err)  # 0 would mean the check compared nothing
        if takes_ff:
            assert int(r["ff"]) == 64 * math.ceil((8 * d / 3) / 64)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kernel,variant", [("attention_forward", "memopt"), ("attention_fwdbwd", "fused")])
def test_tiled_kernels_with_d_off_the_vector_width(
    built: Path, tmp_path: Path, impl: str, kernel: str, variant: str
) -> None:
    rows = run_rows(
        built, impl, kernel, tmp_path, "--n", "1,65,130", "--d", "40", "--variant", variant, "--check", "--repeats", "1"
    )
    assert [r["n"] for r in rows] == ["1", "65", "130"]
    assert all(0 <= float(r["rel_err"]) <= 1e-4 for r in rows)


def test_first_call_is_shared_by_the_rows_of_one_n(built: Path, tmp_path: Path) -> None:
    rows = run_rows(built, "c", "attention_forward", tmp_path, "--n", "64,128", "--repeats", "3")
    assert len(rows) == 6
    assert len({r["first_call_s"] for r in rows[:3]}) == 1
    assert rows[0]["first_call_s"] != rows[3]["first_call_s"]
    assert all(r["rel_err"] == "" for r in rows)  # no --check: empty


@pytest.mark.parametrize("impl", IMPLS)
def test_forward_checks_a_row_subset_beyond_4096(built: Path, tmp_path: Path, impl: str) -> None:
    rows = run_rows(
        built,
        impl,
        "attention_forward",
        tmp_path,
        "--n",
        "4200",
        "--variant",
        "memopt",
        "--check",
        "--repeats",
        "1",
        "--warmup",
        "0",
    )
    assert 0 < float(rows[0]["rel_err"]) <= 1e-4


@pytest.mark.parametrize("impl", IMPLS)
def test_fwdbwd_leaves_rel_err_empty_beyond_4096(built: Path, tmp_path: Path, impl: str) -> None:
    args = ["--n", "100,4097", "--d", "32", "--check", "--repeats", "1", "--warmup", "0"]  # d = 32: the rule is on n
    rows = run_rows(built, impl, "attention_fwdbwd", tmp_path, *args)
    assert 0 < float(rows[0]["rel_err"]) <= 1e-4
    assert rows[1]["n"] == "4097" and rows[1]["rel_err"] == ""


@pytest.mark.parametrize("impl", IMPLS)
def test_decode_scales_to_a_million_keys(built: Path, tmp_path: Path, impl: str) -> None:
    args = ["--n", "1048576", "--d", "32", "--check", "--repeats", "1", "--warmup", "0"]  # d = 32: n is the point
    rows = run_rows(built, impl, "decode", tmp_path, *args)
    assert 0 < float(rows[0]["rel_err"]) <= 1e-4 and rows[0]["d"] == "32"


# ---- --dump against float64 torch -----------------------------------------------------


def load_dump(path: Path) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    meta = json.loads((path / "meta.json").read_text())
    arrays = {}
    for name, spec in meta["arrays"].items():
        data = np.fromfile(path / spec["file"], dtype="<f4")
        arrays[name] = data.reshape(spec["shape"])
    return meta, arrays


def dumped(built: Path, tmp_path: Path, impl: str, kernel: str, *args: str) -> dict[str, np.ndarray]:
    out = tmp_path / f"dump_{impl}_{kernel}"
    run_rows(built, impl, kernel, tmp_path, "--n", "64,100", "--repeats", "1", "--dump", str(out), *args)
    meta, arrays = load_dump(out)
    assert meta["kernel"] == kernel and meta["impl"] == impl and meta["n"] == 100
    return arrays


def rel(out: np.ndarray, ref: object) -> float:
    import torch

    assert isinstance(ref, torch.Tensor)
    o = torch.from_numpy(out.astype(np.float64))
    assert o.shape == ref.shape
    return float(torch.linalg.vector_norm(o - ref) / torch.linalg.vector_norm(ref))


def t64(x: np.ndarray, grad: bool = False) -> object:
    import torch

    return torch.from_numpy(x.astype(np.float64)).requires_grad_(grad)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("variant", ["naive", "memopt"])
def test_forward_dump_matches_torch(built: Path, tmp_path: Path, impl: str, variant: str) -> None:
    import torch

    a = dumped(built, tmp_path, impl, "attention_forward", "--variant", variant)
    q, k, v = (t64(a[x]) for x in "qkv")
    assert a["q"].shape == (100, 64) and a["o"].shape == (100, 64)
    ref = torch.softmax(q @ k.T / 8.0, dim=-1) @ v
    assert rel(a["o"], ref) < 1e-5
    assert np.all(a["q"] != 0) and abs(float(a["q"].std()) - 1) < 0.1  # seeded normal, never zeros


@pytest.mark.parametrize("impl", IMPLS)
def test_backward_dump_matches_torch(built: Path, tmp_path: Path, impl: str) -> None:
    import torch

    a = dumped(built, tmp_path, impl, "attention_backward")
    q, k, v = (t64(a[x], grad=True) for x in "qkv")
    p = torch.softmax(q @ k.T / 8.0, dim=-1)
    assert rel(a["p"], p.detach()) < 1e-5
    (p @ v).backward(t64(a["do"]))
    for name, t in (("dq", q), ("dk", k), ("dv", v)):
        assert rel(a[name], t.grad) < 1e-5, name


@pytest.mark.parametrize("impl", IMPLS)
def test_fwdbwd_dump_matches_torch(built: Path, tmp_path: Path, impl: str) -> None:
    import torch

    a = dumped(built, tmp_path, impl, "attention_fwdbwd")
    q, k, v = (t64(a[x], grad=True) for x in "qkv")
    s = q @ k.T / 8.0
    o = torch.softmax(s, dim=-1) @ v
    assert rel(a["o"], o.detach()) < 1e-5
    assert rel(a["lse"], torch.logsumexp(s, dim=-1).detach()) < 1e-5
    o.backward(t64(a["do"]))
    for name, t in (("dq", q), ("dk", k), ("dv", v)):
        assert rel(a[name], t.grad) < 1e-5, name


@pytest.mark.parametrize("impl", IMPLS)
def test_decode_dump_matches_torch(built: Path, tmp_path: Path, impl: str) -> None:
    import torch

    a = dumped(built, tmp_path, impl, "decode")
    q, k, v = (t64(a[x]) for x in "qkv")
    ref = torch.softmax(k @ q / 8.0, dim=0) @ v
    assert rel(a["o"], ref) < 1e-5


def gated_mlp(xh: object, wg: object, wu: object, wd: object) -> object:
    import torch

    return (torch.nn.functional.silu(xh @ wg) * (xh @ wu)) @ wd


@pytest.mark.parametrize("impl", IMPLS)
def test_block_dump_matches_torch(built: Path, tmp_path: Path, impl: str) -> None:
    import torch

    a = dumped(built, tmp_path, impl, "block_forward", "--ff", "160")
    x, g, wg, wu, wd = (t64(a[n]) for n in ("x", "g", "w_gate", "w_up", "w_down"))
    assert a["w_gate"].shape == (64, 160) and a["w_down"].shape == (160, 64)
    xh = x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + 1e-6) * g
    assert rel(a["y"], x + gated_mlp(xh, wg, wu, wd)) < 1e-5


@pytest.mark.parametrize("impl", IMPLS)
def test_mlp_backward_dump_matches_torch(built: Path, tmp_path: Path, impl: str) -> None:
    a = dumped(built, tmp_path, impl, "mlp_backward")
    xh, wg, wu, wd = (t64(a[n], grad=True) for n in ("xhat", "w_gate", "w_up", "w_down"))
    gated_mlp(xh, wg, wu, wd).backward(t64(a["dy"]))
    for name, t in (("dxhat", xh), ("dw_gate", wg), ("dw_up", wu), ("dw_down", wd)):
        assert rel(a[name], t.grad) < 1e-5, name


@pytest.mark.skipif(not HAVE_FC, reason="gfortran not installed")
def test_c_and_fortran_draw_the_same_inputs(built: Path, tmp_path: Path) -> None:
    c = dumped(built, tmp_path, "c", "block_forward")
    f = dumped(built, tmp_path, "fortran", "block_forward")
    for name in ("x", "g", "w_gate", "w_up", "w_down"):
        np.testing.assert_array_equal(c[name], f[name])
    assert rel(f["y"], t64(c["y"])) < 1e-5


# ---- arguments, threads, environment ------------------------------------------------------

BAD_ARGS = [
    ["--n", "64", "--bogus", "1"],
    ["--n", "0"],
    ["--n", "abc"],
    ["--n", "64,,128"],
    ["--n", "-64"],
    ["--n", "64", "--dtype", "bf16"],
    ["--n", "64", "--device", "cuda"],
    ["--n", "64", "--variant", "flash"],
    ["--n", "64", "--d", "0"],
    ["--n", "64", "--threads", "0"],
    ["--n", "64", "--repeats", "x"],
    ["--n", "64", "--ff", "128"],  # attention takes no --ff
    ["--n", "64", "--d"],  # missing value
    ["--d", "64"],  # missing --n
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("args", BAD_ARGS, ids=[" ".join(a) for a in BAD_ARGS])
def test_bad_arguments_exit_2_with_one_line(built: Path, tmp_path: Path, impl: str, args: list[str]) -> None:
    out = tmp_path / "x.csv"
    proc = run(built / impl / "attention_forward", *args, "--out", str(out))
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "usage" in lines[0], proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("impl", IMPLS)
def test_missing_out_is_a_usage_error(built: Path, impl: str) -> None:
    proc = run(built / impl / "decode", "--n", "64")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "--out" in proc.stderr


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("threads", [1, 2])
def test_threads_and_omp_environment_are_recorded(built: Path, tmp_path: Path, impl: str, threads: int) -> None:
    env = {"OMP_PROC_BIND": "close", "OMP_PLACES": "{0},{1}"}
    rows = run_rows(
        built, impl, "decode", tmp_path, "--n", "1000", "--threads", str(threads), "--repeats", "2", env=env
    )
    assert [r["threads"] for r in rows] == [str(threads)] * 2
    assert all(r["omp_proc_bind"] == "close" and r["omp_places"] == "{0},{1}" for r in rows)


@pytest.mark.parametrize("impl", IMPLS)
def test_default_threads_follow_omp_num_threads(built: Path, tmp_path: Path, impl: str) -> None:
    rows = run_rows(built, impl, "decode", tmp_path, "--n", "64", "--repeats", "1", env={"OMP_NUM_THREADS": "3"})
    assert rows[0]["threads"] == "3" and rows[0]["omp_proc_bind"] == "" and rows[0]["omp_places"] == ""


@pytest.mark.parametrize("impl", IMPLS)
def test_equals_form_and_seed_change_the_inputs(built: Path, tmp_path: Path, impl: str) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = dumped(built, tmp_path / "a", impl, "decode")
    same = dumped(built, tmp_path / "b", impl, "decode", "--seed=0")
    b = dumped(built, tmp_path / "b", impl, "decode", "--seed=7")
    np.testing.assert_array_equal(a["k"], same["k"])
    assert not np.array_equal(a["k"], b["k"])


# ---- build ---------------------------------------------------------------------------------


def test_make_c_works_without_a_fortran_compiler(tmp_path: Path) -> None:
    build = tmp_path / "build"
    proc = subprocess.run(
        ["make", "-C", str(KERNELS), f"BUILD={build}", "FC=no-such-fortran-compiler", "c"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (build / "c" / "decode").exists()
    proc = subprocess.run(
        ["make", "-C", str(KERNELS), f"BUILD={build}", "FC=no-such-fortran-compiler"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "Fortran compiler 'no-such-fortran-compiler' not found" in proc.stderr
    assert "make -C kernels c" in proc.stderr
