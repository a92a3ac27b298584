"""Compose-time checks of a benchmark declaration (campaign.planning.byob): each
mistake is one ConfigError naming the key, before anything is planned."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from campaign.config.schema import FigureSpec, ImplSpec, KernelSpec, SanitySpec, SweepSpec
from campaign.planning import byob
from campaign.plumbing.errors import ConfigError
from tests.conftest import REPO


def _kernel(**more: object) -> KernelSpec:
    base = {
        "name": "mine",
        "driven_by": "tool",
        "impls": {"py": ImplSpec(argv=["prog", "{n}"], variants=["v"])},
        "figures": [FigureSpec(name="time", regex=r"time: (\S+)", unit="s")],
    }
    base.update(more)
    return KernelSpec(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "more,named",
    [
        ({"driven_by": "shell"}, "kernels.mine.driven_by='shell'"),
        ({"figures": []}, "kernels.mine.figures is empty"),
        ({"figures": [FigureSpec(name="t", regex="a", json="b")]}, "kernels.mine.figures[0]: give exactly one"),
        ({"figures": [FigureSpec(name="t")]}, "kernels.mine.figures[0]: give exactly one"),
        (
            {"figures": [FigureSpec(name="t", regex="a"), FigureSpec(name="t", regex="b")]},
            "figures[1].name='t' appears",
        ),
        ({"figures": [FigureSpec(name="bad name", regex="a")]}, "figures[0].name='bad name'"),
        (
            {"figures": [FigureSpec(name="débit", regex="a")]},
            "figures[0].name='débit' is not a valid figure name: an ASCII",
        ),
        ({"figures": [FigureSpec(name="t", regex="a", source="file:/etc/passwd")]}, "figures[0].source="),
        ({"figures": [FigureSpec(name="t", regex="a", source="file:../x")]}, "figures[0].source="),
        ({"figures": [FigureSpec(name="t", regex="a", source="socket")]}, "figures[0].source='socket'"),
        ({"sanity": [SanitySpec(regex="(")]}, "kernels.mine.sanity[0].regex='(' does not compile"),
        ({"sanity": [SanitySpec(regex="x", expect="maybe")]}, "sanity[0].expect='maybe'"),
        ({"bytes": "n.real"}, "kernels.mine.bytes='n.real'"),
        ({"figures": [FigureSpec(name="t", regex="a", unit="GB/s\nX")]}, "figures[0].unit="),
        ({"driven_by": "program"}, "need driven_by: tool"),
        ({"repeat_by": "n"}, "kernels.mine.repeat_by='n' is not one of launch, program"),
        ({"result_rank": -1}, "kernels.mine.result_rank=-1: the rank whose output"),
        (
            {"driven_by": "program", "figures": [], "repeat_by": "program"},
            "repeat_by, result_rank and fixed_duration need driven_by",
        ),
        ({"figures": [FigureSpec(name="t", regex="a", reduce="median")]}, "figures[0].reduce='median': one of max"),
        (
            {"figures": [FigureSpec(name="t", regex="a", unit="s", duration=True)]},
            "kernels.mine.figures[0].duration: only a program declared fixed_duration: true runs for a set time",
        ),
        (
            {"figures": [FigureSpec(name="t", regex="a", reduce="sum", source="file:x")]},
            "over a file: name each rank's file with {rank}",
        ),
        (
            {"driven_by": "program", "inputs": {"in.txt": "x"}},
            "inputs, script, repeat_by, result_rank and fixed_duration need driven_by: tool",
        ),
        ({"inputs": {"../in.txt": "x"}}, "kernels.mine.inputs: '../in.txt' is not an input file name"),
        ({"inputs": {"results.csv": "x"}}, "kernels.mine.inputs: 'results.csv' is not an input file name"),
        ({"inputs": {"exit.json": "x"}}, "kernels.mine.inputs: 'exit.json' is not an input file name"),
        ({"inputs": {"fom-n1-r0.out": "x"}}, "kernels.mine.inputs: 'fom-n1-r0.out' is not an input file name"),
        ({"input_templates": {"in.txt": "/nonexistent/in.tmpl"}}, "kernels.mine.input_templates.in.txt='/nonexistent"),
    ],
)
def test_bad_declarations_name_their_key(more: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=None) as err:
        byob.check_kernel("mine", _kernel(**more))
    assert named in str(err.value)


def test_placeholders_and_expressions_name_swept_parameters_only() -> None:
    sweep = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], grid={"block-size": [1, 2]})
    byob.check_sweep(_kernel(flops="n*block_size", env={"B": "{block_size}"}), sweep, 0)
    with pytest.raises(ConfigError, match=r"kernels.mine.env.B: placeholder \{tile\}"):
        byob.check_sweep(_kernel(env={"B": "{tile}"}), sweep, 0)
    with pytest.raises(ConfigError, match=r"placeholder \{d\} is not a swept parameter of experiment.sweeps.3"):
        byob.check_sweep(_kernel(impls={"py": ImplSpec(argv=["p", "{d}"], variants=["v"])}), sweep, 3)
    with pytest.raises(ConfigError, match="names 'dtype', not a numeric parameter"):
        byob.check_sweep(_kernel(bytes="dtype*n"), sweep, 0)
    with pytest.raises(ConfigError, match=r"argv\[1\]: placeholder \{rank\} is not a swept parameter"):
        byob.check_sweep(_kernel(impls={"py": ImplSpec(argv=["p", "{rank}"], variants=["v"])}), sweep, 0)
    with pytest.raises(ConfigError, match=r"sanity\[0\].source: placeholder \{tile\}"):
        byob.check_sweep(_kernel(sanity=[SanitySpec(regex="x", source="file:{tile}.log")]), sweep, 0)
    # {rank} names a file source's rank: each rank's file under reduce, else the result rank's
    byob.check_sweep(
        _kernel(
            figures=[FigureSpec(name="t", regex="a", reduce="max", source="file:out.{rank}")],
            sanity=[SanitySpec(regex="x", source="file:log.{rank}")],
        ),
        sweep,
        0,
    )
    named = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], grid={"block": [4, "big"]})
    with pytest.raises(ConfigError, match="kernels.mine.flops='n\\*block' reads block, .* value 'big', not a number"):
        byob.check_sweep(_kernel(flops="n*block"), named, 0)


def test_the_runs_shape_is_a_placeholder_of_every_template() -> None:
    sweep = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], nodes=[1, 2])
    shape = "{nodes} {ranks} {ranks_per_node} {gpus} {grid_p} {grid_q}"
    byob.check_sweep(
        _kernel(
            impls={"py": ImplSpec(script=f"prog {shape}\nmore {{n}}", variants=["v"])},
            env={"S": shape},
            inputs={"in.txt": f"P={{grid_p}}\n{shape}\n"},
        ),
        sweep,
        0,
    )
    with pytest.raises(ConfigError, match=r"kernels.mine.inputs.in.txt: placeholder \{grid_r\} is not a swept"):
        byob.check_sweep(_kernel(inputs={"in.txt": "P={grid_p}\nR={grid_r}\n"}), sweep, 0)
    with pytest.raises(ConfigError, match=r"kernels.mine.impls.py.script: placeholder \{np\}"):
        byob.check_sweep(_kernel(impls={"py": ImplSpec(script="prog -np {np} x", variants=["v"])}), sweep, 0)
    shadow = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], grid={"nodes": [1, 2]})
    with pytest.raises(ConfigError, match="'nodes' is the run's own shape"):
        byob.check_sweep(_kernel(), shadow, 0)


def test_a_template_file_is_read_once_into_the_declaration(tmp_path: Path) -> None:
    (tmp_path / "in.tmpl").write_text("P={grid_p} Q={grid_q}\n")
    kernel = _kernel(input_templates={"in.txt": str(tmp_path / "in.tmpl")})
    byob.check_kernel("mine", kernel)
    assert kernel.inputs == {"in.txt": "P={grid_p} Q={grid_q}\n"} and not kernel.input_templates
    spec = json.loads(byob.tool_argv("python3", kernel, "py")[3])
    assert spec["inputs"] == kernel.inputs  # travels with the run: part of its key


@pytest.mark.parametrize("values,sizes", [([1000000], (1000000,)), (["1e6", 2e3, 5], (1000000, 2000, 5))])
def test_sizes_may_be_written_in_exponent_notation(values: list, sizes: tuple) -> None:
    assert byob.sizes(values, "experiment.sweeps.0") == sizes


@pytest.mark.parametrize("bad", [[1.5], [0], [-2], [True], ["x"], ["nan"], ["inf"], [1e30], []])
def test_sizes_that_are_no_positive_integers_are_refused(bad: list) -> None:
    with pytest.raises(ConfigError, match="experiment.sweeps.0.n"):
        byob.sizes(bad, "experiment.sweeps.0")


def test_the_result_rank_must_exist_in_every_run_of_the_sweep() -> None:
    sweep = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], nodes=[1, 2], ranks_per_node=[2])
    byob.check_sweep(_kernel(result_rank=1), sweep, 0)
    with pytest.raises(ConfigError, match=r"kernels.mine.result_rank=2: experiment.sweeps.4 has runs of 2 rank\(s\)"):
        byob.check_sweep(_kernel(result_rank=2), sweep, 4)


def test_the_declaration_reaches_the_driver_only_where_it_differs_from_the_defaults() -> None:
    """A declaration without the new keys keeps its driver argv (and its runs their keys)."""
    plain = byob.tool_argv("py", _kernel(), "py")[-1]
    assert "repeat_by" not in plain and "result_rank" not in plain and "reduce" not in plain
    spec = byob.tool_argv(
        "py", _kernel(repeat_by="program", result_rank=1, figures=[FigureSpec(name="t", regex="a", reduce="max")]), "py"
    )[-1]
    assert '"repeat_by":"program"' in spec and '"result_rank":1' in spec and '"reduce":"max"' in spec


def test_the_guides_mpi_example_is_what_ships() -> None:
    """docs/byob.md's MPI section shows the shipped hpcc kernel and sweep verbatim
    (tests/byob/test_byob_mpi_slurm.py runs them on the test Slurm)."""
    blocks = re.findall(r"<!-- mpi-file: (\S+) -->\n```\w*\n(.*?)```", (REPO / "docs" / "byob.md").read_text(), re.S)
    assert [rel for rel, _ in blocks] == ["conf/kernel/hpcc.yaml", "conf/experiment/byob_hpcc.yaml"]
    for rel, body in blocks:
        assert body == (REPO / rel).read_text(), rel


@pytest.mark.parametrize("driven_by", ["tool", "program"])
@pytest.mark.parametrize(
    "key", ["n", "threads", "repeats", "warmup", "dtype", "variant", "device", "check", "out", "repeat", "d"]
)
def test_a_sweep_key_that_is_a_contract_option_is_refused(driven_by: str, key: str) -> None:
    """A grid or args key named like an option the contract gives every run (`grid: {n: [5]}`)
    put `--n 5` after `--n 1000`: the program ran n = 5 (argparse takes the last) while the run
    said n 1000, and `{n}` read whichever value; `out` moved the CSV."""
    kernel = _kernel(
        driven_by=driven_by,
        impls={"py": ImplSpec(argv=["prog", "{n}"] if driven_by == "tool" else ["prog"], variants=["v"])},
    )
    for where in ("grid", "args"):
        values: dict[str, object] = {"grid": {key: [5]}, "args": {key: "5"}}[where]
        sweep = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1000], **{where: values})  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=rf"experiment.sweeps.0.{where}.{key}: '{key}' is an option"):
            byob.check_sweep(kernel, sweep, 0)


def test_a_key_in_both_args_and_grid_is_refused() -> None:
    sweep = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], args={"label": "5"}, grid={"label": ["a"]})
    with pytest.raises(ConfigError, match=r"experiment.sweeps.0: 'label' is both an args and a grid key"):
        byob.check_sweep(_kernel(), sweep, 0)


@pytest.mark.parametrize(
    ("where", "values", "named"),
    [
        ("grid", {"mode": ["a", "a,metric=x"]}, r"experiment.sweeps.0.grid.mode: value 'a,metric=x'"),
        ("args", {"opts": "fast,level=2"}, r"experiment.sweeps.0.args.opts: value 'fast,level=2'"),
        ("args", {"opts": ["fast", "level=2"]}, r"experiment.sweeps.0.args.opts: value 'fast,level=2'"),
        ("args", {"a,b=c": "1"}, r"experiment.sweeps.0.args: key 'a,b=c'"),
    ],
)
def test_a_sweep_value_that_reads_as_another_parameter_is_refused(where: str, values: dict, named: str) -> None:
    """A grid value `a,metric=x` is the run's params `mode=a,metric=x,...`: it read as mode=a and a
    figure x, so the runs of `a` and `a,metric=x` were one point in the report (8 repeats of two
    runs pooled) and the export's mode column said `a` for both. Refused at compose time."""
    sweep = SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], **{where: values})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=named):
        byob.check_sweep(_kernel(), sweep, 0)
    fine = {"grid": {"mode": ["a,b", "k=v", "x y"]}, "args": {"a": [20, 32, 40]}}[where]  # a list, '=' alone
    byob.check_sweep(_kernel(), SweepSpec(kernel="mine", impls=["py"], variants=["v"], n=[1], **{where: fine}), 0)
