"""A sweep's args and grid values as a reader sees them, through the real CLI
from an experiment file: two values that differ only in their Unicode form or
by invisible characters ("café" composed and decomposed, "ﬁ" and "fi", a
zero-width joiner), a direction control that shows a value other than it is,
and a number YAML reads as infinite or not a number (`.inf`, `.nan`, 1e400,
which the program got as "inf") are each one line, exit 2, nothing recorded.
A value written one way is accepted as written."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from tests.conftest import run_cli

KERNEL = """name: mine
driven_by: tool
impls: {tool: {argv: ["mybench", "{n}", "{tag}"], variants: [plain]}}
figures: [{name: time, regex: 'time: (?P<value>[0-9.]+)', unit: s}]
"""
EXPERIMENT = """name: mine_sweep
repeats: 1
check: false
sweeps:
  - kernel: mine
    impls: [tool]
    variants: [plain]
    threads: [1]
    n: [10]
    BLOCK
"""
CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")


def _submit(tmp_path: Path, block: str) -> tuple[int, str, str]:
    conf = tmp_path / "conf"
    (conf / "kernel").mkdir(parents=True)
    (conf / "experiment").mkdir()
    (conf / "kernel" / "mine.yaml").write_text(KERNEL, encoding="utf-8")
    (conf / "experiment" / "mine_sweep.yaml").write_text(EXPERIMENT.replace("BLOCK", block), encoding="utf-8")
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=mine_sweep",
        f"campaign.workdir={tmp_path}/runs",
        "--dry-run",
        env={"CAMPAIGN_CONFIG_PATH": str(conf)},
        timeout=120,
    )
    assert "Traceback" not in proc.stderr and not ledger.exists(), proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    ("block", "seen"),
    [
        (f'grid: {{tag: ["{CAFE_NFC}", "{CAFE_NFD}"]}}', ascii(CAFE_NFD)),
        ('grid: {tag: ["\ufb01le", "file"]}', ascii("\ufb01le")),
        ('grid: {tag: ["ab", "a\u200db"]}', ascii("a\u200db")),
        (
            f'grid: {{tag: ["{CAFE_NFC}"]}}\n  - kernel: mine\n    impls: [tool]\n    variants: [plain]\n'
            f'    threads: [1]\n    n: [10]\n    args: {{tag: "{CAFE_NFD}"}}',
            ascii(CAFE_NFD),
        ),
    ],
    ids=["nfc-nfd", "ligature", "zero-width-joiner", "across-sweeps"],
)
def test_values_that_look_the_same_are_refused(tmp_path: Path, block: str, seen: str) -> None:
    """Each became a run of its own, shown as the same tag=... in every table and report."""
    code, _, err = _submit(tmp_path, block)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "tag" in err and seen in err and "look the same" in err, err


def test_a_direction_control_is_refused(tmp_path: Path) -> None:
    code, _, err = _submit(tmp_path, 'grid: {tag: ["a\u202eb"]}')
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "experiment.sweeps.0.grid.tag" in err and "\\u202e" in err and "direction" in err, err


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e400"])
@pytest.mark.parametrize("block", ["grid: {tag: [1, VALUE]}", "args: {tag: VALUE}"], ids=["grid", "args"])
def test_a_number_that_is_not_finite_is_refused(tmp_path: Path, block: str, value: str) -> None:
    code, _, err = _submit(tmp_path, block.replace("VALUE", value))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "experiment.sweeps.0." in err and "tag" in err and "not a finite number" in err, err


def test_a_value_written_one_way_is_taken_as_written(tmp_path: Path) -> None:
    code, out, err = _submit(tmp_path, f'grid: {{tag: ["{CAFE_NFD}", "a\u200db", "inf", 2e300]}}')
    assert code == 0, err
    for value in (CAFE_NFD, "a\u200db", "inf", "2e+300"):
        assert f"--tag {value} " in out or f"--tag '{value}' " in out, (value, out)
