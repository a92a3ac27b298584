"""`submit --dry-run` over a ledger that already holds the runs says so: the
scripts shown are those of every planned run, and the summary names how many a
submit would skip (it said "1 runs, 1 job script(s)" as if all were new)."""

from __future__ import annotations

from pathlib import Path

from tests.byob.test_nsweep_cli import ONE_IMPL, _conf, _submit


def test_the_dry_run_names_the_runs_a_submit_would_skip(tmp_path: Path) -> None:
    env = _conf(tmp_path, ONE_IMPL)
    rc, out, err = _submit(tmp_path, env)
    assert rc == 0 and "1 runs, " in out and "already in the ledger: a submit skips them" not in out, out + err
    rc, out, err = _submit(tmp_path, env, dry=False)
    assert rc == 0, out + err
    rc, out, err = _submit(tmp_path, env)
    assert rc == 0, out + err
    assert "# campaign rate_sweep-local: 1 runs (1 already in the ledger: a submit skips them), " in out, out
