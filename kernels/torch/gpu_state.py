"""GPU clocks and throttle reasons while a point was timed.

Why: a GPU that lowered its clocks (power cap, heat, a clock lock set by the
site) makes every kernel slower at once, and the repeats of one run cannot
show it. Recording the clocks the timed calls ran at and the reasons the
driver gives for holding them lower lets `campaign compare` say "NEW ran at
1410 MHz, power-capped" next to a slowdown (its provenance diff, category
`gpu clocks`).

Per point (each n) the harness adds three columns to every row
(docs/contracts.md): `gpu_sm_mhz`, `gpu_mem_mhz` (the clocks right after the
timed repeats, while the GPU is still at its working clocks) and
`gpu_throttle`: the reasons the driver reported then (names joined by '+',
`none` when none), plus `power_limit`/`thermal_limit` when the driver's
violation counters grew during the point (NVML only: they catch throttling
between samples). `gpu_idle` is left out: the sample follows a synchronize,
so the GPU is idle by construction and the reason says nothing about the
timed calls.

Source: NVML through pynvml where it imports (torch's own GPU queries use
it too), else one `nvidia-smi --query-gpu` call per point (after the timing,
never inside it); neither: the columns are empty.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

COLUMNS: tuple[str, ...] = ("gpu_sm_mhz", "gpu_mem_mhz", "gpu_throttle")
# nvmlClocksEventReasons / nvidia-smi clocks_event_reasons.active bits.
REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"), (0x2, "app_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting"),
)
SKIPPED_REASONS = frozenset({"gpu_idle"})
NONE = "none"
# NVML perf policies whose violation time (ns, cumulative) says the clocks
# were held down: NVML_PERF_POLICY_POWER = 0, NVML_PERF_POLICY_THERMAL = 1.
VIOLATION_POLICIES: tuple[tuple[int, str], ...] = ((0, "power_limit"), (1, "thermal_limit"))
SMI_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")  # new name, then old
_TIMEOUT_S = 10
_SHARED: dict[int, GpuState] = {}


def reason_names(mask: int) -> list[str]:
    """The named reasons of a bitmask, in bit order; unknown bits as hex."""
    names = [name for bit, name in REASONS if mask & bit and name not in SKIPPED_REASONS]
    known = 0
    for bit, _ in REASONS:
        known |= bit
    if mask & ~known:
        names.append(f"0x{mask & ~known:x}")
    return names


def throttle_text(names: Sequence[str]) -> str:
    """'none' or the reasons joined by '+' (each once, in the given order)."""
    seen = list(dict.fromkeys(n for n in names if n))
    return "+".join(seen) if seen else NONE


def parse_smi(line: str) -> dict[str, str]:
    """One `nvidia-smi --query-gpu=clocks.sm,clocks.mem,<reasons>` line
    (csv, noheader, nounits), e.g. '1980, 3201, 0x0000000000000004'. A field
    nvidia-smi cannot give ('[N/A]', 'Not Supported') stays empty."""
    fields = [f.strip() for f in line.split(",")]
    out = dict.fromkeys(COLUMNS, "")
    if len(fields) < 3:
        return out
    for col, text in zip(COLUMNS[:2], fields[:2]):
        number = text.split()[0] if text.split() else ""  # '1980' or, without nounits, '1980 MHz'
        if number.isdigit():
            out[col] = number
    try:
        out["gpu_throttle"] = throttle_text(reason_names(int(fields[2], 16)))
    except ValueError:
        pass
    return out


class GpuState:
    """Samples one CUDA device's clocks and throttle reasons. `begin()`
    before a point's calls, `sample()` after them; never raises (a missing
    or failing NVML leaves the columns empty, the timings still count)."""

    def __init__(self, uuid: str | None, index: int, nvml: Any = None, smi: str | None = None) -> None:
        self.nvml: Any = None
        self.handle: Any = None
        self.smi_id = uuid or str(index)
        self.smi = smi
        self._violations: dict[str, int] = {}
        if nvml is not None:
            try:
                nvml.nvmlInit()
                self.handle = self._handle(nvml, uuid, index)
                self.nvml = nvml
            except Exception:  # NVML absent or broken on this node: nvidia-smi, or nothing
                self.handle = None

    @staticmethod
    def _handle(nvml: Any, uuid: str | None, index: int) -> Any:
        if uuid:
            try:
                return nvml.nvmlDeviceGetHandleByUUID(uuid)
            except Exception:
                if "CUDA_VISIBLE_DEVICES" in os.environ:
                    raise  # the index would name another GPU than torch's
        return nvml.nvmlDeviceGetHandleByIndex(index)

    @classmethod
    def for_device(cls, device: Any) -> GpuState:
        """The sampler of a torch CUDA device: NVML (pynvml) when it imports,
        else nvidia-smi when it is on PATH."""
        import torch  # here: the pure parsing above needs no torch

        index = device.index if device.index is not None else torch.cuda.current_device()
        uuid = None
        try:
            raw = str(torch.cuda.get_device_properties(index).uuid)
            uuid = raw if raw.startswith(("GPU-", "MIG-")) else f"GPU-{raw}"
        except (AttributeError, RuntimeError):
            pass
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            pynvml = None
        return cls(uuid, index, nvml=pynvml, smi=shutil.which("nvidia-smi"))

    @classmethod
    def shared(cls, device: Any) -> GpuState:
        """One sampler per device index for the process (NVML is initialised once)."""
        index = device.index if device.index is not None else -1
        if index not in _SHARED:
            _SHARED[index] = cls.for_device(device)
        return _SHARED[index]

    def begin(self) -> None:
        """Note the violation counters before the point's calls."""
        self._violations = self._violation_times()

    def _violation_times(self) -> dict[str, int]:
        times: dict[str, int] = {}
        if self.nvml is None:
            return times
        for policy, name in VIOLATION_POLICIES:
            try:
                times[name] = int(self.nvml.nvmlDeviceGetViolationStatus(self.handle, policy).violationTime)
            except Exception:
                continue
        return times

    def sample(self) -> dict[str, str]:
        """The columns of this point: clocks now, reasons now, and the
        violation counters that grew since begin()."""
        if self.nvml is not None:
            return self._nvml_sample()
        if self.smi is not None:
            return self._smi_sample()
        return dict.fromkeys(COLUMNS, "")

    def _nvml_sample(self) -> dict[str, str]:
        nvml, out = self.nvml, dict.fromkeys(COLUMNS, "")
        for col, clock in (("gpu_sm_mhz", "NVML_CLOCK_SM"), ("gpu_mem_mhz", "NVML_CLOCK_MEM")):
            try:
                out[col] = str(int(nvml.nvmlDeviceGetClockInfo(self.handle, getattr(nvml, clock))))
            except Exception:
                continue
        names: list[str] | None = None
        for fn in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            if hasattr(nvml, fn):
                try:
                    names = reason_names(int(getattr(nvml, fn)(self.handle)))
                    break
                except Exception:
                    continue
        after = self._violation_times()
        grew = [name for name, t in after.items() if name in self._violations and t > self._violations[name]]
        if names is not None or grew:
            out["gpu_throttle"] = throttle_text([*(names or []), *grew])
        return out

    def _smi_sample(self) -> dict[str, str]:
        assert self.smi is not None
        for field in SMI_FIELDS:
            argv = [self.smi, f"--id={self.smi_id}", f"--query-gpu=clocks.sm,clocks.mem,{field}",
                    "--format=csv,noheader,nounits"]
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
            except (OSError, subprocess.SubprocessError):
                break
            lines = proc.stdout.strip().splitlines()
            if proc.returncode == 0 and lines:
                return parse_smi(lines[0])
        return dict.fromkeys(COLUMNS, "")
