"""load_config composes the kernels the experiment's sweeps and the command
line name, no others (campaign.config.needed): a kernel YAML nothing names is
not read, so a broken one on CAMPAIGN_CONFIG_PATH does not stop an experiment
that does not use it, and every error about kernels reads as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.config import needed
from campaign.config.groups import group_options
from campaign.config.load import load_config, resolved_yaml
from campaign.planning.plan import plan
from campaign.plumbing.errors import ConfigError
from tests.conftest import run_cli

# a key no kernel has: composing this file fails
BROKEN = "name: broken\nimpls: {}\nno_such_key: 1\n"
USES_BROKEN = """name: uses_broken
repeats: 1
sweeps:
  - kernel: broken
    impls: [x]
    variants: [v]
    n: [10]
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CAMPAIGN_CONFIG_PATH folder with a broken kernel and an experiment that uses it."""
    conf = tmp_path / "conf"
    (conf / "kernel").mkdir(parents=True)
    (conf / "experiment").mkdir()
    (conf / "kernel" / "broken.yaml").write_text(BROKEN)
    (conf / "experiment" / "uses_broken.yaml").write_text(USES_BROKEN)
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(conf))
    return conf


def test_only_the_sweeps_kernels_are_composed() -> None:
    cfg = load_config(["experiment=smoke"])
    assert sorted(cfg.kernels) == ["attention_forward", "decode"]
    assert set(cfg.kernels) < set(group_options("kernel"))
    # the recorded config holds what was composed, nothing more
    assert "\n  decode:\n" in resolved_yaml(cfg) and "\n  hpcc:\n" not in resolved_yaml(cfg)


def test_an_experiment_of_several_kernels_gets_each_of_them() -> None:
    cfg = load_config(["experiment=h200_gpu"])
    assert set(cfg.kernels) == {sweep.kernel for sweep in cfg.experiment.sweeps}
    assert len(cfg.kernels) > 2


def test_an_override_that_changes_a_sweeps_kernel_is_seen() -> None:
    cfg = load_config(["experiment=smoke", "experiment.sweeps.0.kernel=decode", "experiment.sweeps.0.variants=[naive]"])
    assert sorted(cfg.kernels) == ["decode"]
    assert {run.kernel for run in plan(cfg).runs} == {"decode"}
    # and one that changes the experiment
    cfg = load_config(["experiment=smoke", "experiment=mpi_scaling"])
    assert sorted(cfg.kernels) == ["mpi_allreduce"]


def test_a_kernel_only_the_command_line_names_is_composed_and_overridden() -> None:
    cfg = load_config(["experiment=smoke", "kernels.hpcc.description=site build"])
    assert sorted(cfg.kernels) == ["attention_forward", "decode", "hpcc"]
    assert cfg.kernels["hpcc"].description == "site build"


def test_a_bad_override_of_an_unused_kernel_is_as_clear_as_before() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(["experiment=smoke", "kernels.hpcc.impls.mpi.argv=5"])
    assert str(err.value) == (
        "bad override kernels.hpcc.impls.mpi.argv=5: kernels.hpcc.impls.mpi.argv expects "
        "a list of names, e.g. [a,b], got '5'"
    )
    with pytest.raises(ConfigError) as err:
        load_config(["experiment=smoke", "kernels.hpcc.impls.nope.argv=[a]"])
    assert str(err.value).endswith("there is no entry 'nope': kernels.hpcc.impls has mpi (kernels.hpcc.impls)")


def test_a_kernel_no_file_declares_lists_every_kernel(site: Path) -> None:
    """Both for an override and for a sweep: the kernels on the config path, not the composed ones."""
    (site / "kernel" / "broken.yaml").write_text(BROKEN.replace("no_such_key: 1", "description: fixed"))
    every = ", ".join(group_options("kernel"))
    assert "broken" in every and "hpcc" in every
    with pytest.raises(ConfigError) as err:
        load_config(["experiment=smoke", "kernels.nope.description=x"])
    assert (
        str(err.value) == f"bad override kernels.nope.description=x: there is no kernel 'nope': kernels has {every} "
        "(kernels)"
    )
    cfg = load_config(["experiment=smoke", "experiment.sweeps.0.kernel=decod"])
    with pytest.raises(ConfigError) as err:
        plan(cfg)
    assert str(err.value) == f"unknown kernel 'decod'; did you mean 'decode'?; known: {every}"


def test_a_kernel_no_file_declares_beside_a_broken_one_is_still_named(site: Path) -> None:
    """Two mistakes, a broken kernel file and an override of a kernel that has none: the override's
    is named (the kernels listed are those composed, the broken file's composition failing)."""
    with pytest.raises(ConfigError, match=r"^bad override kernels.nope.description=x: there is no kernel 'nope'"):
        load_config(["experiment=smoke", "kernels.nope.description=x"])


def test_a_broken_kernel_no_one_uses_is_not_read(site: Path, tmp_path: Path) -> None:
    cfg = load_config(["experiment=smoke"])
    assert sorted(cfg.kernels) == ["attention_forward", "decode"]
    proc = run_cli("--ledger", str(tmp_path / "never.sqlite"), "submit", "experiment=smoke", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "never.sqlite").exists()


def test_a_broken_kernel_that_is_used_or_overridden_is_one_clear_line(site: Path, tmp_path: Path) -> None:
    for overrides in (
        ["experiment=uses_broken"],
        ["experiment=smoke", "kernels.broken.description=x"],
        ["experiment=smoke", "experiment.sweeps.0.kernel=broken"],
    ):
        with pytest.raises(ConfigError) as err:
            load_config(overrides)
        message = str(err.value)
        assert "\n" not in message and "kernels.broken.no_such_key: no_such_key is not a key of a kernel" in message, (
            message
        )
    proc = run_cli("submit", "experiment=uses_broken", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 2 and "no_such_key" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_an_experiment_that_cannot_compose_alone_still_names_the_mistake() -> None:
    """A mistake in the experiment fails the first, experiment-only compose: everything
    is composed then, as always, and the mistake is reported in the same words."""
    with pytest.raises(ConfigError, match=r"^bad override experiment.repeats=abc: experiment.repeats expects an "):
        load_config(["experiment=smoke", "cluster=delta", "experiment.repeats=abc"])
    with pytest.raises(ConfigError, match=r"there is no sweep 5: experiment 'smoke' has 2 sweep\(s\)"):
        load_config(["experiment=smoke", "experiment.sweeps.5.n=[1]"])


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["experiment=smoke", "cluster.account=x"], set()),
        (
            ["kernels.decode.impls.torch.launched=true", "++kernels.mbw.env.A=1", "~kernels.hpcc.env"],
            {"decode", "mbw", "hpcc"},
        ),
        (["+kernel@kernels.alias=decode", "kernel@kernels.mbw=hpcc"], {"alias", "mbw"}),
        (["kernels={}"], None),
    ],
)
def test_the_kernels_an_override_names(overrides: list[str], named: set[str] | None) -> None:
    assert needed.named(overrides) == named


def test_a_kernel_file_under_another_name_still_composes() -> None:
    """`+kernel@kernels.alias=decode` adds decode's file as `alias`, as before."""
    cfg = load_config(["+kernel@kernels.alias=decode", "experiment.sweeps.1.kernel=alias"])
    assert sorted(cfg.kernels) == ["alias", "attention_forward"]
    assert cfg.kernels["alias"].impls.keys() == load_config([]).kernels["decode"].impls.keys()


@pytest.mark.parametrize(
    "override, message",
    [
        ("experiment.repeats=abc", "experiment.repeats expects an integer (whole number), got 'abc'"),
        (
            "experiment.sweeps.5.n=[1]",
            "there is no sweep 5: experiment 'smoke' has 2 sweep(s), numbered 0, 1 (experiment.sweeps)",
        ),
    ],
)
def test_a_mistake_in_the_experiment_is_named_beside_a_broken_kernel_no_one_uses(
    site: Path, override: str, message: str
) -> None:
    """Where the experiment does not compose on its own, its mistake is named: the broken kernel
    file that nothing uses is not composed to find the sweeps' kernels (it was, and its error was
    reported instead of the override's)."""
    with pytest.raises(ConfigError) as err:
        load_config(["experiment=smoke", override])
    assert str(err.value) == f"bad override {override}: {message}"


def test_a_value_refused_beside_an_alias_bomb_no_one_uses_names_the_value(site: Path) -> None:
    """A bad value of a plain field names no missing sweep, partition or kernel, so no kernel file
    is composed or measured to look for one (every kernel file was, and an unused one whose
    aliases expand past the limit was reported instead of the value)."""
    laughs = "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['x'] * 9)}]\n" for i in range(9)
    )
    (site / "kernel" / "laughs.yaml").write_text("name: laughs\n" + laughs)
    with pytest.raises(ConfigError) as err:
        load_config(["experiment=smoke", "experiment.repeats=abc"])
    assert (
        str(err.value)
        == "bad override experiment.repeats=abc: experiment.repeats expects an integer (whole number), got 'abc'"
    )
