"""A launch whose ranks ended non-zero is not one whose ranks are missing:
`missing_ranks` names only the ranks that left no record of their end, the
exit record keeps each rank's exit code, and `show` says which rank failed
with what. Both through a folder laid out as a real failed srun launch
leaves it (one rank segfaulted, srun stopped the others) and through the
real job path: the runner starting the tool-driven driver, which starts the
ranks through a launcher and the per-rank shim."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from campaign.cli.show_view import placement_lines
from campaign.job.files import EXIT_FILE, write_json
from campaign.job.fom_launch import Launch
from campaign.job.rank import missing_ranks, read_records, unfinished_ranks
from campaign.job.runner import KernelFailed, execute
from campaign.job.task import JobTask

# a launcher as srun starts them: every rank through the shim, its exit the worst rank's
LAUNCHER = ("import os,subprocess,sys; size=int(sys.argv[1]); started=int(sys.argv[2]); "
            "ps=[subprocess.Popen(sys.argv[3:], env={**os.environ,'FAKE_RANK':str(r),'FAKE_SIZE':str(size)}) "
            "for r in range(started)]; codes=[p.wait() for p in ps]; sys.exit(max(codes))")
# rank 2 dies of SIGSEGV (the shim records 139), the others print their figure
PROGRAM = ("import os,signal; r=int(os.environ['FAKE_RANK']); "
           "os.kill(os.getpid(), signal.SIGSEGV) if r == 2 else print('time: 0.001 s')")


def _record(folder: Path, rank: int, node: str, **end: object) -> None:
    write_json(folder / f"rank-{rank}.json", {"rank": rank, "world": 8, "local_rank": rank // 4, "host": "vm",
                                              "node": node, "cpus": [0, 1], "gpus": "", **end})


def test_ranks_that_ended_non_zero_are_not_missing(tmp_path: Path) -> None:
    """As srun leaves a step where rank 6 segfaulted: 2 and 6 (one node) 139, the rest stopped (143)."""
    ranks = tmp_path / "attempt-3" / "ranks"
    ranks.mkdir(parents=True)
    for r in range(8):
        _record(ranks, r, f"n{r % 4 + 1}", exit_code=139 if r in (2, 6) else 143, ended=1796616632.5, cpu_s=0.05)
    records = read_records(ranks)
    assert sorted(records) == list(range(8))
    assert missing_ranks(records, 8) == []
    assert unfinished_ranks(records, 8) == list(range(8))


def test_missing_is_no_record_a_torn_one_or_only_the_start(tmp_path: Path) -> None:
    _record(tmp_path, 0, "n1", exit_code=0, ended=1.0)
    _record(tmp_path, 1, "n1", exit_code=1, ended=1.0)
    _record(tmp_path, 2, "n2")  # placement only: killed before its program ended
    (tmp_path / "rank-3.json").write_text('{"rank": 3, "exit_')  # killed while writing
    records = read_records(tmp_path)
    assert missing_ranks(records, 5) == [2, 3, 4]
    assert unfinished_ranks(records, 5) == [1, 2, 3, 4]


def _job(tmp_path: Path, ranks: int, started: int) -> JobTask:
    """The job as the Slurm backend builds a launched tool-driven run: the driver, once, with --launch."""
    workdir = tmp_path / "attempt-1"
    records = workdir / "ranks"
    launch = Launch((sys.executable, "-c", LAUNCHER, str(ranks), str(started), sys.executable, "-m",
                     "campaign.job.rank", "--records", str(records), "--rank-env", "FAKE_RANK", "--size-env",
                     "FAKE_SIZE", "--local-rank-env", "FAKE_RANK"), str(records), ranks)
    spec = {"kernel": "k", "impl": "py", "argv": [sys.executable, "-c", PROGRAM], "env": {}, "sanity": [],
            "flops": None, "bytes": None,
            "figures": [{"name": "time", "regex": r"time: (\S+) s", "source": "stdout", "unit": "s"}]}
    out = workdir / "results.csv"
    argv = (sys.executable, "-m", "campaign.job.fom", json.dumps(spec), "--n", "8", "--threads", "1",
            "--repeats", "1", "--warmup", "0", "--out", str(out), "--launch", launch.to_json())
    return JobTask(argv, (), str(workdir), str(out), False, ranks=ranks, rank_records=str(records))


def test_a_failed_launch_records_each_ranks_exit_and_no_missing_rank(tmp_path: Path) -> None:
    task = _job(tmp_path, 4, 4)
    with pytest.raises(KernelFailed):
        execute(task)
    record = json.loads((Path(task.workdir) / EXIT_FILE).read_text())
    assert record["exit_code"] != 0
    assert "missing_ranks" not in record  # every rank wrote how it ended
    assert [p["exit_code"] for p in record["placement"]] == [0, 0, 139, 0]
    lines = placement_lines(task.workdir)
    assert lines[0] == "ranks: 4 on 1 node(s)"
    assert lines[3].endswith("exit 139") and not any(line.endswith("exit 0") for line in lines)


def test_a_launch_that_started_fewer_ranks_names_the_missing_ones(tmp_path: Path) -> None:
    task = _job(tmp_path, 3, 1)  # the launcher returned 0 but started one rank of three
    with pytest.raises(KernelFailed):
        execute(task)
    record = json.loads((Path(task.workdir) / EXIT_FILE).read_text())
    assert record["missing_ranks"] == [1, 2]
    assert placement_lines(task.workdir)[0] == "ranks: 1 on 1 node(s)  missing: [1, 2]"


def test_show_says_the_allocation_is_per_rank() -> None:
    """`alloc_cpus` is one task's --cpus-per-task (docs/design.md): an 8-rank job of 1 core per rank
    is not a job of 1 core."""
    from types import SimpleNamespace
    from typing import Any, cast

    from campaign.cli.show_view import _allocated

    att = cast(Any, SimpleNamespace(alloc_cpus=1, alloc_gpus=0))
    assert _allocated(att, 8) == "1 cores per rank x 8 ranks (8 cores), 0 GPUs per node"
    assert _allocated(cast(Any, SimpleNamespace(alloc_cpus=4, alloc_gpus=1)), 1) == "4 cores, 1 GPUs"
