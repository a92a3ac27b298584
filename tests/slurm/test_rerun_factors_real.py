"""`rerun --time-factor/--mem-factor` on the real test Slurm: a product past the
bounds any experiment has is refused before sbatch is called; one within them
but past the partition's limits reaches Slurm capped to them
(docs/design.md#experiment-numbers, README's rerun paragraph). The jobs are
submitted held, so that none takes the shared node: only what Slurm accepted
is looked at."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign import api
from campaign.config import load_config
from campaign.config.numbers import WALLTIME_MAX_MIN
from campaign.ledger import Ledger
from campaign.planning.resources import usable_memory
from campaign.plumbing.errors import BadInputError
from tests.slurm.helpers import _attempts, _calls, _name, _overrides, _shim

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]

HELD = "+cluster.partitions.cpu.sbatch_extra={hold:true}"
EXTRA = (
    "experiment=slurm_threads",
    "experiment.sweeps.0.threads=[1]",
    "experiment.walltime_min=5",
    "experiment.mem_gb=0.1",
    HELD,
)


def _slurm_job(job_id: str) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return dict(word.split("=", 1) for word in out.split() if "=" in word)


def test_rerun_factors_past_the_bound_are_refused_within_it_capped_values_reach_slurm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("factors")
    cancel_at_end(led, name)
    part = load_config(_overrides(tmp_path, name, *EXTRA)).cluster.partitions["cpu"]
    assert len(api.submit(_overrides(tmp_path, name, *EXTRA), led).submitted) == 1
    (first,) = _attempts(led)
    assert api.cancel(led, first["job_id"]) == [first["job_id"]]
    sbatch_log = _shim(tmp_path, monkeypatch, "sbatch")

    with pytest.raises(BadInputError, match=r"^--time-factor 527040: job \d+'s 5 min x 527040 is past the"):
        api.rerun(led, name, states=["CANCELLED"], time_factor=WALLTIME_MAX_MIN)
    assert _calls(sbatch_log) == [] and len(_attempts(led)) == 1  # nothing sent, nothing recorded

    time_factor, mem_factor = 1000.0, 1e4  # 5,000 min and ~930 GiB: within the bounds, past the partition's
    assert 5 * time_factor > part.max_walltime_min and first["mem_gb"] * mem_factor > usable_memory(part)
    rep = api.rerun(led, name, states=["CANCELLED"], time_factor=time_factor, mem_factor=mem_factor)
    assert len(rep.submitted) == 1 and len(_calls(sbatch_log)) == 1, _calls(sbatch_log)
    second = next(a for a in _attempts(led) if a["attempt"] == 2)
    assert (second["walltime_min"], second["mem_gb"]) == (part.max_walltime_min, usable_memory(part))
    assert "partition cpu's maximum" in rep.changed[0] and "what partition cpu lets a job ask" in rep.changed[0]
    job = _slurm_job(second["job_id"])
    assert job["TimeLimit"] == f"{part.max_walltime_min // 60:02d}:{part.max_walltime_min % 60:02d}:00", job
    assert job["MinMemoryNode"] == f"{round(usable_memory(part) * 1024)}M", job
