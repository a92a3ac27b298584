"""One cost-model mechanism: every kernel, shipped or a user's,
declares its FLOPs and bytes in its YAML; analysis/cost_model.py only
evaluates what is declared, and the report finds the declaration in the
ledger (as recorded at submit time), else on the config path."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis import cost_model
from campaign.job import expr, fom
from tests.conftest import REPO, assert_refused, run_cli, sql_rows

SHIPPED = REPO / "conf" / "kernel"


def _shipped_names() -> list[str]:
    return sorted(yaml.safe_load(p.read_text())["name"] for p in SHIPPED.glob("*.yaml"))


def test_no_kernel_name_in_the_analysis_cost_code() -> None:
    """The analysis evaluates declarations; it knows no kernel by name."""
    code = {p: p.read_text() for p in (REPO / "analysis" / "cost_model.py", REPO / "campaign" / "results" / "costs.py")}
    for name in _shipped_names():
        for path, text in code.items():
            assert not re.search(rf"\b{re.escape(name)}\b", text), f"{name} named in {path}"


def test_the_shipped_families_declare_their_model_in_yaml() -> None:
    models = cost_model.shipped_models()
    for name in (
        "attention_forward",
        "attention_backward",
        "attention_fwdbwd",
        "decode",
        "block_forward",
        "mlp_backward",
    ):
        model = models[name]
        assert model.flops and model.bytes and model.write_bytes, name
        assert "element_bytes" in model.bytes and set(model.element_bytes) >= {"fp32", "bf16"}, name
    # third-party benchmarks declare theirs the same way; gemm rows bring their own flops
    assert models["mbw"].bytes and models["likwid_stream"].bytes and "gemm_shapes" not in models


EXPRESSIONS = (
    "4*n*n*d",
    "(7*n*d + n*n)*element_bytes",
    "6*n*d*ff",
    "64*ceil(8*d/3/64)",
    "max(n, 4) // 3 + n % 7 - min(d, 2)**2",
    "sqrt(n)*log2(d) + abs(-n) + floor(n/3)",
)


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_the_vectorised_evaluation_equals_the_job_side_one(text: str) -> None:
    """The analysis (numpy, a column at once) and the node (campaign.job.expr,
    one point) give the same float for the same expression and values."""
    rng = np.random.default_rng(7)
    columns = {
        "n": rng.integers(1, 1 << 20, 50).astype(float),
        "d": rng.integers(1, 512, 50).astype(float),
        "element_bytes": np.full(50, 2.0),
        "ff": rng.integers(1, 4096, 50).astype(float),
    }
    got = cost_model.evaluate(text, columns, 50)
    for i in range(50):
        assert got[i] == expr.evaluate(text, {k: v[i] for k, v in columns.items()})


def test_missing_parameters_and_hostile_text_give_nan_or_an_error() -> None:
    assert np.isnan(cost_model.evaluate("2*n*block", {"n": np.ones(3)}, 3)).all()
    assert np.isnan(cost_model.evaluate("n/0 + 10**400", {"n": np.ones(2)}, 2)).all()
    with pytest.raises(ValueError):
        cost_model.evaluate("__import__('os').getcwd()", {}, 1)


def test_a_copied_model_under_another_name_gives_the_same_counts() -> None:
    """Per dtype (element size), with and without the ff a row may carry."""
    shipped = cost_model.shipped_models()
    models = {**shipped, "myblock": shipped["block_forward"]}
    frame = pd.DataFrame(
        {
            "kernel": ["block_forward", "myblock"] * 3,
            "n": [64, 64, 128, 128, 256, 256],
            "d": [32] * 6,
            "dtype": ["fp32", "fp32", "bf16", "bf16", None, None],
            "ff": [np.nan, np.nan, 96, 96, np.nan, np.nan],
        }
    )
    out = cost_model.add_cost_columns(frame, models)
    for what in ("flops", "bytes"):
        values = out[what].to_numpy()
        assert not np.isnan(values).any()
        assert (values[0::2] == values[1::2]).all()
    assert out["flops"].iloc[2] == 6 * 128 * 32 * 96  # the row's ff, not the default width
    assert out["bytes"].iloc[4] == cost_model.min_bytes("block_forward", 256, 32, "fp32")  # no dtype: fp32's
    assert math.isnan(cost_model.add_cost_columns(frame)["flops"].iloc[1])  # not shipped: no model


def test_the_node_side_reads_element_bytes_and_derived_parameters() -> None:
    """A tool-driven benchmark's counts use its declared element sizes and cost_params, as the analysis does."""
    spec = {
        "flops": "2*n*width",
        "bytes": "n*element_bytes",
        "element_bytes": {"fp64": 8, "fp32": 4},
        "cost_params": {"width": "2*d"},
    }
    assert fom._cost(spec, {"n": "10", "d": "3", "dtype": "fp64"}) == {"flops": 120.0, "bytes": 80.0}
    assert fom._cost(spec, {"n": "10", "d": "3", "dtype": "", "width": "5"}) == {"flops": 100.0, "bytes": 40.0}


EXPERIMENT = """
name: copied
repeats: 2
warmup: 0
walltime_min: 10
sweeps:
  - {kernel: attention_forward, impls: [c], variants: [naive], n: [32, 64], d: 16}
  - {kernel: myattn, impls: [c], variants: [naive], n: [32, 64], d: 16}
"""


def _conf(root: Path, kernel_text: str) -> Path:
    conf = root / "conf"
    (conf / "kernel").mkdir(parents=True, exist_ok=True)
    (conf / "experiment").mkdir(exist_ok=True)
    (conf / "kernel" / "myattn.yaml").write_text(kernel_text)
    (conf / "experiment" / "copied.yaml").write_text(EXPERIMENT)
    return conf


WRAPPER = """#!{python}
# the shipped C attention_forward, its rows named as this kernel (a program of the user's own)
import subprocess, sys
argv = sys.argv[1:]
out = argv[argv.index("--out") + 1]
code = subprocess.call([{binary!r}, *argv])
with open(out) as f:
    text = f.read().replace("\\nattention_forward,", "\\nmyattn,")
with open(out, "w") as f:
    f.write(text)
sys.exit(code)
"""


def _copied(root: Path) -> str:
    """attention_forward.yaml as `myattn`, whose C impl is a program that writes its own kernel name."""
    wrapper = root / "bin" / "myattn"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(
        WRAPPER.format(python=sys.executable, binary=str(REPO / "kernels" / "build" / "c" / "attention_forward"))
    )
    wrapper.chmod(0o755)
    text = (SHIPPED / "attention_forward.yaml").read_text().replace("name: attention_forward", "name: myattn")
    old = '["${campaign.kernel_bin}/c/attention_forward"]'
    assert old in text
    return text.replace(old, json.dumps([str(wrapper)]))


def _roofline(ledger: Path, env: dict[str, str]) -> dict[tuple[str, int], dict]:
    proc = run_cli("--ledger", str(ledger), "report", "--json", "--keys", "roofline", env=env)
    assert proc.returncode == 0, proc.stderr
    return {(r["kernel"], r["n"]): r for r in json.loads(proc.stdout)["roofline"]}


def test_a_user_kernel_copied_from_a_shipped_one_gets_the_same_roofline(tmp_path: Path) -> None:
    """Real CLI, local backend: attention_forward's YAML copied as `myattn`
    runs the same program; its roofline (FLOPs, bytes, intensity, fraction of
    the roof) comes from its own declaration, recorded in the ledger at
    submit time: the report needs no config folder (a ledger read on another
    machine), and a different declaration there now does not change it."""
    copied = _copied(tmp_path)
    conf = _conf(tmp_path / "site", copied)
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=copied",
        "cluster.partitions.local.ceilings.mem_bw=2e10",
        "cluster.partitions.local.ceilings.peak_flops_fp32=1e11",
        cwd=tmp_path,
        env={"CAMPAIGN_CONFIG_PATH": str(conf)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {s for (s,) in sql_rows(ledger, "SELECT state FROM job_attempt")} == {"COMPLETED"}
    # another machine: no config folder; then one whose myattn.yaml says something else now
    other = _conf(tmp_path / "elsewhere", copied.replace("flops: 4*n*n*d", "flops: n"))
    for env in ({"CAMPAIGN_CONFIG_PATH": ""}, {"CAMPAIGN_CONFIG_PATH": str(other)}):
        roof = _roofline(ledger, env)
        assert {k for k, _ in roof} == {"attention_forward", "myattn"}
        for n in (32, 64):
            mine, shipped = roof[("myattn", n)], roof[("attention_forward", n)]
            for key in ("flops", "bytes", "intensity", "peak_flops", "mem_bw", "roof_flops"):
                assert mine[key] is not None and mine[key] == shipped[key], (n, key)
            assert mine["flops"] == 4 * n * n * 16 and mine["frac_roof"] > 0


def test_a_model_naming_an_unknown_parameter_exits_2_at_compose_time(tmp_path: Path) -> None:
    """A program-driven kernel's expressions are checked like a tool's: the key is named, nothing submitted."""
    base = (SHIPPED / "attention_forward.yaml").read_text().replace("name: attention_forward", "name: myattn")
    cases = {
        "bytes: 4*n*d*element_bytes": (
            "bytes: 4*n*dd*element_bytes",
            "kernels.myattn.bytes='4*n*dd*element_bytes' names 'dd'",
        ),
        "element_bytes: {fp64: 8,": ("element_bytes: {fp64: -8,", "kernels.myattn.element_bytes.fp64=-8.0: the bytes"),
        "flops: 4*n*n*d": (
            "flops: 4*n*n*d*ff\ncost_params: {ff: 2*ff}",
            "kernels.myattn.cost_params.ff='2*ff' names 'ff'",
        ),
    }
    for i, (old, (new, named)) in enumerate(cases.items()):
        assert old in base
        conf = _conf(tmp_path / str(i), base.replace(old, new))
        ledger = tmp_path / f"{i}.sqlite"
        proc = run_cli(
            "--ledger",
            str(ledger),
            "submit",
            "experiment=copied",
            "--dry-run",
            cwd=tmp_path,
            env={"CAMPAIGN_CONFIG_PATH": str(conf)},
        )
        assert_refused(proc, named, ledger)


def test_imported_rows_take_the_model_of_their_kernel_on_the_config_path(tmp_path: Path) -> None:
    """Imported results have no recorded declaration: a shipped kernel's rows
    get the shipped model, a user kernel's the YAML of that name on
    CAMPAIGN_CONFIG_PATH, and a kernel declared nowhere none (null, not a guess)."""
    from tests.fixtures import KNOWN_CSV

    both = tmp_path / "both.csv"  # the rows as they are, and again under a user kernel's name
    text = KNOWN_CSV.read_text()
    both.write_text(text + "".join(text.splitlines(keepends=True)[1:]).replace(",attention_forward,", ",myattn,"))
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "import", str(both))
    assert proc.returncode == 0, proc.stderr
    conf = _conf(
        tmp_path / "site",
        (SHIPPED / "attention_forward.yaml").read_text().replace("name: attention_forward", "name: myattn"),
    )

    def flops(env: dict[str, str]) -> dict[tuple[str, str, int], float | None]:
        proc = run_cli("--ledger", str(ledger), "report", "--all", "--json", "--keys", "roofline", env=env)
        assert proc.returncode == 0, proc.stderr
        return {(r["cluster"], r["kernel"], r["n"]): r["flops"] for r in json.loads(proc.stdout)["roofline"]}

    with_conf, without = flops({"CAMPAIGN_CONFIG_PATH": str(conf)}), flops({"CAMPAIGN_CONFIG_PATH": ""})
    shipped = {k: v for k, v in with_conf.items() if k[1] == "attention_forward"}
    assert shipped and all(v == 4 * n * n * 64 for (_, _, n), v in shipped.items())
    for (cluster, _, n), value in shipped.items():
        assert with_conf[(cluster, "myattn", n)] == value
        assert without[(cluster, "attention_forward", n)] == value and without[(cluster, "myattn", n)] is None


def test_hardware_counters_compare_with_the_kernels_declared_model() -> None:
    """The measured-vs-predicted bytes use the kernel's declared model too
    (`write_bytes` splits `bytes`): a renamed copy predicts the same."""
    from analysis.counters import measured_vs_predicted

    counters = pd.read_csv(
        REPO / "tests" / "fixtures" / "ncu" / "attention_fwdbwd_fused.counters.csv", dtype=str, keep_default_na=False
    )
    renamed = counters.assign(kernel="myfused")
    shipped = measured_vs_predicted(counters)
    models = {"myfused": cost_model.shipped_models()["attention_fwdbwd"]}
    mine, unknown = measured_vs_predicted(renamed, models=models), measured_vs_predicted(renamed)
    for col in ("predicted_read_bytes", "predicted_write_bytes"):
        assert shipped[col].notna().all() and len(shipped) > 0
        assert mine[col].tolist() == shipped[col].tolist()
        assert unknown[col].isna().all()  # declared nowhere: no prediction


def test_a_hostile_recorded_declaration_leaves_the_count_empty_not_the_report_failed() -> None:
    """A ledger edited by hand (or from an older tool) may record what compose time refuses."""
    frame = pd.DataFrame({"kernel": ["a", "b", "c", "d", "e"], "n": [8] * 5, "d": [4] * 5, "dtype": ["fp32"] * 5})
    models = {
        "a": cost_model.CostModel(flops="__import__('os').system('false')"),
        "b": cost_model.CostModel(flops="(" * 5000 + "n" + ")" * 5000),
        "c": cost_model.CostModel(flops="n ** 10 ** 10", bytes="n*element_bytes", element_bytes={"fp32": 4}),
        "d": cost_model.CostModel(flops="2*n*w", cost_params={"w": "lambda: 1"}),
        "e": cost_model.CostModel(flops="2*n"),
    }
    out = cost_model.add_cost_columns(frame, models)
    assert np.isnan(out["flops"].iloc[:4]).all() and out["flops"].iloc[4] == 16
    assert out["bytes"].iloc[2] == 32  # the other count of the same kernel is kept
    assert cost_model.CostModel.from_mapping({"flops": "n", "element_bytes": {"fp32": "four"}}) is None


TOOL_KERNEL = """name: mytool
driven_by: tool
impls:
  sh: {argv: [echo, "time: 1 s", "{n}"], variants: [plain]}
figures: [{name: time, regex: 'time: (?P<value>\\\\S+) s', unit: s}]
"""
TOOL_EXPERIMENT = """name: costs
repeats: 1
warmup: 0
walltime_min: 5
sweeps:
  - {kernel: mytool, impls: [sh], variants: [plain], threads: [1], n: [1000, 2000], grid: {k: [1, 0]}}
"""


@pytest.mark.parametrize(
    "declared,named",
    [
        ("flops: n/0", "kernels.mytool.flops='n/0' gives no count at n=1000"),
        ("bytes: log2(n-n)", "kernels.mytool.bytes='log2(n-n)' gives no count at n=1000"),
        ("flops: sqrt(-n)", "kernels.mytool.flops='sqrt(-n)' gives no count at n=1000"),
        ("flops: n**n", "kernels.mytool.flops='n**n' gives no count at n=1000"),
        ("flops: (n*n*n)**60", "kernels.mytool.flops='(n*n*n)**60' gives no count at n=1000"),
        ("flops: -n", "kernels.mytool.flops='-n' gives no count at n=1000"),
        ("flops: 1e309*0*n", "kernels.mytool.flops='1e309*0*n' gives no count at n=1000"),  # NaN
        ("flops: 1e309*n", "kernels.mytool.flops='1e309*n' gives no count at n=1000"),  # inf
        ("flops: 2*n\nbytes: 8*(n-1500)", "kernels.mytool.bytes='8*(n-1500)' gives no count at n=1000"),
        ("flops: n/(2000-n)", "kernels.mytool.flops='n/(2000-n)' gives no count at n=2000"),
        ("flops: n/k", "kernels.mytool.flops='n/k' gives no count at n=1000, k=0"),
        (
            "flops: n*w\ncost_params: {w: 1/(threads-1)}",
            "kernels.mytool.cost_params.w='1/(threads-1)' gives no count at n=1000, threads=1",
        ),
        ("write_bytes: -n", "kernels.mytool.write_bytes='-n' gives no count at n=1000"),
    ],
)
def test_a_cost_that_fails_at_a_planned_run_is_refused_at_submit(tmp_path: Path, declared: str, named: str) -> None:
    """Every run's n, threads and grid values are known at submit: an expression that fails there, or gives
    a count that is not finite or is negative, is one line naming the kernel, the expression and the
    point (exit 2), nothing recorded, instead of each job warning on its node and its rows going without a
    roofline. The same declaration with a count that works runs."""
    conf = tmp_path / "conf"
    (conf / "kernel").mkdir(parents=True)
    (conf / "experiment").mkdir()
    (conf / "experiment" / "costs.yaml").write_text(TOOL_EXPERIMENT)
    ledger, env = tmp_path / "ledger.sqlite", {"CAMPAIGN_CONFIG_PATH": str(conf)}
    (conf / "kernel" / "mytool.yaml").write_text(TOOL_KERNEL + declared + "\n")
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=costs", cwd=tmp_path, env=env)
    assert_refused(proc, named, ledger)
    (conf / "kernel" / "mytool.yaml").write_text(TOOL_KERNEL + "flops: 2*n*k\nbytes: 8*n\n")
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=costs", "--dry-run", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_program_kernels_cost_that_fails_at_one_n_is_refused_at_submit(tmp_path: Path) -> None:
    """A contract program's declaration is the report's (evaluated over its rows): n/(64-n) is a division by
    zero at the second n of the sweep, refused before anything runs."""
    base = (SHIPPED / "attention_forward.yaml").read_text().replace("name: attention_forward", "name: myattn")
    assert "flops: 4*n*n*d" in base
    conf = _conf(tmp_path, base.replace("flops: 4*n*n*d", "flops: 4*n*n*d/(64-n)"))
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger", str(ledger), "submit", "experiment=copied", cwd=tmp_path, env={"CAMPAIGN_CONFIG_PATH": str(conf)}
    )
    assert_refused(proc, "kernels.myattn.flops='4*n*n*d/(64-n)' gives no count at n=64, d=16", ledger)
