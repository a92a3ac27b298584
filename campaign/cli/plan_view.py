"""`campaign plan-repeats` as text or JSON (campaign.commands.repeat_plan)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

from campaign import api


def cmd_plan_repeats(args: argparse.Namespace, ledger: Callable[..., Any]) -> int:
    plan = api.plan_repeats(lambda: ledger(args, create=False), args.pilot, width=args.width,
                            job_overhead=args.job_overhead)
    if getattr(args, "format", None) == "json":
        json.dump(dataclasses.asdict(plan), sys.stdout)
        sys.stdout.write("\n")
    else:
        print("\n".join(plan.lines()))
    return 0
