"""A tool-driven program's templates at one point of its run: argv, env, a
multi-line script and input files, each with `{name}` placeholders
(docs/byob.md).

Why one module: the compose side (campaign.planning.byob) checks that every
placeholder names something the run has, and the node side
(campaign.job.fom) fills them; both must read a template the same way (`{{`
and `}}` are literal braces, a placeholder is a plain name, never a format
spec or attribute). The run's shape comes with it: `{nodes}`, `{ranks}`,
`{ranks_per_node}`, `{gpus}` and a near-square process grid `{grid_p}` x
`{grid_q}` for programs that read one (HPL's P x Q must be the rank count).

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shlex
from pathlib import Path
from typing import Any

from campaign.job.shell_quoting import ANSI, DOUBLE, HEREDOC, HEREDOC_QUOTED, REREAD, SINGLE, quoting

# A template's pieces, read left to right as str.format reads them: `{{` and `}}` a literal brace, `{name}` a
# placeholder. (Escapes taken out first cut `${X:-{tag}}` at its `}}`: no placeholder, `{tag` in the text.)
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_-]*)\}")
# What the run's shape gives every template, whatever the sweep (campaign.planning.byob.swept)
SHAPE_PARAMS = ("nodes", "ranks", "ranks_per_node", "gpus", "grid_p", "grid_q")
# An input file's name: a plain file in the attempt folder (no folder, nothing hidden)
INPUT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")


def placeholders(text: str) -> list[str]:
    """The `{name}` placeholders of one template string (`{{` is a literal brace)."""
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]


def render(text: str, values: dict[str, str], quote: bool = False) -> str:
    """`text` with each `{name}` replaced by its value; `quote`: each value
    quoted for the shell quoting it stands in (campaign.job.shell_quoting), so
    a script's placeholder is its value as it is, never shell syntax."""
    where = quoting(text) if quote else []

    def fill(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return m.group()[0]  # {{ or }}: one brace
        value = values[m.group(1)]
        return _quoted(value, where[m.start()]) if quote else value

    return _TOKEN.sub(fill, text)


def reread(script: str) -> list[str]:
    """The placeholders of a script where no quoting keeps a value as it is (shell_quoting.REREAD:
    inside backticks or ${...}, or a here-document's command substitution), refused at compose."""
    where = quoting(script)
    return [m.group(1) for m in _TOKEN.finditer(script) if m.group(1) and where[m.start()] == REREAD]


def _quoted(value: str, where: str) -> str:
    """`value` written so that bash reads it back as it is, where it stands."""
    if where == REREAD:  # (compose refuses such a script: byob.check_kernel)
        raise ValueError("a placeholder where no quoting holds (backticks, ${...}, a here-document's $( ))")
    if where == DOUBLE:
        return re.sub(r'([\\$`"])', r"\\\1", value)
    if where == SINGLE:
        return value.replace("'", "'\\''")
    if where == ANSI:
        return value.replace("\\", "\\\\").replace("'", "\\'")
    if where == HEREDOC:
        return re.sub(r"([\\$`])", r"\\\1", value)
    return value if where == HEREDOC_QUOTED else shlex.quote(value)


def process_grid(ranks: int) -> tuple[int, int]:
    """P x Q = ranks with P <= Q, as close to square as the rank count allows
    (12 -> 3 x 4, 7 -> 1 x 7)."""
    p = max(1, math.isqrt(max(ranks, 1)))
    while ranks % p:
        p -= 1
    return p, max(ranks, 1) // p


def shape_values(nodes: int, ranks_per_node: int, gpus: int) -> dict[str, str]:
    """The shape placeholders of a run of `nodes` x `ranks_per_node` ranks and `gpus` GPUs in all."""
    ranks = nodes * ranks_per_node
    p, q = process_grid(ranks)
    return {
        "nodes": str(nodes),
        "ranks": str(ranks),
        "ranks_per_node": str(ranks_per_node),
        "gpus": str(gpus),
        "grid_p": str(p),
        "grid_q": str(q),
    }


def script_argv(script: str, values: dict[str, str], name: str) -> list[str]:
    """A multi-line script as one command: `bash -eu` (the first failing line,
    or an unset variable, ends it with its code), placeholders shell-quoted;
    `name` is the script's $0 in its error messages."""
    return ["bash", "-eu", "-c", render(script, values, quote=True), name]


def program_argv(spec: dict[str, Any], values: dict[str, str]) -> list[str]:
    """The program of a tool-driven declaration at one point: its `script` as
    one command, else its `argv` with each word rendered."""
    if spec.get("script"):
        return script_argv(spec["script"], values, spec["kernel"])
    return [render(a, values) for a in spec["argv"]]


def write_inputs(inputs: dict[str, str], values: dict[str, str], folder: Path) -> None:
    """Each input file rendered into `folder` before the program starts (temp
    file, then rename: the program never reads half a file). The last one
    written stays in the attempt folder; the template is in the run's key."""
    for name, template in sorted(inputs.items()):
        path = folder / name
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")  # two writers of one folder never share a temp file
        tmp.write_text(render(template, values))
        os.replace(tmp, path)


def template_hash(text: str) -> str:
    """The short content hash an input template adds to the run's identity."""
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
