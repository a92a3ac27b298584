"""Entry point of a build or preflight job on the node.

    python -m campaign.job.step_task STEP.json

STEP.json holds {"kind": "build" | "preflight", "task": {...}}, written by the
backend before sbatch, readable text like the arrays' manifests. A failed
step exits 1, so the arrays behind it (afterok) are cancelled.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from campaign.job.build import BuildFailed, BuildTask, run_build
from campaign.job.preflight import PreflightFailed, PreflightTask, ProgramCheck, run_preflight


def step_to_json(kind: str, task: BuildTask | PreflightTask) -> dict[str, Any]:
    return {"kind": kind, "task": asdict(task)}


def _build_task(d: dict[str, Any]) -> BuildTask:
    return BuildTask(**{**d, "programs": tuple(d["programs"]), "modules": tuple(d["modules"]),
                         "wrap": tuple(d.get("wrap", ()))})


def _preflight_task(d: dict[str, Any]) -> PreflightTask:
    programs = tuple(ProgramCheck(**{**p, "argv": tuple(p["argv"]), "env": tuple(tuple(e) for e in p["env"])})
                     for p in d["programs"])
    return PreflightTask(**{**d, "programs": programs})


def run_step(data: dict[str, Any]) -> dict[str, Any]:
    if data["kind"] == "build":
        return run_build(_build_task(data["task"]))
    if data["kind"] == "preflight":
        return run_preflight(_preflight_task(data["task"]))
    raise ValueError(f"unknown step kind {data['kind']!r}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m campaign.job.step_task STEP.json", file=sys.stderr)
        return 2
    try:
        run_step(json.loads(Path(args[0]).read_text()))
    except (BuildFailed, PreflightFailed) as exc:
        print(f"campaign: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
