"""kernels.torch.gemm_shapes on the CPU at tiny shapes, with --check."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from kernels.torch import gemm_shapes as gs

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *args: str) -> pd.DataFrame:
    out = tmp_path / "out.csv"
    assert gs.main([*args, "--out", str(out)]) == 0
    return pd.read_csv(out)


def test_all_gemms_rows_flops_and_check(tmp_path: Path) -> None:
    df = _run(tmp_path, "--n", "64,128", "--h", "128", "--a", "2,4", "--b", "2", "--v", "200",
              "--repeats", "2", "--warmup", "1", "--check")
    names = ["qkv", "score", "attn_v", "proj", "mlp_up", "mlp_down", "logits", "layer"]
    assert len(df) == 2 * 2 * len(names) * 2  # s x a x gemms x repeats
    assert list(df.columns[:17]) == ["kernel", "impl", "variant", "device", "dtype", "n", "d", "threads", "repeat",
                                     "time_s", "first_call_s", "rel_err", "gpu_model", "omp_proc_bind",
                                     "omp_places", "l2_flush", "backend"]
    assert list(df.columns[17:]) == ["h", "a", "b", "v", "t", "ffn", "m", "k", "nn", "batch", "flops"]
    assert set(df["variant"]) == set(names)
    assert (df["kernel"] == "gemm_shapes").all() and (df["impl"] == "torch").all()
    assert df["rel_err"].max() < 1e-5
    assert (df["time_s"] > 0).all()
    one = df[(df["n"] == 128) & (df["a"] == 4) & (df["repeat"] == 0)].set_index("variant")
    # score: b·a/t = 8 x (s, h/a) x (h/a, s) = 8 x (128, 32) x (32, 128)
    assert tuple(one.loc["score", ["m", "k", "nn", "batch"]]) == (128, 32, 128, 8)
    assert one.loc["score", "flops"] == 2 * 128 * 128 * 32 * 8
    assert one.loc["score", "d"] == 32
    assert tuple(one.loc["qkv", ["m", "k", "nn"]]) == (256, 128, 384)
    assert tuple(one.loc["logits", ["m", "k", "nn"]]) == (256, 128, 200)
    layer_flops = sum(one.loc[v, "flops"] for v in names[:6])
    assert one.loc["layer", "flops"] == layer_flops
    assert pd.isna(one.loc["layer", "m"])


def test_swiglu_gate_and_up(tmp_path: Path) -> None:
    df = _run(tmp_path, "--n", "64", "--h", "96", "--a", "2", "--ffn", "256", "--gemm", "mlp_up,mlp_down",
              "--repeats", "1", "--check")
    up = df[df["variant"] == "mlp_up"].iloc[0]
    assert (up["m"], up["k"], up["nn"], up["batch"]) == (64, 96, 256, 2)
    assert up["flops"] == 2 * 64 * 96 * 256 * 2
    assert df["rel_err"].max() < 1e-5


def test_raw_sweep(tmp_path: Path) -> None:
    df = _run(tmp_path, "--n", "64", "--gemm", "raw", "--m", "100", "--k", "64", "--nn", "33,65",
              "--repeats", "3", "--check")
    assert list(df["nn"].unique()) == [33, 65]
    assert (df["flops"] == 2 * 100 * 64 * df["nn"]).all()
    assert df["h"].isna().all() and df["d"].isna().all()
    assert df["rel_err"].max() < 1e-5


def test_unwritten_output_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gs.Operands, "run", lambda self: self.c)  # never computes: outputs stay NaN
    df = _run(tmp_path, "--n", "64", "--gemm", "raw", "--m", "64", "--k", "64", "--nn", "64",
              "--repeats", "1", "--check")
    assert df["rel_err"].isna().all()


def test_variant_all_and_gemm_alias() -> None:
    p = gs.build_parser()
    args = p.parse_args(["--n", "64", "--variant", "all", "--out", "x.csv"])
    assert gs.resolve(args, p)[0] == list(gs.DEFAULT_GEMMS)
    args = p.parse_args(["--n", "64", "--gemm", "score,layer", "--out", "x.csv"])
    assert gs.resolve(args, p)[0] == ["score", "layer"]


def test_invalid_shapes_are_skipped_or_refused(capsys: pytest.CaptureFixture[str]) -> None:
    p = gs.build_parser()
    args = p.parse_args(["--n", "64", "--h", "96", "--a", "2,5", "--out", "x.csv"])
    _, shapes = gs.resolve(args, p)
    assert [s.a for s in shapes] == [2]
    assert "skipping" in capsys.readouterr().err
    for bad in (["--h", "100", "--a", "3"], ["--gemm", "raw"], ["--gemm", "nope"], ["--h", "0"]):
        with pytest.raises(SystemExit) as exc:
            gs.resolve(p.parse_args(["--n", "64", *bad, "--out", "x.csv"]), p)
        assert exc.value.code == 2


def test_cli_usage_error_exit_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "kernels.torch.gemm_shapes", "--n", "64", "--gemm", "bogus",
                        "--out", str(tmp_path / "o.csv")], cwd=REPO, capture_output=True, text=True, check=False)
    assert r.returncode == 2
    assert "unknown gemm 'bogus'" in r.stderr


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("h200_shapes", REPO / "scripts" / "h200_shapes.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["shape_gpt3_2p7b", "shape_vocab", "shape_wave_k", "shape_heads",
                                  "shape_swiglu", "shape_hidden"])
def test_experiment_yamls_give_valid_program_arguments(name: str) -> None:
    argv = _script().experiment_argv(name, Path("o.csv"), "cuda", "bf16")
    p = gs.build_parser()
    args = p.parse_args(argv[3:])
    gemms, shapes = gs.resolve(args, p)
    assert args.n == [2048] and args.dtype == "bf16"
    if name == "shape_wave_k":
        assert gemms == ["raw"] and args.m == [27648] and args.k == [4096]
        assert args.nn[0] == 128 and args.nn[-1] == 8192 and len(args.nn) == 127
    else:
        assert shapes
    if name == "shape_gpt3_2p7b":
        assert [s.a for s in shapes] == [20, 32, 40, 64] and {s.h for s in shapes} == {2560}
    if name == "shape_vocab":
        assert {50257, 50304} <= {s.v for s in shapes}
    if name == "shape_swiglu":
        assert 11008 in {s.ffn for s in shapes}


def test_a_stopped_sweep_leaves_every_finished_s_in_the_tmp_file(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed in its second s (a walltime, a cancel): the first s's rows are on disk in FILE.tmp,
    what campaign.results.partial ingests, and no file that looks complete."""
    real = gs.run_shape
    seen: list[int] = []

    def stop_in_second_s(shape, s, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(s)
        if s == 128:
            raise KeyboardInterrupt  # not caught by the program, like the signal of a kill
        return real(shape, s, *args, **kwargs)

    monkeypatch.setattr(gs, "run_shape", stop_in_second_s)
    out = tmp_path / "out.csv"
    with pytest.raises(KeyboardInterrupt):
        gs.main(["--n", "64,128", "--h", "128", "--a", "2", "--gemm", "qkv,proj", "--repeats", "2",
                 "--out", str(out)])
    assert seen == [64, 128] and not out.exists()
    df = pd.read_csv(f"{out}.tmp")
    assert set(df["n"]) == {64} and len(df) == 2 * 2  # gemms x repeats of the finished s
