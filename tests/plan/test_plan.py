"""Planning: expansion, skipping, keys, validation against partitions."""

from __future__ import annotations

import pytest

from campaign.config import load_config
from campaign.planning.plan import plan
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import ConfigError


def test_smoke_expands_to_one_run_per_job() -> None:
    p = plan(load_config(["experiment=smoke"]))
    labels = sorted((r.kernel, r.variant, r.threads) for r in p.runs)
    assert labels == [("attention_forward", "memopt", 1), ("attention_forward", "memopt", 2),
                      ("attention_forward", "naive", 1), ("attention_forward", "naive", 2), ("decode", "naive", 1)]
    fwd = next(r for r in p.runs if r.kernel == "attention_forward")
    assert fwd.n == (64, 128, 256, 512)  # the whole n-sweep in one process


def test_keys_are_deterministic_and_sensitive() -> None:
    a = plan(load_config(["experiment=smoke"])).runs
    b = plan(load_config(["experiment=smoke"])).runs
    assert [r.key for r in a] == [r.key for r in b]
    c = plan(load_config(["experiment=smoke", "experiment.repeats=7"])).runs
    assert not {r.key for r in a} & {r.key for r in c}
    assert len({r.key for r in a}) == len(a)


def test_command_follows_the_kernel_contract() -> None:
    run = plan(load_config(["experiment=smoke"])).runs[0]
    argv = run.command("/tmp/out.csv")
    assert argv[argv.index("--n") + 1] == "64,128,256,512"
    assert argv[-2:] == ["--out", "/tmp/out.csv"]
    assert "--check" in argv and argv[argv.index("--threads") + 1] == str(run.threads)


def test_runspec_json_roundtrip() -> None:
    run = plan(load_config(["experiment=smoke"])).runs[0]
    again = RunSpec.from_json(run.to_json())
    assert again == run and again.key == run.key


def test_unsupported_combinations_are_skipped_and_reported() -> None:
    cfg = load_config(["cluster=delta", "experiment=forward_scaling", "cluster.account=x",
                       "experiment.sweeps.0.partitions=[gpuA100x4]", "experiment.sweeps.0.dtypes=[bf16]"])
    p = plan(cfg)
    assert {r.impl for r in p.runs} == {"torch"}  # C/Fortran have neither CUDA nor bf16
    assert all(r.device == "cuda" and r.gpus == 1 for r in p.runs)
    assert any("c/naive" in s and "device cuda" in s for s in p.skipped)


def test_threads_above_partition_cores_rejected() -> None:
    cfg = load_config(["cluster=anvil", "cluster.account=x", "experiment=forward_scaling",
                       "experiment.sweeps.0.partitions=[shared]", "experiment.sweeps.0.threads=[64,256]"])
    with pytest.raises(ConfigError, match=r"\[256\] exceed the 128"):
        plan(cfg)


def test_missing_account_is_a_clear_error() -> None:
    cfg = load_config(["cluster=delta", "experiment=forward_scaling"])
    with pytest.raises(ConfigError, match="requires an account"):
        plan(cfg)


def test_walltime_above_partition_max_rejected() -> None:
    cfg = load_config(["cluster=localslurm", "experiment=smoke", "experiment.walltime_min=5",
                       "experiment.sweeps.0.partitions=[short]", "experiment.sweeps.1.partitions=[short]"])
    with pytest.raises(ConfigError, match="exceeds partition short"):
        plan(cfg)


@pytest.mark.parametrize("n", ["[0,64]", "[-1]", "[]"])
def test_non_positive_sizes_rejected(n: str) -> None:
    with pytest.raises(ConfigError, match="positive"):
        plan(load_config(["experiment=smoke", f"experiment.sweeps.0.n={n}"]))


def test_grid_expands_into_runs() -> None:
    cfg = load_config(["experiment=smoke", "+experiment.sweeps.0.grid={ff: [128, 256]}"])
    runs = [r for r in plan(cfg).runs if r.kernel == "attention_forward"]
    assert sorted({r.extra_args for r in runs}) == [(("ff", "128"),), (("ff", "256"),)]
    assert len(runs) == 8
