"""campaign.job.rank, the per-rank shim, run as the launcher runs it (a real
subprocess per rank): torch.distributed's variables from the launcher's,
the placement record before and after, the program's exit code passed on,
and the runner's verdict on ranks that left no finished record."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from campaign.config import load_config
from campaign.job.rank import PORT_BASE, PORT_SPAN, missing_ranks, read_records, unfinished_ranks
from campaign.planning.plan import plan
from campaign.plumbing.errors import ConfigError

SHOW_ENV = (
    "import json, os; print(json.dumps({k: os.environ.get(k) for k in "
    "('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'MASTER_ADDR', 'MASTER_PORT')}))"
)


# the launcher's variables the shim reads, as the backends name them on its command line
LAUNCHER_ENV = {"--rank-env": "L_RANK", "--size-env": "L_SIZE", "--local-rank-env": "L_LOCAL", "--node-env": "L_NODE"}
TORCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def _rank(
    records: Path, env: dict[str, str], *program: str, pass_fds: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[str]:
    options = [word for pair in LAUNCHER_ENV.items() for word in pair]
    argv = [sys.executable, "-m", "campaign.job.rank", "--records", str(records), *options, "--job-env", "L_JOB"]
    full = {k: v for k, v in os.environ.items() if k not in TORCH_ENV}
    return subprocess.run(
        [*argv, "--", *program],
        env={**full, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        pass_fds=pass_fds,
    )


def test_each_rank_gets_torch_variables_from_the_launchers(tmp_path: Path) -> None:
    job = 4242
    seen = []
    for rank in range(3):
        env = {
            "L_RANK": str(rank),
            "L_SIZE": "3",
            "L_LOCAL": str(rank % 2),
            "L_NODE": f"node{rank // 2}",
            "L_JOB": str(job),
            "CAMPAIGN_LAUNCH_HOST": "head-node",
        }
        proc = _rank(tmp_path, env, sys.executable, "-c", SHOW_ENV)
        assert proc.returncode == 0, proc.stderr
        seen.append(json.loads(proc.stdout))
    port = str(PORT_BASE + job % PORT_SPAN)
    assert seen == [
        {"RANK": str(r), "WORLD_SIZE": "3", "LOCAL_RANK": str(r % 2), "MASTER_ADDR": "head-node", "MASTER_PORT": port}
        for r in range(3)
    ]
    records = read_records(tmp_path)
    assert sorted(records) == [0, 1, 2] and missing_ranks(records, 3) == []
    assert [records[r]["node"] for r in range(3)] == ["node0", "node0", "node1"]
    assert all(records[r]["cpus"] == sorted(os.sched_getaffinity(0)) for r in range(3))


def test_the_jobs_own_variables_win(tmp_path: Path) -> None:
    proc = _rank(
        tmp_path,
        {"L_RANK": "1", "L_SIZE": "2", "L_LOCAL": "0", "L_JOB": "7", "MASTER_PORT": "31337", "MASTER_ADDR": "10.0.0.1"},
        sys.executable,
        "-c",
        SHOW_ENV,
    )
    got = json.loads(proc.stdout)
    assert (got["MASTER_ADDR"], got["MASTER_PORT"], got["RANK"]) == ("10.0.0.1", "31337", "1")


def test_exit_code_passed_on_and_recorded(tmp_path: Path) -> None:
    base = {"L_SIZE": "3", "L_LOCAL": "0", "L_JOB": "1"}
    assert _rank(tmp_path, {**base, "L_RANK": "0"}, sys.executable, "-c", "pass").returncode == 0
    assert _rank(tmp_path, {**base, "L_RANK": "1"}, sys.executable, "-c", "raise SystemExit(5)").returncode == 5
    proc = _rank(tmp_path, {**base, "L_RANK": "2"}, str(tmp_path / "no-such-program"))
    assert proc.returncode == 127 and "cannot start" in proc.stderr
    records = read_records(tmp_path)
    assert [records[r]["exit_code"] for r in range(3)] == [0, 5, 127]
    # rank 1 failed, rank 2 never ran its program (both say so), rank 3 of a world of 4 left nothing
    assert missing_ranks(records, 4) == [3]
    assert unfinished_ranks(records, 4) == [1, 2, 3]


def test_a_container_runtime_missing_on_the_node_is_named_not_the_program(tmp_path: Path) -> None:
    """The rank's first word is the run's container runtime (podman ... image program): missing on the
    node, the line names it and the partition, not 'rank 0 cannot start podman'; exit 127 as before.
    The program's own missing first word (no container) keeps its line."""
    runtime = str(tmp_path / "podman")  # no such file
    said = {"CAMPAIGN_CONTAINER_RUNTIME": f"{runtime}:multi", "L_RANK": "0", "L_SIZE": "1", "L_LOCAL": "0"}
    proc = _rank(tmp_path, said, runtime, "run", "localhost/pb", "/opt/pb/pb")
    assert proc.returncode == 127, proc.stderr
    assert (
        f"campaign: {runtime}: not found on node {socket.gethostname()} (the container runtime of partition multi)"
        in proc.stderr
        and "cannot start" not in proc.stderr
    ), proc.stderr
    alone = _rank(tmp_path, {**said, "CAMPAIGN_CONTAINER_RUNTIME": ""}, runtime, "run")
    assert alone.returncode == 127 and f"campaign: rank 0 cannot start {runtime}:" in alone.stderr, alone.stderr


def test_a_torn_record_counts_as_missing(tmp_path: Path) -> None:
    (tmp_path / "rank-0.json").write_text('{"rank": 0, "exit_code": 0}')
    (tmp_path / "rank-1.json").write_text('{"rank": 1, "exit_')  # killed while writing (no rename)
    assert missing_ranks(read_records(tmp_path), 2) == [1]


def test_ranks_on_the_local_backend_are_refused() -> None:
    with pytest.raises(ConfigError, match="need a Slurm cluster"):
        plan(load_config(["experiment=smoke", "experiment.sweeps.0.ranks_per_node=[2]"]))


WRITES_OUT = "import os, sys; open(sys.argv[sys.argv.index('--out') + 1], 'w').write(os.environ['RANK'])"


def test_one_writer_per_launch_the_other_ranks_out_beside_it(tmp_path: Path) -> None:
    """A program that writes its --out from every rank (no rank check of its own): with
    --writer-rank 0 rank 0 writes the results file, every other rank FILE.rank<r>, no race."""
    out = tmp_path / "results.csv"
    for rank in range(3):
        argv = [
            sys.executable,
            "-m",
            "campaign.job.rank",
            "--records",
            str(tmp_path / "ranks"),
            "--rank-env",
            "L_RANK",
            "--size-env",
            "L_SIZE",
            "--local-rank-env",
            "L_RANK",
            "--writer-rank",
            "0",
            "--",
            sys.executable,
            "-c",
            WRITES_OUT,
            "--n",
            "8",
            "--out",
            str(out),
        ]
        env = {k: v for k, v in os.environ.items() if k != "RANK"}
        proc = subprocess.run(
            argv,
            env={**env, "L_RANK": str(rank), "L_SIZE": "3"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "0"
    assert [(tmp_path / f"results.csv.rank{r}").read_text() for r in (1, 2)] == ["1", "2"]
    assert not (tmp_path / "results.csv.rank0").exists()


def test_the_launchers_pmi_descriptor_reaches_the_program(tmp_path: Path) -> None:
    """srun --mpi=pmi2 (and MPICH's own mpiexec) hand each task an open socket and name it in PMI_FD;
    MPICH's MPI_Init talks PMI over it. The shim stands between the launcher and the program, so the
    descriptor must pass through it as the launcher gave it, or MPI_Init fails on a closed descriptor."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)  # as the launcher leaves it: open across exec
    try:
        env = {"L_RANK": "0", "L_SIZE": "1", "L_LOCAL": "0", "L_JOB": "1", "PMI_FD": str(write_end)}
        talks = "import os; os.write(int(os.environ['PMI_FD']), b'cmd=init\\n')"
        proc = _rank(tmp_path, env, sys.executable, "-c", talks, pass_fds=(write_end,))
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read()
    assert proc.returncode == 0, proc.stderr
    assert said == b"cmd=init\n"
