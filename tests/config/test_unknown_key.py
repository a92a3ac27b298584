"""A key a YAML section does not have: one line naming the key, the keys the
section has, the likely one, and the section it belongs to (OmegaConf's own
message names a dataclass and repeats the key three times). A key or a value
of a list's item (a figure, a sweep) is named by its path, as validate names
the item's other faults (OmegaConf names it without the list)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.config.load import load_config
from campaign.plumbing.errors import ConfigError
from tests.conftest import run_cli

KERNEL = """name: mine
driven_by: tool
impls:
  omp:
    argv: ["mine", "{{n}}"]
    {impl_extra}
    variants: [plain]
figures:
  - {{name: time, regex: 'time: (\\S+)', unit: s}}
  - {{name: rate, regex: 'rate: (\\S+)', unit: op/s{figure_extra}}}
"""
SWEEP = """name: mine_sweep
repeats: 1
sweeps:
  - kernel: mine
    impls: [omp]
    variants: [plain]
    {sweep_extra}
    n: [10]
"""


def _write(tmp_path: Path, impl_extra: str = "", sweep_extra: str = "", figure_extra: str = "") -> None:
    for group, text in (
        ("kernel/mine.yaml", KERNEL.format(impl_extra=impl_extra, figure_extra=figure_extra)),
        ("experiment/mine_sweep.yaml", SWEEP.format(sweep_extra=sweep_extra)),
    ):
        (tmp_path / "conf" / group).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "conf" / group).write_text(text)


def _load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, impl_extra: str = "", sweep_extra: str = "", figure_extra: str = ""
) -> str:
    _write(tmp_path, impl_extra, sweep_extra, figure_extra)
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(tmp_path / "conf"))
    with pytest.raises(ConfigError) as err:
        load_config(["experiment=mine_sweep"])
    return str(err.value)


def test_a_kernel_key_under_an_implementation_says_where_it_belongs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = _load(tmp_path, monkeypatch, impl_extra="env: {OMP_SCHEDULE: static}")
    assert message == (
        "kernel/mine: kernels.mine.impls.omp.env: env is not a key of an implementation (its keys: "
        "argv, script, variants, devices, dtypes, profilers, launched); env is a key of a kernel "
        "or a partition or a cluster"
    )


def test_a_misspelt_sweep_key_names_the_likely_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = _load(tmp_path, monkeypatch, sweep_extra="thread: [1, 2]")
    assert "\n" not in message and "thread is not a key of a sweep (its keys: " in message, message
    assert message.startswith("experiment/mine_sweep: experiment.sweeps.0.thread: "), message
    assert message.endswith("did you mean threads?"), message


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            {"figure_extra": ", higher_is_beter: true"},
            "kernel/mine: kernels.mine.figures[1].higher_is_beter: higher_is_beter is not a key of a figure (its keys: "
            "name, regex, json, source, unit, higher_is_better, reduce, duration); did you mean higher_is_better?",
        ),
        (
            {"figure_extra": ", direction: higher"},  # once "did you mean duration?", the set time of a timed program
            "kernel/mine: kernels.mine.figures[1].direction: direction is not a key of a figure (its keys: "
            "name, regex, json, source, unit, higher_is_better, reduce, duration); did you mean higher_is_better "
            "(true for a rate, false for a time)?",
        ),
        (
            {"figure_extra": ", better: higher"},
            "kernel/mine: kernels.mine.figures[1].better: better is not a key of a figure (its keys: "
            "name, regex, json, source, unit, higher_is_better, reduce, duration); did you mean higher_is_better "
            "(true for a rate, false for a time)?",
        ),
        (
            {"figure_extra": ", higher_is_better: maybe"},
            "kernel/mine: kernels.mine.figures[1].higher_is_better: Value 'maybe' is not a valid bool (type str)",
        ),
        (
            {"sweep_extra": "threads: [1, a]"},
            "experiment/mine_sweep: experiment.sweeps.0.threads[1]: Value 'a' of type 'str' could not be converted to "
            "Integer",
        ),
    ],
)
def test_a_list_items_key_or_value_names_the_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: dict[str, str], expected: str
) -> None:
    assert _load(tmp_path, monkeypatch, **extra) == expected


def test_the_cli_says_it_in_one_line_exit_2(tmp_path: Path) -> None:
    _write(tmp_path, figure_extra=", higher_is_better: maybe")
    proc = run_cli(
        "--ledger",
        str(tmp_path / "l.sqlite"),
        "submit",
        "experiment=mine_sweep",
        "--dry-run",
        cwd=tmp_path,
        env={"CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf")},
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "kernels.mine.figures[1].higher_is_better: Value 'maybe'" in proc.stderr
