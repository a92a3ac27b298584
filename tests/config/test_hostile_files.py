"""Hostile config files on CAMPAIGN_CONFIG_PATH, through the real CLI: YAML
aliases that expand past any config ("billion laughs", and an alias of
itself) and a file that is not UTF-8. Each is one line naming the file,
exit 2, the ledger untouched; the compose never hangs. A kernel file that
nothing names is still not read, bomb or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

# nine levels of nine aliases: 43 million values from 400 bytes
BOMB = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['x'] * 9)}]\n" for i in range(9))
SELF = "loop: &loop [a, *loop]\n"
KERNEL = """name: mine
driven_by: tool
impls:
  tool:
    argv: ["mybench", "{n}"]
    variants: [plain]
figures:
  - name: time
    regex: 'time: (?P<value>[0-9.]+)'
    unit: s
"""
EXPERIMENT = """name: mine_sweep
repeats: 1
sweeps:
  - kernel: KERNEL
    impls: [tool]
    variants: [plain]
    threads: [1]
    n: [10]
"""


def _site(tmp_path: Path, kernel: str | bytes, experiment_kernel: str = "mine") -> dict[str, str]:
    conf = tmp_path / "conf"
    (conf / "kernel").mkdir(parents=True)
    (conf / "experiment").mkdir()
    path = conf / "kernel" / "mine.yaml"
    path.write_bytes(kernel if isinstance(kernel, bytes) else kernel.encode())
    (conf / "kernel" / "good.yaml").write_text(KERNEL.replace("name: mine", "name: good"))
    (conf / "experiment" / "mine_sweep.yaml").write_text(EXPERIMENT.replace("KERNEL", experiment_kernel))
    return {"CAMPAIGN_CONFIG_PATH": str(conf)}


def _submit(tmp_path: Path, env: dict[str, str], *overrides: str) -> tuple[int, str]:
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger", str(ledger), "submit", "experiment=mine_sweep", *overrides, "--dry-run", env=env, timeout=120
    )
    assert "Traceback" not in proc.stderr and not ledger.exists()
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("tail", [BOMB, SELF], ids=["billion-laughs", "alias-of-itself"])
def test_aliases_that_expand_without_end_are_one_line(tmp_path: Path, tail: str) -> None:
    env = _site(tmp_path, KERNEL + tail)
    code, err = _submit(tmp_path, env)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "kernel/mine.yaml" in err and "aliases" in err, err


def test_a_bomb_nothing_names_is_not_read(tmp_path: Path) -> None:
    env = _site(tmp_path, KERNEL + BOMB, experiment_kernel="good")
    code, err = _submit(tmp_path, env)
    assert code == 0, err


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    env = _site(tmp_path, b"\xff\xfe" + KERNEL.encode("utf-16-le"))
    code, err = _submit(tmp_path, env)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "kernel/mine.yaml" in err and "UTF-8" in err, err


@pytest.mark.parametrize(
    ("kernel", "where"),
    [
        (KERNEL.replace('"{n}"]', '"{n}", {a: 1}]'), "kernels.mine.impls.tool.argv[2] is a mapping"),
        (KERNEL.replace('"{n}"]', '"{n}", [a, b]]'), "kernels.mine.impls.tool.argv[2] is a list"),
        (KERNEL + "env: {A: {b: 1}}\n", "kernels.mine.env.A is a mapping"),
        (KERNEL + "inputs: {a.txt: [x]}\n", "kernels.mine.inputs.a.txt is a list"),
    ],
    ids=["argv-mapping", "argv-list", "env-mapping", "input-list"],
)
def test_a_list_or_mapping_where_text_goes_is_one_line(tmp_path: Path, kernel: str, where: str) -> None:
    """OmegaConf lets a list or mapping into a list or mapping of strings from YAML: an argv item
    ended in 'internal error: AttributeError', an env value reached the job as "{'b': 1}"."""
    code, err = _submit(tmp_path, _site(tmp_path, kernel))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert where in err and "not text" in err, err


BESIDE = {
    "not-utf8": b"\xff\xfe" + KERNEL.encode("utf-16-le"),
    "bomb": (KERNEL + BOMB).encode(),
    "yaml-it-cannot-read": b"name: other\nimpls: [\n",
    "unknown-key": (KERNEL + "no_such_key: 1\n").encode(),
}


@pytest.mark.parametrize("beside", [*BESIDE, "folder"])
@pytest.mark.parametrize(
    ("override", "said"),
    [("experiment.sweeps.3.threads=[1]", "there is no sweep 3"), ("experiment.repeats=abc", "experiment.repeats")],
)
def test_a_broken_kernel_nothing_names_never_hides_the_mistake_made(
    tmp_path: Path, beside: str, override: str, said: str
) -> None:
    """Where the experiment or an override of it had a mistake, every kernel on the config path was
    composed to name it, so a broken kernel file the experiment does not use (or a folder named
    like one) was named instead: 'kernel/other.yaml is not UTF-8 text', 'kernels.other.no_such_key
    ... is not a key of a kernel' for an override of a sweep the experiment does not have."""
    env = _site(tmp_path, KERNEL, experiment_kernel="mine")
    other = tmp_path / "conf" / "kernel" / "other.yaml"
    if beside == "folder":
        other.mkdir()
    else:
        other.write_bytes(BESIDE[beside])
    code, err = _submit(tmp_path, env, override)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert said in err and "other" not in err, err


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing yet\n  # indented\n"], ids=["empty", "blank", "comments"])
@pytest.mark.parametrize("group", ["kernel", "experiment"])
def test_an_empty_config_file_is_named(tmp_path: Path, group: str, text: str) -> None:
    """Hydra said 'Structured config of type `ExperimentSpec` has missing mandatory value: name
    full_key: experiment.name ...', naming no file."""
    env = _site(tmp_path, KERNEL)
    path = tmp_path / "conf" / group / ("mine.yaml" if group == "kernel" else "mine_sweep.yaml")
    path.write_text(text)
    code, err = _submit(tmp_path, env)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{path} is empty" in err, err
