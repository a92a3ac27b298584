"""Config composition: groups, overrides, types, required fields, site facts."""

from __future__ import annotations

import pytest
import yaml
from omegaconf import OmegaConf

from campaign.config import load_config
from campaign.config.load import resolved_yaml
from campaign.plumbing.errors import ConfigError


def test_default_is_local_smoke() -> None:
    cfg = load_config([])
    assert cfg.cluster.name == "local"
    assert cfg.cluster.backend == "local"
    assert cfg.experiment.name == "smoke"
    assert {"attention_forward", "decode"} <= set(cfg.kernels)
    part = cfg.cluster.partitions["local"]
    assert part.cores >= 1 and part.name == "local"


def test_overrides_reach_typed_fields() -> None:
    cfg = load_config(
        ["experiment=smoke", "experiment.repeats=5", "cluster=delta", "cluster.partitions.cpu.account=abc-delta-cpu"]
    )
    assert cfg.experiment.repeats == 5
    cpu = cfg.cluster.partitions["cpu"]
    assert (cpu.sockets, cpu.cores_per_socket, cpu.numa_domains, cpu.cores) == (2, 64, 8, 128)
    assert cpu.account == "abc-delta-cpu"
    assert set(cfg.cluster.partitions) == {"cpu", "gpuA40x4", "gpuA100x4", "gpuA100x8", "gpuH200x8", "gpuMI100x8"}
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
        (["~"], "expected KEY=VALUE"),
        (
            ["~experiment.description"],
            "bad override ~experiment.description: experiment.description is a field of "
            "the config, which ~ cannot remove; set it instead",
        ),
        (["~experiment.sweeps.0"], "experiment.sweeps.0 is an item of a list, which ~ cannot remove"),
        (["~experiment.nosuch"], "experiment has no 'nosuch'"),
    ],
)
def test_bad_overrides_are_one_line_config_errors(overrides: list[str], fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        (
            ["+experiment.repeat=5"],
            "unknown config key 'experiment.repeat': experiment has no 'repeat'; did you mean 'repeats'",
        ),
        (["+experiment.sweeps.0.foo=1"], "experiment.sweeps.0 has no 'foo'"),
        (
            ["experiment.walltime_min=0.5"],
            "bad override experiment.walltime_min=0.5: experiment.walltime_min expects "
            "an integer (whole number), got '0.5'",
        ),
        (["experiment.sweeps.0.n=[1,x]"], "experiment.sweeps.0.n expects a list of integers, e.g. [1,2]"),
        (["experiment.mem_gb=lots"], "experiment.mem_gb expects a number or null, got 'lots'"),
    ],
)
def test_unknown_keys_refused_even_with_plus_and_type_errors_name_the_type(overrides: list[str], fragment: str) -> None:
    """Hydra's own `+` suggestion must not add a key the schema lacks."""
    with pytest.raises(ConfigError) as err:
        load_config(overrides)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_tilde_removes_an_entry_of_a_mapping() -> None:
    """README's Hydra habits: `~KEY` as in Hydra (an entry of a mapping: an
    environment variable, a partition)."""
    base = load_config(["cluster=localslurm"]).cluster
    assert "OMPI_MCA_btl" in base.partitions["multi"].env and "remote" in base.partitions
    cfg = load_config(
        ["cluster=localslurm", "~cluster.partitions.multi.env.OMPI_MCA_btl", "~cluster.partitions.remote"]
    )
    assert "OMPI_MCA_btl" not in cfg.cluster.partitions["multi"].env and "remote" not in cfg.cluster.partitions
    assert cfg.cluster.partitions["multi"].env["OMPI_MCA_btl_tcp_if_include"] == "lo"


def test_plus_into_a_mapping_field_is_allowed() -> None:
    cfg = load_config(["+cluster.env.FOO=bar"])
    assert cfg.cluster.env["FOO"] == "bar"


def _count_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """OmegaConf.<name> wrapped for this test: each call appends to the list returned, then runs the real one."""
    calls: list[int] = []
    real = getattr(OmegaConf, name)

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(OmegaConf, name, staticmethod(counting))
    return calls


def test_the_resolved_yaml_is_rendered_once_when_first_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Provenance's YAML is ~10% of a compose's CPU and only a submit
    records it: load_config keeps the composition, resolved_yaml renders it
    once, resolved, with the command line's values."""
    calls = _count_calls(monkeypatch, "to_yaml")
    cfg = load_config(["cluster=delta", "experiment=forward_scaling", "cluster.account=abc", "experiment.repeats=7"])
    assert calls == []
    text = resolved_yaml(cfg)
    assert resolved_yaml(cfg) is text and len(calls) == 1
    assert "${" not in text  # resolved: the kernels' argv name the real python and build folder
    tree = yaml.safe_load(text)
    assert tree["cluster"]["name"] == "delta" and tree["cluster"]["account"] == "abc"
    assert tree["experiment"]["repeats"] == 7 and set(tree["kernels"]) == set(cfg.kernels)


def test_a_stored_cluster_is_parsed_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sync reads each campaign's stored cluster on every round (`status --watch`
    polls): the same text is parsed by OmegaConf once per process, and every caller
    still gets the cluster as stored, in its own copy."""
    import uuid

    from campaign.config import clusters
    from campaign.config.clusters import cluster_from_yaml, cluster_yaml

    cluster = load_config(["cluster=delta"]).cluster
    cluster.account = f"acct-{uuid.uuid4().hex}"  # a text no earlier test parsed
    text = cluster_yaml(cluster)
    stored = clusters._parsed.__wrapped__(text)  # the parse itself, uncached
    assert stored.account == cluster.account
    calls = _count_calls(monkeypatch, "create")
    first = cluster_from_yaml(text)
    parsing = len(calls)
    assert first == stored and parsing > 0
    first.partitions["cpu"].account = "changed by one caller"
    first.modules.append("changed/too")
    second = cluster_from_yaml(text)
    assert len(calls) == parsing  # not parsed again
    assert second == stored and second is not first  # the stored facts, untouched by the first caller
