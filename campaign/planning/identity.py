"""A run's identity: everything that changes what it measures.

The plan (campaign.planning.plan) knows the experiment; the measurement also depends on
the job environment as rendered (OMP_* variables, extra variables of cluster
and partition), the modules loaded, the stack limit, and the program itself:
the content of a C/Fortran binary or script (of a Python file its code
without comments and docstrings: campaign.planning.code_hash), the interpreter
and torch versions of a torch kernel, and the run environment (container image digest
and runtime version, Spack lock hash: campaign.planning.run_env). Those go into `RunSpec.identity`, and so into the
run key: resubmitting after any of them changed submits new runs, and
`submit` says what changed (`why_new`) against the runs already in the ledger.

A tool-driven benchmark (docs/byob.md) is started by our driver, so its argv
names our code; the user's own program behind it is identified as well
(`user_program`, entries `user.<name>`): without it a rebuilt binary was
"nothing new to submit" and never ran, or its numbers were pooled with the
old build's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from campaign.config.load import repo_root
from campaign.config.schema import RootConfig
from campaign.job import fom
from campaign.job.template import placeholders, template_hash
from campaign.planning import programs
from campaign.planning.byob import is_tool
from campaign.planning.code_hash import CODE_PREFIX, code_hash
from campaign.planning.environment import job_env
from campaign.planning.run_env import containerised, identity_items, resolve
from campaign.planning.run_spec import RunSpec

_VERSIONS = (
    "import sys, importlib.metadata as m\n"
    "def v(p):\n    try: return m.version(p)\n    except Exception: return 'none'\n"
    "print('python ' + sys.version.split()[0] + ' torch ' + v('torch'))"
)
ABSENT = "absent"  # a program file that cannot be read here
DRIVER_ENTRY = "program.driver"  # a tool-driven run's driver (campaign.job.fom), by its measurement protocol
DRIVER_PROTOCOL = f"{fom.MODULE} protocol {fom.PROTOCOL}"
# what a tool-driven run recorded of its driver before DRIVER_ENTRY: the interpreter's versions and our code
_DRIVER_BEFORE = ("program.interpreter", f"program.{fom.MODULE}", f"program.{fom.MODULE.rsplit('.', 1)[0]}")
# a run's configuration and shape: a new run is compared with the ledger's run at the same point, so its
# reason says what changed there, never a shape it was not swept at (`nodes 2 -> 1` for a rebuilt program)
COORDINATES = (
    "kernel",
    "impl",
    "variant",
    "partition",
    "threads",
    "gpus",
    "dtype",
    "device",
    "extra_args",
    "nodes",
    "ranks_per_node",
    "gpus_per_rank",
)


def _file_hash(path: str, cache: dict[str, str]) -> str:
    """A .py file's code (campaign.planning.code_hash: comments and docstrings left out),
    any other file's bytes (a binary, a shell script, an input), `absent` where it cannot be read."""
    if path not in cache:
        try:
            with open(path, "rb") as fh:
                code = code_hash(fh.read()) if path.endswith(".py") else None
                fh.seek(0)
                cache[path] = code or "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()[:16]
        except OSError:
            cache[path] = ABSENT
    return cache[path]


def _tree_hash(folder: Path, cache: dict[str, str]) -> str:
    """One hash over every .py file of a package (names and code hashes), prefixed as its files are."""
    key = "tree:" + str(folder)
    if key not in cache:
        digest = hashlib.sha256()
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode() + b"\0" + _file_hash(str(path), cache).encode() + b"\0")
        cache[key] = CODE_PREFIX + digest.hexdigest()[:16]
    return cache[key]


def _interpreter(python: str, cache: dict[str, str]) -> str:
    """`python X torch Y` of an interpreter (read once; metadata only, torch is not imported)."""
    key = "interp:" + python
    if key not in cache:
        try:
            proc = subprocess.run([python, "-c", _VERSIONS], capture_output=True, text=True, timeout=60, check=False)
            cache[key] = proc.stdout.strip() if proc.returncode == 0 else "unknown"
        except (OSError, subprocess.SubprocessError):
            cache[key] = "unknown (not on this machine)"
    return cache[key]


def program_identity(
    argv: tuple[str, ...], identity: list[tuple[str, str]], cache: dict[str, str]
) -> list[tuple[str, str]]:
    """What identifies the program: its binary's content (a bare name found
    on the runs' PATH, as the job starts it), or for an interpreter its
    versions and the content of the script or module it runs."""
    if not argv:
        return []
    items: list[tuple[str, str]] = []
    if is_tool(argv):  # the input files it renders per run: an edited template says so in why_new
        spec = json.loads(argv[3]) if len(argv) > 3 else {}
        items += [(f"input.{name}", template_hash(text)) for name, text in sorted(spec.get("inputs", {}).items())]
        # our driver starts and times the user's program (user_program identifies that): what it adds to the
        # measurement is its protocol, not its code or the interpreter running it, so an upgrade of campaign
        # (or of torch, which it never imports) does not make every run of an unchanged program new
        return items + [(DRIVER_ENTRY, DRIVER_PROTOCOL)]
    if Path(argv[0]).name.startswith("python"):
        items.append(("program.interpreter", _interpreter(argv[0], cache)))
        args = list(argv[1:])
        if "-m" in args and args.index("-m") + 1 < len(args):
            module = args[args.index("-m") + 1]
            source = repo_root() / (module.replace(".", "/") + ".py")
            items.append((f"program.{module}", _file_hash(str(source), cache)))
            if "." in module:  # the package it imports from (harness, CSV writer, checks, ...)
                package = module.rsplit(".", 1)[0]
                items.append((f"program.{package}", _tree_hash(source.parent, cache)))
        items += [(f"program.{Path(a).name}", _file_hash(a, cache)) for a in args if os.path.isfile(a)]
    else:
        items.append(("program", _file_hash(_program_file(argv[0], identity, cache), cache)))
    return items


def _program_file(word: str, identity: list[tuple[str, str]], cache: dict[str, str]) -> str:
    """The file a program's argv[0] names: a bare name through the runs' PATH
    (a contract program of the user's on PATH; read as a path, it was always
    `absent`, and a rebuilt binary made no new runs); a path as it is; in a
    container, the image's program, never a file of this host."""
    if os.sep in word or containerised(identity):
        return word
    return _job_path(word, dict(identity).get("env.PATH", os.environ.get("PATH")), cache) or word


USER = "user."  # a tool-driven benchmark's own program and scripts: user.<file name>


def _job_path(word: str, path: str | None, cache: dict[str, str]) -> str | None:
    """The file the driver starts for `word`: an absolute path as it is, a bare
    name through the runs' PATH (as subprocess finds it in the job). None for a
    relative path with a folder: the job resolves it in its own attempt folder,
    which does not exist at submit (there is no file of the user's to hash)."""
    if os.sep in word and not os.path.isabs(word):
        return None
    key = f"which:{word}\0{path}"
    if key not in cache:
        cache[key] = programs.resolve(word, path) or ""
    return cache[key] or None


def user_program(
    argv: tuple[str, ...], identity: list[tuple[str, str]], cache: dict[str, str]
) -> list[tuple[str, str]]:
    """What identifies a tool-driven benchmark's own program (its driver is
    ours and is hashed by program_identity): the content of the file its
    argv[0] names, resolved as the job starts it, and of each absolute path
    among its arguments that is a file (an interpreter's script: `python3
    /x/bench.py`, `bash /x/run.sh`). A program inside a container is the
    image's (the digest is in `identity`) and a `script:` is text of the
    declaration (in the argv already): neither has an entry. A program that is
    not on this host is `absent`, steadily, until it appears; one named by a
    placeholder (`/opt/{variant}/bench`) cannot be resolved before the run
    and is identified by its declaration only."""
    if not is_tool(argv) or len(argv) < 4 or containerised(identity):
        return []
    spec = json.loads(argv[3])
    words = [str(w) for w in spec.get("argv") or []]
    if spec.get("script") or not words:
        return []
    word = words[0]
    if placeholders(word):
        return [(f"{USER}{Path(word).name}", "named by a placeholder: its declaration only")]
    found = _job_path(word, dict(identity).get("env.PATH", os.environ.get("PATH")), cache)
    items = [(f"{USER}{Path(word).name}", _file_hash(found, cache) if found else ABSENT)]
    return items + [
        (f"{USER}{Path(a).name}", _file_hash(a, cache))
        for a in words[1:]
        if os.path.isabs(a) and not placeholders(a) and os.path.isfile(a)
    ]


def program_entries(
    argv: tuple[str, ...], identity: list[tuple[str, str]], cache: dict[str, str]
) -> list[tuple[str, str]]:
    """Every identity entry that hashes what a run starts (its program, a tool-driven benchmark's own),
    given the rest of its identity (the runs' PATH, a container): what submit records and rerun checks."""
    return program_identity(argv, identity, cache) + user_program(argv, identity, cache)


def with_identity(cfg: RootConfig, runs: Iterable[RunSpec]) -> list[RunSpec]:
    """The runs with `identity` filled in (environment, modules, program)."""
    cluster = cfg.cluster
    cache: dict[str, str] = {}
    # job_env depends on the partition and the thread count only: 10,000 runs share a few identities
    seen: dict[tuple[str, int, tuple[str, ...]], tuple[tuple[str, str], ...]] = {}
    out = []
    for run in runs:
        where = (run.partition, run.threads, run.argv)
        if where not in seen:
            part = cluster.partitions[run.partition]
            items = [(f"env.{k}", v) for k, v in sorted(job_env(cluster, part, run).items())]
            modules = (["(reset)"] if cluster.module_reset else []) + list(cluster.modules) + list(part.modules)
            items += [("modules", " ".join(modules)), ("stack_unlimited", str(cluster.stack_unlimited))]
            # the image (digest, runtime version) or Spack environment (lock hash) the program runs in
            items += identity_items(*resolve(cfg.experiment, part), part.gpus > 0, cache)
            seen[where] = tuple(items + program_entries(run.argv, items, cache))
        out.append(run.evolve(identity=seen[where]))
    return out


def _flat(spec: dict[str, Any]) -> dict[str, Any]:
    flat = {k: v for k, v in spec.items() if k != "identity"}
    flat.update({str(k): v for k, v in spec.get("identity") or []})
    return flat


_MISSING = object()
CODE_NOTE = (
    "a Python program's hash now covers its code only, not its comments and docstrings: "
    "runs of an unchanged program are new this once"
)
USER_NOTE = (
    "a tool-driven benchmark's own program is now part of its runs' identity: "
    "runs of an unchanged program are new this once"
)
FOUND_NOTE = (
    "a program named by its bare name is now found on the runs' PATH and hashed: "
    "runs of an unchanged program are new this once"
)
DRIVER_NOTE = (
    "a tool-driven benchmark's driver is now identified by its measurement protocol, not by "
    "campaign's code: runs of an unchanged program are new this once"
)
_VALUE_CHARS = 80  # one changed value in a line; a program hash or a path is cut, not a whole argv


def _short(value: Any) -> str:
    """A changed value as a reason shows it: a tool-driven program's argv holds its whole
    declaration (input templates included), named by its own items (input.<name>) as well."""
    text = "(none)" if value is _MISSING else repr(value)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "..."


def value_change(old: Any, new: Any) -> str:
    """Two values as `'old' -> 'new'`; of two long texts (a tool-driven program's declaration, one
    JSON argument) the part around their first difference, since their common start says nothing."""
    if not (isinstance(old, str) and isinstance(new, str)) or max(len(repr(old)), len(repr(new))) <= _VALUE_CHARS:
        return f"{_short(old)} -> {_short(new)}"
    at = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    start = max(0, at - _VALUE_CHARS // 4)
    cut = "..." if start else ""
    return f"{cut}{_short(old[start:])} -> {cut}{_short(new[start:])}"


def _change(key: str, old: Any, new: Any) -> str:
    """One key's change; of two lists (argv, n) only the elements that differ,
    so a changed `--repeats` is `argv[7] '3' -> '5'`, not the whole command twice."""
    if isinstance(old, list) and isinstance(new, list):
        if len(old) == len(new):
            diff = [f"{key}[{i}] {value_change(a, b)}" for i, (a, b) in enumerate(zip(old, new)) if a != b]
            return ", ".join(diff[:2]) + (f", ... ({len(diff)} elements)" if len(diff) > 2 else "")
        gone, added = [v for v in old if v not in new], [v for v in new if v not in old]
        return (
            f"{key} {len(old)} -> {len(new)} elements"
            + (f", without {_short(gone)}" if gone else "")
            + (f", with {_short(added)}" if added else "")
        )
    return f"{key} {value_change(old, new)}"


def retired(entry: str, now: dict[str, str]) -> bool:
    """An entry a tool-driven run recorded of its driver before the driver was identified by its
    protocol (`now`: the entries hashed again today): it says nothing of the program."""
    return entry in _DRIVER_BEFORE and DRIVER_ENTRY in now


def now_code(old: Any, new: Any) -> bool:
    """A Python file hashed by its bytes before and by its code now (a ledger of before code hashes)."""
    return isinstance(old, str) and isinstance(new, str) and old.startswith("sha256:") and new.startswith(CODE_PREFIX)


def _now_found(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A program named by a bare name, `absent` before it was looked up on PATH, a file now."""
    argv = new.get("argv") or [""]
    return (
        old.get("argv") == argv
        and os.sep not in str(argv[0])
        and old.get("program") == ABSENT
        and new.get("program", ABSENT) != ABSENT
    )


def _now_user(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A tool-driven run recorded before its own program was hashed: the same declaration
    outside a container both times, no user.* entry in the ledger's run, some in the new one."""
    return (
        old.get("argv") == new.get("argv")
        and "container.runtime" not in old
        and "container.runtime" not in new
        and not any(k.startswith(USER) for k in old)
        and any(k.startswith(USER) for k in new)
    )


def _coordinates(spec: dict[str, Any]) -> str:
    return repr([spec.get(c) if c != "extra_args" else [list(p) for p in spec.get(c) or []] for c in COORDINATES])


def why_new(fresh: list[RunSpec], existing: list[dict[str, Any]], limit: int = 3) -> list[str]:
    """One line per distinct reason, e.g. `2 new run(s): env.OMP_PROC_BIND 'sptead' -> 'spread'`:
    each new run is compared with the newest ledger run of the same kernel,
    impl, variant, partition, threads/GPUs, dtype, extra arguments and shape
    (nodes, ranks per node, GPUs per rank)."""
    if not fresh:
        return []
    latest = {_coordinates(spec): spec for spec in existing}  # later specs overwrite: the newest wins
    reasons: Counter[str] = Counter()
    for run in fresh:
        new = json.loads(json.dumps(run.to_json()))  # tuples as lists, as the ledger's JSON has them
        old = latest.get(_coordinates(new))
        if old is None:
            reasons["not in the ledger before"] += 1
            continue
        if not old.get("identity"):
            reasons["environment and program not recorded by the earlier submit"] += 1
            continue
        a, b = _flat(old), _flat(new)
        changed = [
            _change(k, a.get(k, _MISSING), b.get(k, _MISSING))
            for k in sorted(set(a) | set(b))
            if a.get(k, _MISSING) != b.get(k, _MISSING)
        ]
        text = "; ".join(changed[:limit]) + (f"; ... ({len(changed)} changes)" if len(changed) > limit else "")
        if any(now_code(a.get(k), b.get(k)) for k in a):
            text += f" ({CODE_NOTE})"
        if _now_user(a, b):
            text += f" ({USER_NOTE})"
        if _now_found(a, b):
            text += f" ({FOUND_NOTE})"
        if DRIVER_ENTRY in b and any(k in a for k in _DRIVER_BEFORE):
            text += f" ({DRIVER_NOTE})"
        reasons[text or "same parameters (--force)"] += 1
    return [f"{count} new run(s): {text}" for text, count in reasons.most_common()]
