"""Turn the H200 model-shape CSVs (kernel output of kernels/torch/gemm_shapes.py,
bench/results/h200/shapes/*.csv) into a campaign report: add the cluster and
partition they ran on and a `params` column naming each shape (so different
shapes are different configurations), `campaign import` them into a ledger, and
`campaign report` it.

    .venv/bin/python scripts/shapes_report.py bench/results/h200/shapes
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

SHAPE_COLUMNS = ["h", "a", "b", "v", "t", "ffn", "m", "k", "nn"]


def main(folder: Path) -> int:
    frames = []
    for path in sorted(folder.glob("*.csv")):
        df = pd.read_csv(path)
        df["cluster"], df["partition"] = "h200node", "gpu"
        df["params"] = df[SHAPE_COLUMNS].astype(str).apply(lambda r: ",".join(f"{k}={v}" for k, v in r.items()),
                                                           axis=1) + f",set={path.stem}"
        frames.append(df)
    merged = pd.concat(frames, ignore_index=True)
    out = folder / "report"
    out.mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="shapes-report-"))  # the import CSV and ledger are regenerable
    csv = scratch / "shapes_import.csv"
    merged.to_csv(csv, index=False)
    ledger = scratch / "ledger.sqlite"
    campaign = str(Path(sys.executable).parent / "campaign")
    subprocess.run([campaign, "--ledger", str(ledger), "import", str(csv)], check=True)
    subprocess.run([campaign, "--ledger", str(ledger), "report", "--out", str(out)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/h200/shapes")))
