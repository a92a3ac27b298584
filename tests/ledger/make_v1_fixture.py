"""Write tests/fixtures/ledger_v1.sqlite: a small campaign in ledger schema version 1.

The v1 schema is frozen here as the DDL that `Base.metadata.create_all` made
before `campaign.python` existed (schema version 2), so the fixture never
follows later model changes. Rows are inserted with plain sqlite3 in the
formats SQLAlchemy wrote them (datetimes as text, JSON as text, states by
name). Deterministic: the same script writes the same data.

    .venv/bin/python tests/ledger/make_v1_fixture.py [OUT]
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from tests.fixtures import LEDGER_V1

OUT = LEDGER_V1

V1_DDL = """
CREATE TABLE campaign (
	id INTEGER NOT NULL,
	name VARCHAR(200) NOT NULL,
	cluster VARCHAR(100) NOT NULL,
	experiment VARCHAR(100) NOT NULL,
	backend VARCHAR(20) NOT NULL,
	cluster_yaml VARCHAR NOT NULL,
	created_at DATETIME NOT NULL,
	workdir VARCHAR NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (name)
);
CREATE TABLE meta (
	"key" VARCHAR(64) NOT NULL,
	value VARCHAR(256) NOT NULL,
	PRIMARY KEY ("key")
);
CREATE TABLE provenance (
	id INTEGER NOT NULL,
	campaign_id INTEGER NOT NULL,
	created_at DATETIME NOT NULL,
	command VARCHAR NOT NULL,
	git_commit VARCHAR,
	git_dirty BOOLEAN,
	config_hash VARCHAR(64) NOT NULL,
	config_yaml VARCHAR NOT NULL,
	hostname VARCHAR NOT NULL,
	packages JSON NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(campaign_id) REFERENCES campaign (id)
);
CREATE TABLE run (
	id INTEGER NOT NULL,
	campaign_id INTEGER NOT NULL,
	"key" VARCHAR(32) NOT NULL,
	kernel VARCHAR(100) NOT NULL,
	impl VARCHAR(50) NOT NULL,
	variant VARCHAR(50) NOT NULL,
	partition VARCHAR(100) NOT NULL,
	device VARCHAR(20) NOT NULL,
	dtype VARCHAR(20) NOT NULL,
	threads INTEGER NOT NULL,
	gpus INTEGER NOT NULL,
	spec JSON NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (campaign_id, "key"),
	FOREIGN KEY(campaign_id) REFERENCES campaign (id)
);
CREATE TABLE job_attempt (
	id INTEGER NOT NULL,
	run_id INTEGER NOT NULL,
	attempt INTEGER NOT NULL,
	previous_id INTEGER,
	backend VARCHAR(20) NOT NULL,
	job_id VARCHAR(64),
	array_job_id VARCHAR(64),
	array_index INTEGER,
	state VARCHAR(20) NOT NULL,
	reason VARCHAR,
	submitted_at DATETIME,
	started_at DATETIME,
	ended_at DATETIME,
	exit_code INTEGER,
	node VARCHAR(200),
	workdir VARCHAR NOT NULL,
	stdout_path VARCHAR,
	stderr_path VARCHAR,
	output_path VARCHAR NOT NULL,
	walltime_min INTEGER NOT NULL,
	mem_gb DOUBLE,
	provenance_id INTEGER,
	PRIMARY KEY (id),
	UNIQUE (run_id, attempt),
	FOREIGN KEY(run_id) REFERENCES run (id),
	FOREIGN KEY(previous_id) REFERENCES job_attempt (id),
	FOREIGN KEY(provenance_id) REFERENCES provenance (id)
);
CREATE INDEX ix_job_attempt_state ON job_attempt (state);
CREATE INDEX ix_job_attempt_job_id ON job_attempt (job_id);
CREATE TABLE result (
	id INTEGER NOT NULL,
	attempt_id INTEGER,
	source VARCHAR(300) NOT NULL,
	cluster VARCHAR(100) NOT NULL,
	partition VARCHAR(100) NOT NULL,
	kernel VARCHAR(100) NOT NULL,
	impl VARCHAR(50) NOT NULL,
	variant VARCHAR(50) NOT NULL,
	device VARCHAR(20) NOT NULL,
	dtype VARCHAR(20),
	threads INTEGER NOT NULL,
	n INTEGER NOT NULL,
	d INTEGER,
	repeat INTEGER NOT NULL,
	time_s DOUBLE NOT NULL,
	job_id VARCHAR(64),
	gpu_model VARCHAR(100),
	flops DOUBLE,
	bytes DOUBLE,
	rel_err DOUBLE,
	extra JSON,
	PRIMARY KEY (id),
	FOREIGN KEY(attempt_id) REFERENCES job_attempt (id)
);
CREATE INDEX ix_result_attempt ON result (attempt_id);
"""

# What the tests expect to survive the upgrade.
CAMPAIGNS = {"smoke-local": "/opt/bench/venv/bin/python", "scaling-delta": "python3"}  # name -> python after v2
N_RUNS = 3
N_ATTEMPTS = 4
RESULT_TIMES = [0.001 * (i + 1) for i in range(12)]  # 3 runs x 2 n x 2 repeats, attempt rows
N_IMPORTED = 4
PACKAGES = {"python": "3.11.2", "campaign": "0.1.0", "sqlalchemy": "2.1.9"}


def _config_yaml(python: str | None) -> str:
    return f"campaign:\n  name: null\n  python: {python if python else 'null'}\n  workdir: null\n"


def write(out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    con = sqlite3.connect(out)
    con.executescript(V1_DDL)
    ts = "2025-06-01 12:00:{:02d}.000000"
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.executemany(
        "INSERT INTO campaign VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(1, "smoke-local", "local", "smoke", "local", "name: local\n", ts.format(0), "/work/runs/smoke-local"),
         (2, "scaling-delta", "delta", "forward_scaling", "slurm", "name: delta\n", ts.format(1),
          "/work/runs/scaling-delta")],
    )
    con.executemany(
        "INSERT INTO provenance VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [  # campaign 1: an old submit without, then a newer one with campaign.python -> the newer one wins
            (1, 1, ts.format(2), "campaign submit experiment=smoke", "abc123", 0, "0" * 64, _config_yaml(None),
             "login1", json.dumps(PACKAGES)),
            (2, 1, ts.format(3), "campaign submit experiment=smoke campaign.python=/opt/bench/venv/bin/python",
             "abc124", 0, "1" * 64, _config_yaml("/opt/bench/venv/bin/python"), "login1", json.dumps(PACKAGES)),
            (3, 2, ts.format(4), "campaign submit cluster=delta experiment=forward_scaling", None, None, "2" * 64,
             _config_yaml(None), "dt-login01", json.dumps(PACKAGES)),
        ],
    )
    runs = [(1, 1, "k1", "attention_forward", "c", "naive", "local", "cpu", "fp32", 1, 0),
            (2, 1, "k2", "attention_forward", "c", "naive", "local", "cpu", "fp32", 2, 0),
            (3, 2, "k3", "decode", "fortran", "naive", "cpu", "cpu", "fp32", 4, 0)]
    con.executemany("INSERT INTO run VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(*r, json.dumps({"key": r[2], "n": [64, 128]}), ts.format(5)) for r in runs])
    attempts = [  # id, run, attempt, previous, job_id, state, exit
        (1, 1, 1, None, "1001", "COMPLETED", 0),
        (2, 2, 1, None, "1002", "FAILED", 3),
        (3, 2, 2, 2, "1003", "COMPLETED", 0),
        (4, 3, 1, None, "2001_0", "COMPLETED", 0),
    ]
    con.executemany(
        "INSERT INTO job_attempt VALUES (?, ?, ?, ?, 'local', ?, NULL, NULL, ?, NULL, ?, ?, ?, ?, 'node1', "
        "?, NULL, NULL, ?, 30, NULL, ?)",
        [(a, r, n, prev, job, state, ts.format(6), ts.format(7), ts.format(8), code, f"/w/{a}", f"/w/{a}/results.csv",
          2 if r < 3 else 3) for a, r, n, prev, job, state, code in attempts],
    )
    rows = []
    rid = 0
    for attempt_id, job_id, threads in ((1, "1001", 1), (3, "1003", 2), (4, "2001_0", 4)):
        for n in (64, 128):
            for rep in (0, 1):
                rows.append((rid + 1, attempt_id, "job", "local", "local", "attention_forward", "c", "naive", "cpu",
                             "fp32", threads, n, 64, rep, RESULT_TIMES[rid], job_id, None, None, None, 1e-7, None))
                rid += 1
    for i in range(N_IMPORTED):
        rows.append((rid + 1, None, "import:/data/old.csv", "alpha", "cpu", "gemm", "torch", "naive", "cpu", None,
                     8, 256 * (i + 1), None, 0, 0.5 + i, None, None, 1e9, None, None, json.dumps({"note": "old"})))
        rid += 1
    con.executemany("INSERT INTO result VALUES (" + ", ".join("?" * 21) + ")", rows)
    con.commit()
    con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
    print(f"wrote {sys.argv[1] if len(sys.argv) > 1 else OUT}")
