"""`--profile perf`: the CPU side of profile.py, with `perf stat`.

Same pattern as ncu: one extra, separately launched process per n, counting
only its one profiled call. perf starts with its counters disabled
(--delay=-1) and listens on a control FIFO; the child writes `enable` before
the call and `disable` after it (waiting for perf's `ack` each time), so
start-up, input generation and warm-ups are never counted.

Events: last-level cache loads/misses and stores/misses (with 64-byte lines,
misses x 64 approximates the memory traffic), plus cycles, instructions and
task-clock. Where the hardware events do not exist (a VM, a container, a
site's perf_event_paranoid), perf prints `<not supported>`: the row says so
and the timings still count.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

EVENTS: tuple[str, ...] = (
    "task-clock", "cycles", "instructions", "cache-references", "cache-misses",
    "LLC-loads", "LLC-load-misses", "LLC-stores", "LLC-store-misses",
)
HARDWARE = tuple(e for e in EVENTS if e != "task-clock")
CTL_ENV = "CAMPAIGN_PERF_CTL"
ACK_ENV = "CAMPAIGN_PERF_ACK"
LINE_BYTES = 64


def command(perf: str, out_file: str, ctl: str, ack: str, program: Sequence[str]) -> list[str]:
    """`perf stat` in CSV form (-x,), counters off until the child enables them."""
    return [perf, "stat", "-x", ",", "--no-big-num", "-o", out_file, "--delay=-1",
            f"--control=fifo:{ctl},{ack}", "-e", ",".join(EVENTS), "--", *program]


def parse(text: str) -> tuple[list[tuple[str, float, str]], str | None]:
    """perf's -x, lines (value,unit,event,...) -> (metric, value, unit), and
    the failure reason when no hardware event was counted."""
    rows: list[tuple[str, float, str]] = []
    unsupported: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, unit, event = fields[0].strip(), fields[1].strip(), fields[2].strip()
        event = event.split(":")[0]  # cycles:u -> cycles
        if value.startswith("<"):  # <not supported>, <not counted>
            unsupported.append(f"{event} {value}")
            continue
        try:
            rows.append((f"perf.{event}", float(value), unit or "count"))
        except ValueError:
            continue
    counted = {m[len("perf."):] for m, _, _ in rows}
    if not counted & set(HARDWARE):
        why = "; ".join(unsupported) if unsupported else "perf counted no hardware event"
        return rows, f"perf: no hardware events here ({why})"
    misses = sum(v for m, v, _ in rows if m in ("perf.LLC-load-misses", "perf.LLC-store-misses"))
    if any(m.startswith("perf.LLC-") for m, _, _ in rows):
        rows.append(("llc_miss_bytes", misses * LINE_BYTES, "byte"))
    return rows, None


class Control:
    """The child's side of the control FIFOs (no-op without them)."""

    def __init__(self) -> None:
        self.ctl = os.environ.get(CTL_ENV)
        self.ack = os.environ.get(ACK_ENV)

    @property
    def active(self) -> bool:
        return bool(self.ctl and self.ack)

    def send(self, word: str) -> None:
        if not self.active:
            return
        assert self.ctl is not None and self.ack is not None
        with open(self.ctl, "w") as ctl:
            ctl.write(f"{word}\n")
        with open(self.ack) as ack:
            ack.readline()
