"""Batch timing of short GPU calls: how many back-to-back calls
one CUDA-event pair times, and the timing of such a batch.

Why: one event pair around one call of a kernel under ~100 us times the
host's launch path as much as the kernel. On the H200, two runs of the same
decode point a day apart gave 7.3 and 52 us (BENCHMARKS.md section 5): the
pair measured Python and the driver, not the GPU. Timing k calls queued back
to back between one pair, with k chosen so the batch lasts a few hundred
microseconds, makes the launch cost of the pair negligible and lets the
calls overlap their launches with the previous call's work, which is how
such kernels run in a model; time_s is the batch's time / k (per call) and
the row's `calls` column records k (docs/contracts.md).

k is calibrated per point (per n): after the warm-ups, batches of growing
size are timed until one lasts `target_s`; a call that alone takes at least
`below_s` (default 100 us) is timed one call per repeat, as before. k is
then fixed for all repeats of that point, so every repeat measures the same
thing. The sizing rule (`next_calls`, `calls_for`) is pure so that it is
tested without a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable

# A call that alone takes at least this long is timed one call per repeat:
# the event pair's few microseconds of launch path are then under ~5% of it.
BELOW_S = 100e-6
# A batch lasts at least this long: the event pair's cost (a few us) is then
# ~1% of the batch, and the batch is still far shorter than a repeat budget.
TARGET_S = 500e-6
# Never more calls than this in one batch: a call that measures as ~0 would
# otherwise ask for an unbounded batch, and the whole batch must sit in the
# GPU's launch queue (about a thousand launches; a call may be several)
# before the GPU reaches it (kernels/torch/timing.py: the spin).
MAX_CALLS = 256
# Single calls timed before deciding whether to batch at all; the fastest
# counts. Measured on the H200 (BENCHMARKS.md): with one probe, one
# slow first call (16 us kernels timed at >= 100 us) left 18 of 84 runs of
# points unbatched in one of two runs, and those were 10 of the 10 points
# the two runs disagreed on.
SINGLE_PROBES = 3
# Calibration steps (each one timed batch): enough to go from 1 call to
# MAX_CALLS by the growth rule below.
MAX_STEPS = 16
# At most this factor of growth per step, so a first measurement inflated by
# a cold start (or deflated by timer granularity) cannot overshoot far.
MAX_GROWTH = 16


def _finite_positive(x: float) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def calls_for(per_call_s: float, target_s: float = TARGET_S, below_s: float = BELOW_S,
              max_calls: int = MAX_CALLS) -> int:
    """Calls per batch for a call of `per_call_s`: 1 when batching is off
    (target <= 0) or the call is long enough alone (>= below_s); else enough
    calls to fill `target_s`, within [1, max_calls]. A per-call time that is
    0, negative, NaN or inf says nothing usable: a broken timer must not
    size a batch of millions, nor a NaN crash the run, so it gives max_calls
    when batching is on (the batch is still bounded)."""
    max_calls = max(1, int(max_calls))
    if not _finite_positive(target_s):
        return 1
    if math.isfinite(per_call_s) and per_call_s >= below_s:
        return 1
    if not _finite_positive(per_call_s):
        return max_calls
    return max(1, min(max_calls, math.ceil(target_s / per_call_s)))


def next_calls(calls: int, batch_s: float, target_s: float = TARGET_S,
               max_calls: int = MAX_CALLS) -> int:
    """The next batch size to try after `calls` calls took `batch_s`; equal to
    `calls` once the batch lasts `target_s` (or at max_calls). Grows by at
    least 2x and at most MAX_GROWTH x per step, aiming a little over the
    target so the step after it usually confirms it."""
    calls = max(1, min(int(calls), max(1, int(max_calls))))
    if not _finite_positive(target_s) or (_finite_positive(batch_s) and batch_s >= target_s):
        return calls
    if calls >= max_calls:
        return calls
    if _finite_positive(batch_s):
        want = math.ceil(1.2 * calls * target_s / batch_s)
    else:  # below the timer's resolution: grow as fast as allowed
        want = calls * MAX_GROWTH
    return min(max_calls, max(calls * 2, min(want, calls * MAX_GROWTH)))


def calibrate(time_batch: Callable[[int], float], target_s: float = TARGET_S, below_s: float = BELOW_S,
              max_calls: int = MAX_CALLS) -> int:
    """The batch size for one point. `time_batch(k)` times k back-to-back
    calls and returns seconds. Single calls first (SINGLE_PROBES, the
    fastest counts): at or above `below_s` (or batching off) the answer is 1. Otherwise batches grow (next_calls) until
    one lasts `target_s`; the answer is the size that did, or max_calls."""
    if not _finite_positive(target_s):
        return 1
    max_calls = max(1, int(max_calls))
    probes = [time_batch(1) for _ in range(SINGLE_PROBES)]
    usable = [t for t in probes if _finite_positive(t)]
    single = min(usable) if usable else math.nan
    if calls_for(single, target_s, below_s, max_calls) == 1:
        return 1
    calls, batch_s = 1, single
    for _ in range(MAX_STEPS):
        nxt = next_calls(calls, batch_s, target_s, max_calls)
        if nxt == calls:
            return calls
        calls = min(nxt, max_calls)
        batch_s = time_batch(calls)
    return calls
