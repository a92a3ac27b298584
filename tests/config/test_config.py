"""Config composition: groups, overrides, types, required fields, site facts."""

from __future__ import annotations

import pytest

from campaign.config import load_config
from campaign.errors import ConfigError


def test_default_is_local_smoke() -> None:
    cfg = load_config([])
    assert cfg.cluster.name == "local"
    assert cfg.cluster.backend == "local"
    assert cfg.experiment.name == "smoke"
    assert {"attention_forward", "decode"} <= set(cfg.kernels)
    part = cfg.cluster.partitions["local"]
    assert part.cores >= 1 and part.name == "local"


def test_overrides_reach_typed_fields() -> None:
    cfg = load_config(["experiment=smoke", "experiment.repeats=5", "cluster=delta",
                       "cluster.partitions.cpu.account=abc-delta-cpu"])
    assert cfg.experiment.repeats == 5
    cpu = cfg.cluster.partitions["cpu"]
    assert (cpu.sockets, cpu.cores_per_socket, cpu.numa_domains, cpu.cores) == (2, 64, 8, 128)
    assert cpu.account == "abc-delta-cpu"
    assert set(cfg.cluster.partitions) == {"cpu", "gpuA100x4", "gpuH200x8", "gpuMI100x8"}
    assert cfg.cluster.partitions["gpuA100x4"].gpus == 4


def test_anvil_cpu_node_shape() -> None:
    anvil = load_config(["cluster=anvil"]).cluster
    assert anvil.partitions["wholenode"].cores == 128
    assert anvil.partitions["wholenode"].whole_node is True
    assert anvil.partitions["shared"].requires_account is True


def test_kernel_argv_interpolates_python_and_bin() -> None:
    cfg = load_config(["campaign.python=/opt/py/bin/python", "campaign.kernel_bin=/opt/k"])
    assert cfg.kernels["decode"].impls["torch"].argv[:3] == ["/opt/py/bin/python", "-m", "kernels.torch.decode"]
    assert cfg.kernels["decode"].impls["c"].argv == ["/opt/k/c/decode"]


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        (["cluster=nope"], "unknown cluster 'nope'"),
        (["experiment=nope"], "unknown experiment 'nope'"),
        (["experiment.repets=3"], "experiment.repets"),
        (["experiment.repeats=abc"], "experiment.repeats"),
        (["noequals"], "expected KEY=VALUE"),
        (["cluster.partitions.local.sockets=two"], "sockets"),
        (["+foo=1"], "unknown top-level config key(s) foo"),
    ],
)
def test_bad_overrides_are_one_line_config_errors(overrides: list[str], fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)
