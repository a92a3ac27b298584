"""The programs a campaign's runs start, and which of them are the user's.

Why: a report that names our `gcc -O3` build beside a number measured with
a binary the user compiled themselves (a tool-driven benchmark of
docs/byob.md, or a contract program named by path in a kernel YAML) says
something false about that number. Our programs are the kernels/ sources the
partition's build job compiles (campaign.commands.chain) and the torch
modules of kernels/; everything else is the user's, and what identifies it
is its file: the real path (a name found on PATH resolved, links followed)
and its sha256, recorded at submit in the provenance's environment under
`programs` (campaign.results.program_builds reads it for the report).

Resolved and hashed on the submitting host, with the runs' PATH (the job
environment's, where the cluster or partition sets one): on the local backend
that is the node itself; on a cluster, the binaries on the shared filesystem
the jobs start. A program inside the run's container image is the image's:
its name is kept, with the image, and nothing on this host is hashed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from campaign.planning.byob import is_tool
from campaign.planning.run_spec import RunSpec

OURS_PACKAGE = "kernels."  # `python -m kernels.torch.X`: our torch programs (nothing to build)
KEY = "programs"  # the provenance environment's key (one entry per user program, by its word)


def file_sha256(path: str) -> str | None:
    """The file's sha256 (hex), or None where it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def _tool_spec(argv: tuple[str, ...]) -> dict[str, Any] | None:
    """The declaration of a tool-driven benchmark (campaign.job.fom runs its program)."""
    if len(argv) > 3 and is_tool(argv):
        spec = json.loads(argv[3])
        return spec if isinstance(spec, dict) else None
    return None


def program_word(argv: tuple[str, ...]) -> str:
    """The word that names a run's program: a tool-driven benchmark's own
    program (its argv[0] as declared, or `script of KERNEL/IMPL`), the module
    or script an interpreter runs, else argv[0]."""
    spec = _tool_spec(argv)
    if spec is not None:
        if spec.get("script"):
            return f"script of {spec['kernel']}/{spec['impl']}"
        return str(spec["argv"][0])
    if argv and Path(argv[0]).name.startswith("python"):
        args = list(argv[1:])
        if "-m" in args[:-1]:
            return args[args.index("-m") + 1]
        script = next((a for a in args if not a.startswith("-")), None)
        if script is not None:
            return script
    return argv[0] if argv else ""


def resolve(word: str, path: str | None) -> str | None:
    """The real path of the program `word` names: a path as given, a bare name
    where PATH (`path`) finds it; links followed. None where it is nowhere."""
    found = word if os.sep in word else shutil.which(word, path=path)
    return os.path.realpath(found) if found and os.path.isfile(found) else None


def _user_entry(run: RunSpec, word: str) -> dict[str, Any]:
    identity = dict(run.identity)
    if "container.runtime" in identity:  # the image's file: a path on this host would be another one
        return {"kind": "binary", "path": None, "sha256": None, "image": identity.get("container.image")}
    spec = _tool_spec(run.argv)
    if spec is not None and spec.get("script"):  # bash lines of the declaration: their text is the program
        return {"kind": "script", "path": None, "sha256": hashlib.sha256(spec["script"].encode()).hexdigest()}
    real = resolve(word, identity.get("env.PATH", os.environ.get("PATH")))
    # an interpreter's own script (a tool-driven program is started by the driver, not run by it)
    kind = "script" if spec is None and Path(run.argv[0]).name.startswith("python") else "binary"
    return {"kind": kind, "path": real, "sha256": file_sha256(real) if real else None}


def is_ours(word: str, argv: tuple[str, ...], native: Callable[[str], str | None]) -> bool:
    """Our program: built from kernels/ by the build job (`native` names it,
    campaign.commands.chain.native_program), or a torch module of kernels/."""
    return native(argv[0]) is not None or (word.startswith(OURS_PACKAGE) and "-m" in argv[1:])


def record(runs: Iterable[RunSpec], native: Callable[[str], str | None]) -> dict[str, dict[str, Any]]:
    """The provenance's `programs`: each user program of the runs by its word
    (program_word) -> kind (binary or script), real path, sha256 (and the
    image it lives in, in a container). Each program is resolved and hashed
    once, however many runs start it."""
    out: dict[str, dict[str, Any]] = {}
    for run in {(r.argv, r.identity): r for r in runs}.values():
        word = program_word(run.argv)
        if word not in out and not is_ours(word, run.argv, native):
            out[word] = _user_entry(run, word)
    return out
