"""Every planned run's cost counts, worked out before anything is submitted.

Every n, thread count, d, shape and grid value of a run is known at plan
time, so a cost expression that gives no count at one of them (`flops: n/0`,
`bytes: log2(n-n)`, `sqrt(-n)`, an overflow at a big n, a negative or
non-finite result) is refused here, one line naming the kernel, the
expression and the point (exit 2), instead of each job warning on its node
and its rows going without a roofline (docs/byob.md#cost-models). The counts
are worked out by the job side's own rule (campaign.job.cost) at the values
the job's driver will give it (campaign.job.fom.point_values), so what
passes here is what the node computes.
"""

from __future__ import annotations

from typing import Any

from campaign.config.schema import KernelSpec
from campaign.job import cost, fom
from campaign.planning import byob
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import ConfigError


class CostCheck:
    """The check of one sweep's runs on one partition; a point already
    worked out (the same values of what the expressions read) is not worked
    out again, so a 100,000-point grid whose costs read only n costs a few
    evaluations."""

    def __init__(self, kernel: KernelSpec, index: int) -> None:
        self.kernel, self.index = kernel, index
        self.keys = tuple(k for k in byob.COST_KEYS if getattr(kernel, k) is not None)
        self.specs: dict[str, dict[str, Any]] = {}
        self.read: set[str] = set()
        self.seen: set[tuple[str, ...]] = set()

    def check(self, base: RunSpec, points: list[tuple[tuple[str, str], ...]]) -> None:
        """The runs of `base` at each grid point of `points`; ConfigError for the first that gives no count."""
        if not self.keys and not self.kernel.cost_params:
            return
        spec = self.specs.get(base.impl)
        if spec is None:
            spec = self.specs[base.impl] = byob.driver_spec(self.kernel, base.impl)
            self.read = cost.parameters(spec)
        head = base.evolve(extra_args=())
        contract, _, _ = fom.parse_args(head.command("-")[len(head.argv) :])
        # a contract program gets no shape options; its rows have the run's shape all the same
        contract = {
            "nodes": str(base.nodes),
            "ranks-per-node": str(base.ranks_per_node),
            "gpus": str(base.gpus * base.nodes),
            **contract,
        }
        repeats = range(base.repeats) if "repeat" in self.read else range(1)
        # the grid values the expressions read: points that differ only in others are one point here
        read = self.read | {k.replace("_", "-") for k in self.read}
        for point in dict.fromkeys(tuple(p for p in point if p[0] in read) for point in points or [()]):
            values = fom.point_values(contract, dict(point))
            for n in base.n:
                for repeat in repeats:
                    at = {**values, "n": str(n), "repeat": str(repeat)}
                    seen = (base.impl, base.dtype, *(f"{k}={at.get(k)}" for k in sorted(self.read)))
                    if seen not in self.seen:
                        self.seen.add(seen)
                        self._one(spec, at)

    def _one(self, spec: dict[str, Any], values: dict[str, str]) -> None:
        _, problems = cost.counts(spec, values, self.keys)
        if not problems:
            return
        problem = problems[0]
        shown = sorted(self.read, key=lambda k: (k != "n", k))  # n first: what a sweep varies most
        at = ", ".join(f"{k}={values[k]}" for k in shown if k in values)
        raise ConfigError(
            f"kernels.{self.kernel.name}.{problem.key}={problem.text[:60]!r} gives no count"
            f"{' at ' + at if at else ''} (a run of experiment.sweeps.{self.index}): {problem.reason}; "
            "nothing was submitted"
        )
