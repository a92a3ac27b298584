"""Hostile numbers in a cluster config: a partition's ceilings, sizes, memory and
walltime set to NaN, inf, 0, a negative, 1e309 (inf to YAML) or a value past any
node, through an override or a user's cluster file on CAMPAIGN_CONFIG_PATH. Each
is refused by name at compose time (exit 2, one line, nothing recorded); the
report, which reads the cluster as a ledger recorded it, takes such a fact as
not declared and never divides by it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from analysis.penalties import numa_crossing
from analysis.roofline import roofline
from campaign.config import load_config
from campaign.config.schema import Ceilings, ClusterSpec, PartitionSpec, RootConfig
from campaign.config.validate import validate
from campaign.plumbing.errors import ConfigError
from campaign.results.frames import partition_facts_frame
from tests.conftest import assert_refused, run_cli

PART = "cluster.partitions.cpu"
HOSTILE_FLOATS = ("nan", "inf", "-inf", "0", "-1", "1e309")
FLOATS = (
    "ceilings.mem_bw",
    "ceilings.peak_flops_fp32",
    "ceilings.peak_flops_bf16",
    "ceilings.peak_flops_fp16",
    "memory_gb",
    "usable_mem_gb",
    "mem_gb",
    "mem_per_core_gb",
    "mem_per_gpu_gb",
    "charging.mem_gb_per_unit",
    "charging.cores_per_unit",
)
WHOLE = (
    "sockets",
    "cores_per_socket",
    "numa_domains",
    "threads_per_core",
    "max_walltime_min",
    "cpus_per_gpu",
    "max_nodes",
)


REF = "{kernel: k, impl: i, variant: v, n: 1"


CASES = [
    *((f"{PART}.{key}={value}", f"{PART}.{key}=") for key in FLOATS for value in HOSTILE_FLOATS),
    *((f"{PART}.{key}={value}", f"{PART}.{key}={value} ") for key in WHOLE for value in ("0", "-1", "-99999999999")),
    *(
        (f"{PART}.{key}={value}", f"{PART}.{key}=")
        for key, value in (
            ("ceilings.mem_bw", "1e17"),
            ("ceilings.peak_flops_fp32", "1e300"),
            ("memory_gb", "1e6"),
            ("sockets", "100000"),
            ("max_walltime_min", "99999999999"),
            ("threads_per_core", "1000"),
            ("numa_domains", "129"),  # more domains than the node's 128 cores
            ("gpus", "-1"),
            ("charging.su_per_unit_hour", "nan"),
            ("charging.min_su", "-1"),
        )
    ),
    (f"{PART}.references=[{REF}, time_s: 0}}]", f"{PART}.references[0].time_s=0.0 "),
    (f"{PART}.references=[{REF}, flops_per_s: nan}}]", f"{PART}.references[0].flops_per_s=nan "),
    (f"{PART}.references=[{REF}, time_s: 1, tolerance: -0.1}}]", f"{PART}.references[0].tolerance=-0.1 "),
]
# through load_config itself, override to refusal: a float, a whole number, one past any node, a
# ceiling, a charge and a reference (each of the families above; a compose is ~0.3 CPU s)
COMPOSED = [
    case
    for case in CASES
    if case[0].partition(".cpu.")[2]
    in {
        "memory_gb=1e309",
        "sockets=-99999999999",
        "numa_domains=129",
        "ceilings.mem_bw=nan",
        "charging.min_su=-1",
        "references=[{kernel: k, impl: i, variant: v, n: 1, time_s: 0}]",
    }
]
assert len(COMPOSED) == 6, COMPOSED  # each family's case found


def _refused(err: pytest.ExceptionInfo[ConfigError], named: str) -> None:
    assert str(err.value).startswith(named) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize(("override", "named"), COMPOSED)
def test_a_partition_number_outside_its_range_is_refused_by_name_at_compose(override: str, named: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(["cluster=localslurm", override])
    _refused(err, named)


@pytest.fixture(scope="module")
def localslurm() -> DictConfig:
    """The composed test cluster's config, typed by the schema (composed once for all the cases)."""
    return OmegaConf.structured(load_config(["cluster=localslurm"]))


@pytest.mark.parametrize(("override", "named"), CASES)
def test_a_partition_number_outside_its_range_is_refused_by_name(
    override: str, named: str, localslurm: DictConfig
) -> None:
    """Each value merged into the composed config as an override would be (converted to its field's
    type by the schema) is refused by the validator that load_config runs on every composed config."""
    given = OmegaConf.merge(localslurm, OmegaConf.from_dotlist([override]))
    root = OmegaConf.to_object(given)
    assert isinstance(root, RootConfig)
    with pytest.raises(ConfigError) as err:
        validate(root)
    _refused(err, named)


def test_the_shipped_clusters_numbers_are_within_range() -> None:
    """The control: every shipped cluster composes (the ranges refuse no real site)."""
    for name in ("anvil", "delta", "h200node", "local", "localslurm"):
        assert load_config([f"cluster={name}"]).cluster.partitions


CLUSTER = """name: hostile
backend: local
partitions:
  local:
    cores_per_socket: 2
    memory_gb: 4
    numa_domains: NUMA
    ceilings: {mem_bw: BW, peak_flops_fp32: 1e11}
"""


@pytest.mark.parametrize(
    ("numa", "bw", "named"),
    [
        ("1", ".nan", "cluster.partitions.local.ceilings.mem_bw=nan must be a finite number of bytes/s"),
        ("1", "1e309", "cluster.partitions.local.ceilings.mem_bw=inf must be a finite number of bytes/s"),
        ("1", "-2e10", "cluster.partitions.local.ceilings.mem_bw=-20000000000.0 must be"),
        ("1", "'fast'", "cluster.partitions.local.ceilings.mem_bw"),
        ("1", "[1, 2]", "cluster.partitions.local.ceilings.mem_bw"),
        ("0", "2e10", "cluster.partitions.local.numa_domains=0 must be a whole number of NUMA domains"),
    ],
)
def test_a_users_cluster_file_with_a_hostile_number_is_one_line(tmp_path: Path, numa: str, bw: str, named: str) -> None:
    conf = tmp_path / "conf"
    (conf / "cluster").mkdir(parents=True)
    (conf / "cluster" / "hostile.yaml").write_text(CLUSTER.replace("NUMA", numa).replace("BW", bw))
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "cluster=hostile",
        "experiment=smoke",
        cwd=tmp_path,
        env={"CAMPAIGN_CONFIG_PATH": str(conf)},
    )
    assert_refused(proc, named, ledger)


def test_a_recorded_fact_outside_its_range_is_not_divided_by() -> None:
    """A ledger recorded before compose refused these (or edited by hand): a ceiling of 0 or below gave a
    roofline of 0 FLOP/s flagged above the ceiling, a negative bandwidth a negative fraction, 0 NUMA domains a
    division by zero in the NUMA penalty. Each is now a fact not declared (no fraction, no penalty), while
    the good partition beside it keeps its numbers."""
    import pandas as pd

    def part(**more: object) -> PartitionSpec:
        return PartitionSpec(name="p", cores_per_socket=4, memory_gb=8, **more)  # type: ignore[arg-type]

    cluster = ClusterSpec(
        name="c",
        partitions={
            "bad": part(numa_domains=0, ceilings=Ceilings(peak_flops_fp32=0.0, mem_bw=-5.0)),
            "nan": part(sockets=-1, ceilings=Ceilings(peak_flops_fp32=math.nan, mem_bw=math.inf)),
            "good": part(numa_domains=2, ceilings=Ceilings(peak_flops_fp32=1e9, mem_bw=1e9)),
        },
    )
    facts = partition_facts_frame({"c": cluster}).set_index("partition")
    assert facts.loc["bad", ["peak_flops_fp32", "mem_bw", "numa_domains"]].isna().all()
    assert facts.loc["nan", ["peak_flops_fp32", "mem_bw", "cores", "sockets"]].isna().all()
    assert facts.loc["good", "cores"] == 4 and facts.loc["good", "numa_domains"] == 2
    rows = pd.DataFrame(
        {
            "cluster": "c",
            "partition": ["bad", "nan", "good"],
            "kernel": "k",
            "impl": "i",
            "variant": "v",
            "device": "cpu",
            "dtype": "fp32",
            "n": 10,
            "threads": 1,
            "median_s": 1.0,
            "flops": 5e8,
            "bytes": 5e8,
        }
    )
    roof = roofline(rows, facts.reset_index()).set_index("partition")
    assert roof.loc[["bad", "nan"], ["frac_peak_flops", "frac_mem_bw", "frac_roof"]].isna().all().all()
    assert not roof.loc[["bad", "nan"], "above_ceiling"].any()
    assert roof.loc["good", "frac_peak_flops"] == 0.5 and roof.loc["good", "frac_mem_bw"] == 0.5
    numa = facts.loc[["bad", "good"], ["cores", "numa_domains"]].to_numpy(float)
    assert numa_crossing(pd.Series([4.0, 4.0]).to_numpy(), numa[:, 0], numa[:, 1]).tolist() == [False, True]
