"""A tool-driven program's templates at one point of the run
(campaign.job.template through campaign.job.fom, on real child programs):
the run's shape in argv, env, a multi-line script under `bash -eu` and input
files rendered into the attempt folder before each invocation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from campaign.config.schema import FigureSpec, ImplSpec, KernelSpec
from campaign.job import fom, template
from campaign.planning import byob
from campaign.plumbing.errors import ConfigError
from campaign.plumbing.states import JobState
from campaign.results.expected import Expected
from campaign.results.reader import classify_output


def test_placeholders_are_plain_names_only() -> None:
    assert template.placeholders("-w S0:{n}kB:{threads} {{literal}} {0} {a.b}") == ["n", "threads"]
    assert template.render("{n}:{{x}}", {"n": "5"}) == "5:{x}"
    assert template.render("echo {v}", {"v": "a b;rm -rf /"}, quote=True) == "echo 'a b;rm -rf /'"


@pytest.mark.parametrize("ranks", range(1, 65))
def test_the_process_grid_is_the_squarest_factorisation(ranks: int) -> None:
    p, q = template.process_grid(ranks)
    assert p * q == ranks and p <= q
    # no divisor of ranks lies between p and sqrt(ranks): nothing squarer exists
    assert not [d for d in range(p + 1, math.isqrt(ranks) + 1) if ranks % d == 0]


def _run(tmp_path: Path, spec: dict, shape: list[str], repeats: int = 1) -> tuple[int, Path]:
    out = tmp_path / "results.csv"
    options = {"--n": "10", "--threads": "3", "--repeats": str(repeats), "--warmup": "0", "--device": "cpu"}
    options |= {"--dtype": "fp32", "--variant": "plain"}
    args = [*(w for pair in options.items() for w in pair), *shape, "--out", str(out)]
    contract, params, _ = fom.parse_args(args)
    return fom.measure(spec, contract, params, tmp_path), out


def _expected() -> Expected:
    return Expected(
        (10,), False, kernel="mine", dtype="fp32", impl="py", variant="plain", device="cpu", d=None, threads=3
    )


# prints the shape it was given in argv and env, and the input file's text, as one JSON line
ECHO = (
    "import json,os,sys; print(json.dumps({'argv': sys.argv[1:], 'env': os.environ['SHAPE'], "
    "'input': open('grid.dat').read(), 'value': 1}))"
)


def _spec(**more: object) -> dict:
    spec = {
        "kernel": "mine",
        "impl": "py",
        "argv": [sys.executable, "-c", ECHO, "{nodes}", "{ranks}", "{ranks_per_node}", "{gpus}", "{grid_p}x{grid_q}"],
        "env": {"SHAPE": "{ranks}={grid_p}*{grid_q}"},
        "sanity": [],
        "flops": None,
        "bytes": None,
        "inputs": {"grid.dat": "P={grid_p}\nQ={grid_q}\nN={n} repeat {repeat}\n{{literal}}\n"},
        "figures": [{"name": "value", "json": "value", "source": "stdout", "unit": "", "higher_is_better": True}],
    }
    spec.update(more)
    return spec


@pytest.mark.parametrize(
    ("nodes", "per_node", "gpus", "grid"), [(1, 1, 0, "1x1"), (2, 3, 4, "2x3"), (4, 2, 0, "2x4"), (3, 1, 0, "1x3")]
)
def test_the_runs_shape_reaches_argv_env_and_input_files(
    tmp_path: Path, nodes: int, per_node: int, gpus: int, grid: str
) -> None:
    shape = ["--nodes", str(nodes), "--ranks-per-node", str(per_node), "--gpus", str(gpus)]
    code, out = _run(tmp_path, _spec(), shape, repeats=2)
    assert code == 0 and classify_output(out, _expected()).state == JobState.COMPLETED
    ranks = nodes * per_node
    p, q = grid.split("x")
    seen = json.loads((tmp_path / "fom-n10-r1.out").read_text())
    assert seen["argv"] == [str(nodes), str(ranks), str(per_node), str(gpus), grid]
    assert seen["env"] == f"{ranks}={p}*{q}"
    assert seen["input"] == f"P={p}\nQ={q}\nN=10 repeat 1\n{{literal}}\n"  # rendered per repeat, before it ran
    assert (tmp_path / "grid.dat").read_text() == seen["input"]  # left in the attempt folder


def test_a_run_without_shape_options_is_one_rank(tmp_path: Path) -> None:
    code, _ = _run(tmp_path, _spec(), [])
    seen = json.loads((tmp_path / "fom-n10-r0.out").read_text())
    assert code == 0 and seen["argv"] == ["1", "1", "1", "0", "1x1"]


def test_a_multi_line_script_runs_under_bash_eu(tmp_path: Path) -> None:
    script = 'value={ranks}\nlabel={variant}\necho "{{\\"value\\": $((value * 10))}}"\necho "$label" > label.txt\n'
    spec = _spec(argv=[], script=script, inputs={})
    code, out = _run(tmp_path, spec, ["--nodes", "2", "--ranks-per-node", "2"])
    assert code == 0, (tmp_path / "fom-n10-r0.err").read_text()
    rows = classify_output(out, _expected()).rows
    assert [float(r["extra"]["value"]) for r in rows] == [40.0]
    assert (tmp_path / "label.txt").read_text() == "plain\n"


def test_a_failing_line_or_an_unset_variable_ends_the_script(tmp_path: Path) -> None:
    for script, code in (
        ("false\necho '{{\"value\": 1}}'\n", 1),
        ("echo $UNSET_IN_TEST\necho '{{\"value\": 1}}'\n", 1),
        ("exit 7\n", 7),
    ):
        got, out = _run(tmp_path, _spec(argv=[], script=script, inputs={}), [])
        assert got == code and not out.exists()


def test_a_hostile_value_stays_one_word_in_a_script(tmp_path: Path) -> None:
    spec = _spec(argv=[], inputs={}, script="printf '%s\\n' {tag} > tag.txt\necho '{{\"value\": 1}}'\n")
    out = tmp_path / "results.csv"
    args = [
        "--n",
        "10",
        "--threads",
        "1",
        "--repeats",
        "1",
        "--variant",
        "plain",
        "--tag",
        "x; touch pwned $(id)",
        "--out",
        str(out),
    ]
    contract, params, _ = fom.parse_args(args)
    assert fom.measure(spec, contract, params, tmp_path) == 0
    assert (tmp_path / "tag.txt").read_text() == "x; touch pwned $(id)\n" and not (tmp_path / "pwned").exists()


HOSTILE = "a b; touch pwned $(touch pwned2) `touch pwned3` \"q\" 'q' \\ * $HOME"


@pytest.mark.parametrize(
    "line",
    [
        "printf '%s\\n' {tag}",  # bare
        'printf "%s\\n" "{tag}"',  # inside double quotes, as a shell habit writes a variable
        "printf '%s\\n' '{tag}'",  # inside single quotes
        "printf '%s\\n' \"tag: {tag}\" | cut -c6-",  # within a double-quoted string
        "printf '%s\\n' $'{tag}'",  # inside ANSI-C quotes
        "echo \"$(printf '%s' {tag})\"",  # bare inside a command substitution inside double quotes
        "cat <<EOF\n{tag}\nEOF",  # a here-document, which expands $( ) and ` `
        "cat <<'EOF'\n{tag}\nEOF",  # a quoted here-document, which expands nothing
        "cat <<-EOF\n\t{tag}\n\tEOF",  # one whose tabs are stripped
        "# it's a comment\nprintf '%s\\n' {tag}",  # a quote in a comment opens nothing
        "printf '%s\\n' \"$(printf '%s' \"{tag}\")\"",  # "..." inside $( ) inside "..."
    ],
)
def test_a_hostile_value_reaches_the_script_verbatim_in_any_quoting(tmp_path: Path, line: str) -> None:
    """A placeholder is filled for the quoting it stands in: bare, in "...", '...', $'...' or a
    here-document, the value arrives as it is; `"{tag}"` filled with a shell-quoted value ran its
    $( ) and printed its quotes, and `'{tag}'` ran the part after its `;`."""
    first, _, body = line.partition("\n")  # a here-document's redirection goes on its first line
    script = f"{first} > tag.txt\n{body}\n" if "<<" in first else f"{line} > tag.txt\n"
    argv = template.script_argv(script, {"tag": HOSTILE}, "s")
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "tag.txt").read_text() == HOSTILE + "\n"
    assert not list(tmp_path.glob("pwned*"))


@pytest.mark.parametrize(
    "script",
    [
        'printf "%s\\n" `printf "%s" "{tag}"`',  # backticks: bash takes a backslash off \$ before the command
        'echo "`echo {tag}`"',  # backticks inside double quotes
        'cat <<EOF\n`printf "%s" "{tag}"`\nEOF',  # a here-document's backticks
        'cat <<EOF\n$(printf "%s" "{tag}")\nEOF',  # a here-document's $( ): its escapes, then the command's quotes
        'printf "%s\\n" "${UNSET:-{tag}}"',  # ${...}: a } of the value ends its word
        "printf '%s\\n' ${UNSET:-{tag}}",
        "cat <<EOF\n${UNSET:-{tag}}\nEOF",
    ],
)
def test_a_placeholder_that_bash_reads_twice_is_refused_never_filled(script: str) -> None:
    """Filled as for the quoting around it, a value inside backticks ran its $( ) (HOSTILE made pwned2 and
    pwned3), and inside a here-document's $( ) lost its quotes: no one quoting holds there, so compose refuses
    the script and the job side never fills it."""
    assert template.reread(script) == ["tag"]
    with pytest.raises(ValueError, match="no quoting holds"):
        template.script_argv(script, {"tag": HOSTILE}, "s")
    kernel = KernelSpec(
        name="mine",
        driven_by="tool",
        impls={"sh": ImplSpec(script=script, variants=["v"])},
        figures=[FigureSpec(name="t", regex="t=(\\S+)", unit="s")],
    )
    with pytest.raises(ConfigError, match=r"impls\.sh\.script: placeholder \{tag\} stands where no quoting keeps"):
        byob.check_kernel("mine", kernel)
    # the same written as the error says: the value into a variable first
    assert template.reread('v={tag}\nw=$(printf "%s" "$v")\ncat <<EOF\n$w $v\nEOF') == []


def test_braces_read_left_to_right_as_str_format_reads_them() -> None:
    """`{{` and `}}` are literal braces, `{name}` a placeholder, read left to right: taking the escapes out
    first cut `{tag}}` at its `}}`, so the placeholder went unfilled and `{tag` reached the program."""
    assert template.placeholders("a{tag}}b {{x}} {{{n}}}") == ["tag", "n"]
    assert template.render("a{tag}}b {{x}} {{{n}}}", {"tag": "T", "n": "8"}) == "aT}b {x} {8}"
