"""Start NP ranks of a multi-rank program on this machine, as torchrun would
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), for tests and
bench/ scripts on a machine without Slurm or MPI:

    python -m kernels.torch.spawn_ranks 4 python -m kernels.torch.tp_gemm --n 256 --out t.csv

(torchrun itself cannot pass the contract's `--n`: its own parser takes it as
an abbreviation of its options.) A rank that fails ends the others; the exit
status is the first failing rank's, else 0.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(ranks: int, argv: Sequence[str], env: dict[str, str] | None = None) -> int:
    """Run `argv` as `ranks` processes; the first non-zero exit status, else 0."""
    base = dict(os.environ if env is None else env)
    base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(ranks))
    procs = [subprocess.Popen(list(argv), env={**base, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(ranks)]
    status = 0
    try:
        while procs:
            for p in list(procs):
                code = p.poll()
                if code is None:
                    continue
                procs.remove(p)
                if code and not status:
                    status = code
                    for other in procs:
                        other.terminate()
            time.sleep(0.05)
    finally:
        for p in procs:
            p.kill()
    return status


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit() or int(argv[0]) < 1:
        print("usage: python -m kernels.torch.spawn_ranks NP PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    return spawn(int(argv[0]), argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
