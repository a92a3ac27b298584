"""A tool-driven benchmark's identity holds its own program's content
(campaign.planning.identity.user_program): the file its argv[0] names,
resolved as the job starts it (a bare name through the runs' PATH), and the
absolute file arguments an interpreter runs. Same content, same identity,
wherever the file lies; other content, another identity; a program that is
nowhere here is `absent`, steadily; a container's or a script's has no entry."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from campaign.config.load import load_config
from campaign.config.schema import FigureSpec, ImplSpec, KernelSpec
from campaign.planning import byob
from campaign.planning.identity import (
    ABSENT,
    DRIVER_ENTRY,
    DRIVER_NOTE,
    DRIVER_PROTOCOL,
    USER_NOTE,
    _file_hash,
    program_identity,
    user_program,
    why_new,
    with_identity,
)
from campaign.planning.plan import plan
from campaign.planning.run_spec import RunSpec


def _argv(words: list[str] | None = None, script: str | None = None) -> tuple[str, ...]:
    impl = ImplSpec(argv=words or [], script=script, variants=["v"])
    kernel = KernelSpec(
        name="mine", driven_by="tool", impls={"c": impl}, figures=[FigureSpec(name="t", regex=r"t: (\S+)", unit="s")]
    )
    return byob.tool_argv(sys.executable, kernel, "c")


def _program(folder: Path, text: str, name: str = "mbw") -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def _mbw_identities(monkeypatch: pytest.MonkeyPatch, folder: Path) -> set[tuple[tuple[str, str], ...]]:
    """The identities submit gives the shipped mbw sweep with `folder` first on PATH."""
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    cfg = load_config(["experiment=byob_mbw"])
    return {r.identity for r in with_identity(cfg, plan(cfg).runs)}


def test_the_runs_identity_follows_the_programs_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _program(tmp_path / "a", "#!/bin/sh\necho build 1\n")
    first = _mbw_identities(monkeypatch, tmp_path / "a")
    [entry] = {v for identity in first for k, v in identity if k == "user.mbw"}
    assert entry == "sha256:" + hashlib.sha256(b"#!/bin/sh\necho build 1\n").hexdigest()[:16]
    assert _mbw_identities(monkeypatch, tmp_path / "a") == first

    _program(tmp_path / "b", "#!/bin/sh\necho build 1\n")  # the same content elsewhere on PATH: the same program
    assert _mbw_identities(monkeypatch, tmp_path / "b") == first
    _program(tmp_path / "b", "#!/bin/sh\necho build 2\n")  # rebuilt: every run of it is a new one
    second = _mbw_identities(monkeypatch, tmp_path / "b")
    assert not first & second and len(second) == len(first)


def test_a_bare_name_is_found_through_the_runs_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job environment's PATH (cluster or partition env) where it sets one, else this process's."""
    one, two = _program(tmp_path / "one", "one"), _program(tmp_path / "two", "two")
    monkeypatch.setenv("PATH", str(tmp_path / "one"))
    argv = _argv(["mbw", "{n}"])
    assert user_program(argv, [], {}) == [("user.mbw", _file_hash(str(one), {}))]
    assert user_program(argv, [("env.PATH", str(tmp_path / "two"))], {}) == [("user.mbw", _file_hash(str(two), {}))]
    assert _file_hash(str(one), {}) != _file_hash(str(two), {})
    # an absolute path is that file, PATH or not
    assert user_program(_argv([str(two)]), [], {}) == [("user.mbw", _file_hash(str(two), {}))]


def test_a_program_not_here_is_absent_and_submit_does_not_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert user_program(_argv(["nowhere", "{n}"]), [], {}) == [("user.nowhere", ABSENT)]
    assert user_program(_argv([str(tmp_path / "gone")]), [], {}) == [("user.gone", ABSENT)]
    # a relative path with a folder: the job looks in its own attempt folder, not where submit runs
    _program(tmp_path / "bin", "here")
    monkeypatch.chdir(tmp_path)
    assert user_program(_argv(["bin/mbw"]), [], {}) == [("user.mbw", ABSENT)]


def test_an_interpreters_script_is_hashed_by_its_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "bench.py"
    script.write_text("import sys\nprint('t:', sys.argv[1])\n")
    python = os.path.realpath(sys.executable)
    monkeypatch.setenv("PATH", str(Path(python).parent))
    argv = _argv([Path(python).name, str(script), "{n}", "/no/such/file"])
    first = dict(user_program(argv, [], {}))
    assert first == {f"user.{Path(python).name}": _file_hash(python, {}), "user.bench.py": _file_hash(str(script), {})}
    assert first["user.bench.py"].startswith("python code ")
    script.write_text("import sys\n# a comment\nprint('t:', sys.argv[1])\n")
    assert dict(user_program(argv, [], {})) == first  # a comment is the same program
    script.write_text("import sys\nprint('t:', sys.argv[1], flush=True)\n")
    assert dict(user_program(argv, [], {}))["user.bench.py"] != first["user.bench.py"]


def test_a_contained_or_scripted_program_has_no_entry(tmp_path: Path) -> None:
    program = _program(tmp_path, "x")
    assert user_program(_argv([str(program)]), [("container.runtime", "apptainer")], {}) == []
    assert user_program(_argv(script=f"{program} {{n}}\n"), [], {}) == []
    assert user_program((sys.executable, "-m", "kernels.torch.attention"), [], {}) == []  # not tool-driven


def _run(identity: tuple[tuple[str, str], ...], argv: tuple[str, ...]) -> RunSpec:
    return RunSpec(
        cluster="local",
        partition="local",
        kernel="mine",
        impl="c",
        variant="v",
        device="cpu",
        dtype="fp32",
        threads=1,
        gpus=0,
        n=(10,),
        d=None,
        repeats=1,
        warmup=0,
        check=False,
        walltime_min=5,
        mem_gb=None,
        argv=argv,
        identity=identity,
    )


def _stored(run: RunSpec) -> dict[str, object]:
    """The run's spec as the ledger holds it (JSON: tuples are lists)."""
    return json.loads(json.dumps(run.to_json()))


def test_a_ledger_run_from_before_says_why_its_program_is_new_once() -> None:
    argv = _argv(["mbw", "{n}"])
    before = _stored(_run((("modules", ""),), argv))
    now = _run((("modules", ""), ("user.mbw", "sha256:1")), argv)
    [line] = why_new([now], [before])
    assert line == f"1 new run(s): user.mbw (none) -> 'sha256:1' ({USER_NOTE})"

    rebuilt = _run((("modules", ""), ("user.mbw", "sha256:2")), argv)
    [line] = why_new([rebuilt], [_stored(now)])
    assert line == "1 new run(s): user.mbw 'sha256:1' -> 'sha256:2'"
    other = _run((("modules", ""), ("user.mbw", "sha256:1")), _argv(["mbw", "{n}", "--more"]))
    assert USER_NOTE not in why_new([other], [before])[0]  # another declaration: not the upgrade alone


def test_the_driver_is_identified_by_its_protocol_not_by_campaigns_code() -> None:
    """An edit of campaign's code, or another python or torch, is not a new run of a user's unchanged
    program; a ledger run recorded when the driver was hashed by its code says why it is new once."""
    argv = (sys.executable, "-m", "campaign.job.fom", _argv(["mbw", "{n}"])[3], "--n", "10")
    items = program_identity(argv, [], {})
    assert (DRIVER_ENTRY, DRIVER_PROTOCOL) in items
    assert not [k for k, _ in items if k == "program.interpreter" or k.startswith("program.campaign")], items
    old_way = (("program.interpreter", "python 3.11.7 torch 2.5.1"), ("program.campaign.job", "python code sha256:1"))
    [line] = why_new([_run(((DRIVER_ENTRY, DRIVER_PROTOCOL),), argv)], [_stored(_run(old_way, argv))])
    assert line.endswith(f"({DRIVER_NOTE})") and "program.campaign.job 'python code sha256:1' -> (none)" in line


def test_a_changed_declaration_is_shown_where_it_changed() -> None:
    """Two declarations (one long JSON argument each) that differ deep inside: the reason shows the
    part around the difference, not the same cut start twice."""
    argv = _argv(script="cat params.txt; echo 't: 1'")
    spec = json.loads(argv[3])
    spec["inputs"] = {"params.txt": "size={n}\nscale=1\n"}
    old = (*argv[:3], json.dumps(spec, sort_keys=True))
    spec["inputs"] = {"params.txt": "size={n}\nscale=2\n"}
    new = (*argv[:3], json.dumps(spec, sort_keys=True))
    [line] = why_new([_run((("modules", ""),), new)], [_stored(_run((("modules", ""),), old))])
    assert "scale=1" in line and "scale=2" in line, line


def test_a_rebuilt_mpi_program_is_compared_at_its_own_nodes_and_ranks() -> None:
    """A rebuilt program swept over nodes x ranks: each new run is compared with the old build's run of
    its own shape, so the reason names the program alone, never `nodes 2 -> 1; ranks_per_node 2 -> 1`
    (the newest run of another shape, as if the sweep had changed)."""
    argv = _argv(["mpibench", "{n}"])
    shapes = [(1, 1), (1, 2), (2, 1), (2, 2)]
    old = [
        _stored(dataclasses.replace(_run((("user.mpibench", "sha256:1"),), argv), nodes=n, ranks_per_node=r))
        for n, r in shapes
    ]
    new = [
        dataclasses.replace(_run((("user.mpibench", "sha256:2"),), argv), nodes=n, ranks_per_node=r) for n, r in shapes
    ]
    assert why_new(new, old) == ["4 new run(s): user.mpibench 'sha256:1' -> 'sha256:2'"]
