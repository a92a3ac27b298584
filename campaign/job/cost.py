"""A run's FLOP and byte counts at one point, from its kernel's cost model.

One rule for both sides (docs/byob.md#cost-models): the tool driver
(campaign.job.fom) works out each row's counts on the node with it, and
submit works out every planned run's with it first
(campaign.planning.cost_check), so an expression that fails at a run's n
(`n/0`, `sqrt(-n)`, an overflow) or gives a count that is no count (not
finite, negative) is refused before anything is submitted instead of
leaving the run's rows without a roofline. Standard library only (the job
side).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from campaign.job import expr

ROW_COUNTS = ("flops", "bytes")  # what a tool-driven benchmark's rows carry (write_bytes: the report's alone)
DEFAULT_DTYPE = "fp32"  # a run without a dtype takes the contract's default's element size


@dataclass(frozen=True)
class CostProblem:
    """An expression of the declaration that gives no count at these values."""

    key: str  # flops, bytes, write_bytes or cost_params.NAME
    text: str
    reason: str


def parameters(spec: Mapping[str, Any]) -> set[str]:
    """The run parameters the declaration's expressions read (its derived ones excluded)."""
    texts = [str(spec[k]) for k in (*ROW_COUNTS, "write_bytes") if spec.get(k)]
    read = set().union(*(expr.names(t) for t in [*texts, *map(str, spec.get("cost_params", {}).values())]))
    return read - set(spec.get("cost_params", {})) - {"element_bytes"}


def counts(
    spec: Mapping[str, Any], values: Mapping[str, str], keys: tuple[str, ...] = ROW_COUNTS
) -> tuple[dict[str, float], list[CostProblem]]:
    """The counts of `keys` the declaration `spec` gives at `values` (the
    run's parameters as text), and what gives none. A count is a finite
    number >= 0; a dtype the declaration's `element_bytes` leaves out gives
    no count and no problem (docs/byob.md: an undeclared dtype)."""
    given = dict(values)
    sizes = spec.get("element_bytes") or {}
    if sizes and (size := sizes.get(values.get("dtype") or DEFAULT_DTYPE)) is not None:
        given["element_bytes"] = str(size)
    own = dict(given)  # a derived parameter reads only the run's own (no chain)
    problems: list[CostProblem] = []
    for name, text in spec.get("cost_params", {}).items():
        if given.get(name, "") == "":  # derived only where the run has none
            try:
                given[name] = repr(expr.evaluate(str(text), own))
            except expr.ExprError as exc:
                problems.append(CostProblem(f"cost_params.{name}", str(text), str(exc)))
    out: dict[str, float] = {}
    for key in keys:
        text = str(spec.get(key) or "")
        if not text or ("element_bytes" in expr.names(text) and "element_bytes" not in given):
            continue
        try:
            value = expr.evaluate(text, given)
        except expr.ExprError as exc:
            problems.append(CostProblem(key, text, str(exc)))
            continue
        if value < 0:
            problems.append(CostProblem(key, text, f"{value:g} is negative"))
        else:
            out[key] = value
    return out, problems
