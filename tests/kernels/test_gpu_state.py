"""GPU clocks and throttle reasons per point (kernels/torch/gpu_state.py),
on the CPU: the nvidia-smi parsing, the reason bits, and the NVML
path against a stand-in of pynvml's functions (no GPU here; on the H200 the
real NVML is read by tests/kernels/test_torch_kernels.py::test_cuda_short_calls_batched)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kernels.torch import gpu_state
from kernels.torch.gpu_state import COLUMNS, GpuState, parse_smi, reason_names


def test_reason_bits_name_each_reason_and_drop_idle() -> None:
    assert reason_names(0) == []
    assert reason_names(0x1) == []  # gpu_idle: the sample follows a synchronize
    assert reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert reason_names(0x1 | 0x20) == ["sw_thermal_slowdown"]
    assert reason_names(0x4 | 0x10000) == ["sw_power_cap", "0x10000"]  # an unknown bit is kept, as hex


def test_parse_smi_lines_of_several_drivers() -> None:
    assert parse_smi("1980, 3201, 0x0000000000000000") == {
        "gpu_sm_mhz": "1980", "gpu_mem_mhz": "3201", "gpu_throttle": "none"}
    assert parse_smi("1410, 3201, 0x0000000000000004")["gpu_throttle"] == "sw_power_cap"
    assert parse_smi("1410, 3201, 0x0000000000000005")["gpu_throttle"] == "sw_power_cap"  # + idle
    # fields the driver cannot give stay empty, never a made-up number
    assert parse_smi("[N/A], [N/A], [N/A]") == dict.fromkeys(COLUMNS, "")
    assert parse_smi("") == dict.fromkeys(COLUMNS, "")
    assert parse_smi("1980, 3201") == dict.fromkeys(COLUMNS, "")
    assert parse_smi("1980, Not Supported, 0x8")["gpu_mem_mhz"] == ""
    assert parse_smi("1980 MHz, 3201 MHz, 0x0")["gpu_sm_mhz"] == "1980"  # a driver that ignores nounits
    assert parse_smi("-5, 1e9, 0xZZ") == dict.fromkeys(COLUMNS, "")  # nonsense stays empty


class FakeNvml:
    """pynvml's functions that GpuState calls, with a settable device state."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    def __init__(self, sm: int = 1980, mem: int = 3201, reasons: int = 0, uuids: tuple[str, ...] = ("GPU-a",),
                 old_api: bool = False) -> None:
        self.sm, self.mem, self.reasons, self.uuids = sm, mem, reasons, uuids
        self.violation = {0: 0, 1: 0}
        if old_api:  # drivers before 535 name it "throttle"
            self.nvmlDeviceGetCurrentClocksThrottleReasons = self._reasons
        else:
            self.nvmlDeviceGetCurrentClocksEventReasons = self._reasons

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        if uuid not in self.uuids:
            raise RuntimeError("NVML_ERROR_NOT_FOUND")
        return uuid

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return self.uuids[index]

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:
        return self.sm if clock == self.NVML_CLOCK_SM else self.mem

    def _reasons(self, handle: str) -> int:
        return self.reasons

    def nvmlDeviceGetViolationStatus(self, handle: str, policy: int) -> Any:
        return SimpleNamespace(referenceTime=0, violationTime=self.violation[policy])


def test_nvml_clocks_reasons_and_violation_counters() -> None:
    nvml = FakeNvml()
    state = GpuState("GPU-a", 0, nvml=nvml)
    state.begin()
    assert state.sample() == {"gpu_sm_mhz": "1980", "gpu_mem_mhz": "3201", "gpu_throttle": "none"}
    # power capped during the point, no longer at the sample: the counter still tells
    state.begin()
    nvml.violation[0] += 3_000_000
    nvml.sm = 1410
    assert state.sample() == {"gpu_sm_mhz": "1410", "gpu_mem_mhz": "3201", "gpu_throttle": "power_limit"}
    state.begin()
    nvml.reasons, nvml.violation[1] = 0x20, 10
    assert state.sample()["gpu_throttle"] == "sw_thermal_slowdown+thermal_limit"
    old = FakeNvml(reasons=0x4, old_api=True)
    assert GpuState("GPU-a", 0, nvml=old).sample()["gpu_throttle"] == "sw_power_cap"


def test_uuid_names_the_gpu_torch_sees(monkeypatch: Any) -> None:
    nvml = FakeNvml(uuids=("GPU-a", "GPU-b"))
    nvml.sm = 1500
    assert GpuState("GPU-b", 0, nvml=nvml).handle == "GPU-b"
    # an unknown UUID with CUDA_VISIBLE_DEVICES set: the index would be another GPU, so no NVML
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    lost = GpuState("GPU-zzz", 0, nvml=nvml)
    assert lost.nvml is None and lost.sample() == dict.fromkeys(COLUMNS, "")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert GpuState("GPU-zzz", 1, nvml=nvml).handle == "GPU-b"


def test_broken_nvml_never_raises() -> None:
    class Broken(FakeNvml):
        def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:
            raise RuntimeError("NVML_ERROR_GPU_IS_LOST")

        def nvmlDeviceGetViolationStatus(self, handle: str, policy: int) -> Any:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    state = GpuState("GPU-a", 0, nvml=Broken(reasons=0x8))
    state.begin()
    assert state.sample() == {"gpu_sm_mhz": "", "gpu_mem_mhz": "", "gpu_throttle": "hw_slowdown"}

    class NoInit(FakeNvml):
        def nvmlInit(self) -> None:
            raise RuntimeError("NVML_ERROR_DRIVER_NOT_LOADED")

    assert GpuState("GPU-a", 0, nvml=NoInit()).sample() == dict.fromkeys(COLUMNS, "")


def _fake_smi(tmp_path: Path, body: str) -> str:
    """An nvidia-smi stand-in: a real program run as a subprocess, with its argv logged."""
    path = tmp_path / "nvidia-smi"
    path.write_text(f"#!{sys.executable}\nimport sys\nopen({str(tmp_path / 'argv')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_nvidia_smi_fallback_asks_for_the_gpu_by_uuid_and_tries_the_old_field(tmp_path: Path) -> None:
    # a driver that knows only the old field name
    smi = _fake_smi(tmp_path, "if 'clocks_event_reasons' in ' '.join(sys.argv): sys.exit(2)\n"
                              "print('1755, 2619, 0x0000000000000040')")
    state = GpuState("GPU-a", 0, nvml=None, smi=smi)
    assert state.sample() == {"gpu_sm_mhz": "1755", "gpu_mem_mhz": "2619", "gpu_throttle": "hw_thermal_slowdown"}
    argv = (tmp_path / "argv").read_text().splitlines()
    assert len(argv) == 2 and all("--id=GPU-a" in a for a in argv)
    assert "clocks_throttle_reasons.active" in argv[1]
    failing = _fake_smi(tmp_path, "sys.exit(9)")
    assert GpuState(None, 0, smi=failing).sample() == dict.fromkeys(COLUMNS, "")
    assert GpuState(None, 0).sample() == dict.fromkeys(COLUMNS, "")  # neither NVML nor nvidia-smi
    assert os.path.basename(smi) == "nvidia-smi" and gpu_state.NONE == "none"
