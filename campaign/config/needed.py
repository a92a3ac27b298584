"""Which kernel YAMLs a composition needs: the kernels the experiment's sweeps
name and those the command line names, never every kernel on the config path.

Each kernel composed is a YAML file read and merged against the schema: with
all of them (14 shipped, plus a site's) composing was three times the cost of
composing the two that `experiment=smoke` runs, paid by every `submit`,
`plan` and dry run. The experiment is therefore composed first on its own
(no cluster, no kernels: the cheapest composition that still applies the
command line's `experiment...` overrides, so an override that changes a
sweep's kernel or the experiment is seen), and only then the whole config
with the kernels found.

A kernel YAML no sweep and no override names is not read at all: a broken one
does not stop an experiment that does not use it, exactly as a broken
experiment file does not stop another experiment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from campaign.config.groups import group_options

KERNELS = "kernels"  # where each kernel YAML is composed: kernels.<name>


def defaults(names: Sequence[str]) -> list[str]:
    """The Hydra overrides that compose each kernel file under `kernels.<name>`."""
    return [f"+kernel@{KERNELS}.{k}={k}" for k in names]


def _target(item: str) -> str | None:
    """The key under `kernels` an override writes to (`kernels.decode.x=1`,
    `~kernels.decode`, `+kernel@kernels.mine=decode`), else None."""
    key = item.partition("=")[0].lstrip("+~")
    if key.startswith("kernel@"):
        key = key.partition("@")[2]
    return key if key == KERNELS or key.startswith(KERNELS + ".") else None


def named(overrides: Sequence[str]) -> set[str] | None:
    """Kernels the command line names; None where it sets `kernels` as a whole."""
    found: set[str] = set()
    for item in overrides:
        target = _target(item)
        if target == KERNELS:
            return None
        if target is not None:
            found.add(target.split(".")[1])
    return found


def _experiment_only(overrides: Sequence[str]) -> list[str]:
    """The overrides that shape the experiment (and Hydra's own), without a
    cluster: composing one is up to half of a compose (Delta's partitions)."""
    keep = [o for o in overrides if o.partition("=")[0].lstrip("+~").partition(".")[0] in ("experiment", "hydra")]
    return ["~cluster", *keep]


def kernels(overrides: Sequence[str], compose: Callable[[list[str]], Any]) -> list[str]:
    """The kernel files to compose for `overrides` (as Hydra reads them):
    the sweeps' kernels and the command line's, those that have a file.
    `compose` composes conf/config.yaml with the overrides it is given.

    Where the experiment cannot be composed on its own (a mistake in it, in
    an override of it, or a reference to the cluster), the whole config is
    composed with the kernels the command line names: it gives the sweeps'
    kernels, or, where it fails too, the mistake is not in a kernel nothing
    names, and the full compose with those kernels names it in its own words.
    Composing every kernel there named a broken kernel file the experiment
    does not use (YAML it cannot read, an unknown key) in its place."""
    available = group_options("kernel")
    wanted = named(overrides)
    if wanted is None:
        return available
    try:
        sweeps = compose(_experiment_only(overrides)).experiment.sweeps
    except Exception:  # noqa: BLE001 - any failure: composed whole, below
        try:
            sweeps = compose([*defaults([k for k in available if k in wanted]), *overrides]).experiment.sweeps
        except Exception:  # noqa: BLE001 - the full compose with these kernels names the mistake
            return [k for k in available if k in wanted]
    wanted |= {str(sweep.kernel) for sweep in sweeps}
    return [k for k in available if k in wanted]
