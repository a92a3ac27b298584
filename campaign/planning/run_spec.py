"""RunSpec: one run, everything its job needs, and the key that names it.

A run is one job: kernel × impl × variant × partition × threads × dtype ×
grid point, looping over the whole n-sweep in one process. Its key is a hash
of all of it, stable across versions: a field added later stays out of the
hash at its neutral value, so a submit of an old plan stays idempotent.
plan.py makes RunSpecs from an experiment; the ledger stores them as JSON.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

from campaign.job.element_type import shown_dtype
from campaign.planning import byob
from campaign.planning.run_label import run_label

KEY_LENGTH = 16


@dataclass(frozen=True)
class RunSpec:
    """Everything a job needs; its key is a hash of all of it."""

    cluster: str
    partition: str
    kernel: str
    impl: str
    variant: str
    device: str
    dtype: str
    threads: int
    gpus: int
    n: tuple[int, ...]
    d: int | None  # None: a tool-driven benchmark whose sweep sets no d
    repeats: int
    warmup: int
    check: bool
    walltime_min: int
    mem_gb: float | None
    argv: tuple[str, ...]
    extra_args: tuple[tuple[str, str], ...] = ()
    # What else changes the measurement: rendered environment, modules, program
    # content/versions (campaign.planning.identity fills it in before submit).
    identity: tuple[tuple[str, str], ...] = ()
    cpus: int = 0  # cores allocated (campaign.planning.resources); 0 = as many as threads
    exclusive: bool = False  # whole node (--exclusive)
    replicate: int = 0  # which independent job of its configuration (campaign.planning.replicates)
    # campaign.planning.ranks: `threads` and `cpus` are per rank, `gpus` per node, `mem_gb` per node
    nodes: int = 1
    ranks_per_node: int = 1
    gpus_per_rank: int = 0
    launched: bool = False  # through the partition's launcher even at one rank (ImplSpec.launched)
    repeat_by: str = ""  # launched tool-driven: launch (one per repeat) | program (one per n); "": one per job

    @property
    def alloc_cpus(self) -> int:
        return self.cpus or self.threads

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node

    @cached_property
    def key(self) -> str:
        # Cached: a 10,000-run plan asks for keys many times (dedup, ledger, labels).
        data = self.to_json()
        # fields added later stay out of the hash at their neutral value, so
        # runs planned before them keep their keys (submit stays idempotent)
        if not self.identity:  # runs planned without identity keep the keys they always had
            del data["identity"]
        if data["cpus"] in (0, data["threads"]):
            del data["cpus"]
        for name, neutral in _NEUTRAL.items():  # replicate 0: the run an unreplicated experiment plans
            if data[name] == neutral:
                del data[name]
        blob = _KEY_JSON.encode(data)
        return hashlib.sha256(blob.encode()).hexdigest()[:KEY_LENGTH]

    @property
    def label(self) -> str:
        return run_label(self.kernel, self.impl, self.variant, shown_dtype(self.dtype, self.argv), self.partition,
                         self.threads, self.gpus, self.cpus, self.nodes, self.ranks_per_node, self.gpus_per_rank,
                         self.extra_args, self.replicate)

    def command(self, out_csv: str) -> list[str]:
        """The kernel program's argument list (docs/design.md#kernel-program-contract)."""
        args = list(_command_head(self.argv, ",".join(str(v) for v in self.n), self.d, self.threads, self.repeats, self.warmup, self.device,
                                  self.dtype, self.variant, self.check))
        for key, value in self.extra_args:
            args += [f"--{key}", value]
        if byob.is_tool(self.argv):  # the driver fills {nodes}, {ranks}, {gpus}, {grid_p} ... (docs/byob.md)
            args += ["--nodes", str(self.nodes), "--ranks-per-node", str(self.ranks_per_node), "--gpus", str(self.gpus * self.nodes)]
        return args + ["--out", out_csv]

    def to_json(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every tuple (4x slower at
        # 100,000 runs, BENCHMARKS.md section 2); json.dumps writes tuples as lists either way, so keys
        # and stored specs are byte-identical to what asdict gave.
        data = self.__dict__.copy()  # the fields in declaration order (__init__ and evolve keep it), + cached key
        data.pop("key", None)
        if len(data) != len(_NAMES):  # some other cached attribute: take the fields by name
            data = {f.name: getattr(self, f.name) for f in _FIELDS}
        return data

    def evolve(self, **changes: Any) -> RunSpec:
        """A copy with `changes` (dataclasses.replace without its per-field
        __init__: 100,000 runs get their identity this way); the cached key
        is dropped, since the fields it hashes changed."""
        unknown = changes.keys() - _NAMES
        if unknown:
            raise TypeError(f"RunSpec has no field {sorted(unknown)[0]!r}")
        new = object.__new__(RunSpec)
        state = new.__dict__
        state.update(self.__dict__)
        state.pop("key", None)
        state.update(changes)
        return new

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        data = dict(data)
        data["n"] = tuple(data["n"])
        data["argv"] = tuple(data["argv"])
        data["extra_args"] = tuple(tuple(p) for p in data.get("extra_args", ()))
        data["identity"] = tuple(tuple(p) for p in data.get("identity", ()))
        return cls(**data)


@functools.lru_cache(maxsize=1024, typed=True)  # typed: a bool is not the int 1 here (str(True))
def _command_head(argv: tuple[str, ...], n: str, d: int | None, threads: int, repeats: int, warmup: int,
                  device: str, dtype: str, variant: str, check: bool) -> tuple[str, ...]:
    """The program and its fixed options: shared by all grid points of a
    sweep, so made once for them, not once per run."""
    args = list(argv) + [
        "--n", n,
        *(("--d", str(d)) if d is not None else ()),  # none: a tool-driven benchmark without d (docs/byob.md)
        "--threads", str(threads),
        "--repeats", str(repeats),
        "--warmup", str(warmup),
        "--device", device,
        "--dtype", dtype,
        "--variant", variant,
    ]
    if check:
        args.append("--check")
    return tuple(args)


_FIELDS = fields(RunSpec)
# json.dumps with arguments builds a new encoder per call; the key's one is made once
# (no circular check: a spec is flat)
_KEY_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)
_NAMES = frozenset(f.name for f in _FIELDS)
# Fields left out of the key at these values: runs planned before them keep their keys.
_NEUTRAL: dict[str, Any] = {"exclusive": False, "replicate": 0, "nodes": 1, "ranks_per_node": 1, "gpus_per_rank": 0,
                             "launched": False, "repeat_by": ""}
