"""Entry point of one Slurm array task: pick this task's JobTask out of the
array's manifest and run it.

One manifest (JSON) per array instead of one pickle and one folder per task
(submitit's way): a 100,000-run campaign writes a few files, not 200,000,
and what a task will run is readable text. The scheduler's index variable
is named on the command line by the backend; the job side knows no scheduler.

    python -m campaign.job.array_task MANIFEST [--index-env VAR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaign.job.runner import KernelFailed, execute
from campaign.job.task import JobTask


def task_from_json(data: dict[str, Any]) -> JobTask:
    return JobTask(
        argv=tuple(str(a) for a in data["argv"]),
        env=tuple((str(k), str(v)) for k, v in data["env"]),
        workdir=str(data["workdir"]),
        output_csv=str(data["output_csv"]),
        stack_unlimited=bool(data["stack_unlimited"]),
        record_env_prefixes=tuple(str(p) for p in data.get("record_env_prefixes", ())),
        label=str(data.get("label", "")),
        ranks=int(data.get("ranks", 1)),
        rank_records=str(data.get("rank_records", "")),
        daemons=tuple(str(c) for c in data.get("daemons", ())),
    )


def task_to_json(task: JobTask) -> dict[str, Any]:
    return {
        "argv": list(task.argv),
        "env": [list(p) for p in task.env],
        "workdir": task.workdir,
        "output_csv": task.output_csv,
        "stack_unlimited": task.stack_unlimited,
        "record_env_prefixes": list(task.record_env_prefixes),
        "label": task.label,
        **({"ranks": task.ranks, "rank_records": task.rank_records} if task.rank_records else {}),
        **({"daemons": list(task.daemons)} if task.daemons else {}),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="campaign.job.array_task")
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--index-env", help="variable holding this task's index (unset: task 0)")
    args = parser.parse_args(argv)
    tasks = json.loads(args.manifest.read_text())["tasks"]
    index = int(os.environ[args.index_env]) if args.index_env else 0
    if not 0 <= index < len(tasks):
        print(f"campaign: task index {index} outside the manifest's {len(tasks)} tasks", file=sys.stderr)
        return 2
    try:
        execute(task_from_json(tasks[index]))
    except KernelFailed as exc:
        print(f"campaign: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
