"""A user's benchmark declared as docs/byob.md says: kernel and experiment YAML in a
config folder of its own, the program in a bin/ folder on PATH. The setup the byob CLI
tests share."""

from __future__ import annotations

import os
from pathlib import Path


def declare(root: Path, kernels: dict[str, str], experiments: dict[str, str],
            programs: dict[str, str]) -> dict[str, str]:
    """Write `root`/conf/kernel/<name>.yaml, conf/experiment/<name>.yaml and the executable
    bin/<name>; the environment that finds them (CAMPAIGN_CONFIG_PATH, PATH)."""
    for folder, files, mode in (("conf/kernel", kernels, None), ("conf/experiment", experiments, None),
                                ("bin", programs, 0o755)):
        for name, text in files.items():
            path = root / folder / (name + ".yaml" if mode is None else name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if mode is not None:
                path.chmod(mode)
    return {"CAMPAIGN_CONFIG_PATH": str(root / "conf"), "PATH": f"{root / 'bin'}:{os.environ['PATH']}"}
