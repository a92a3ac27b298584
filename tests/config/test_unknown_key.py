"""A key a YAML section does not have: one line naming the key, the keys the
section has, the likely one, and the section it belongs to (OmegaConf's own
message names a dataclass and repeats the key three times)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.config.load import load_config
from campaign.plumbing.errors import ConfigError

KERNEL = """name: mine
driven_by: tool
impls:
  omp:
    argv: ["mine", "{{n}}"]
    {impl_extra}
    variants: [plain]
figures:
  - {{name: time, regex: 'time: (\\S+)', unit: s}}
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


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, impl_extra: str = "", sweep_extra: str = "") -> str:
    for group, text in (("kernel/mine.yaml", KERNEL.format(impl_extra=impl_extra)),
                        ("experiment/mine_sweep.yaml", SWEEP.format(sweep_extra=sweep_extra))):
        (tmp_path / "conf" / group).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "conf" / group).write_text(text)
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(tmp_path / "conf"))
    with pytest.raises(ConfigError) as err:
        load_config(["experiment=mine_sweep"])
    return str(err.value)


def test_a_kernel_key_under_an_implementation_says_where_it_belongs(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    message = _load(tmp_path, monkeypatch, impl_extra="env: {OMP_SCHEDULE: static}")
    assert message == ("kernel/mine: kernels.mine.impls.omp.env: env is not a key of an implementation (its keys: "
                       "argv, script, variants, devices, dtypes, profilers, launched); env is a key of a kernel "
                       "or a partition or a cluster")


def test_a_misspelt_sweep_key_names_the_likely_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = _load(tmp_path, monkeypatch, sweep_extra="thread: [1, 2]")
    assert "\n" not in message and "thread is not a key of a sweep (its keys: " in message, message
    assert message.endswith("did you mean threads?"), message
