"""The one judgement of a job's rows against its run (campaign.results.expected.judge):
many files in one table, each judged by its own run, each reason from its first row
that breaks a rule. The CSVs are read by the one reader, as a sync reads them."""

from __future__ import annotations

import pytest

from campaign.results.columnar import read
from campaign.results.expected import JUDGED_COLUMNS, Expected, Verdict, judge
from resultschema.columns import KERNEL_COLUMNS

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,rel_err,a,ranks\n"
RUN = Expected((64, 128), check=False, kernel="k", dtype="fp32", impl="c", variant="v", device="cpu", d=64,
               threads=1)


def _row(n: int, repeat: int = 0, *, kernel: str = "k", threads: str = "1", rel_err: str = "1e-7",
         dtype: str = "fp32", a: str = "32", ranks: str = "", d: str = "64") -> str:
    return f"{kernel},c,v,cpu,{dtype},{n},{d},{threads},{repeat},0.5,{rel_err},{a},{ranks}\n"


GOOD = _row(64) + _row(128)
CASES: list[tuple[str, str, Expected, Verdict]] = [
    ("good", GOOD, RUN, Verdict()),
    ("another kernel", _row(64) + _row(128, kernel="q"), RUN, Verdict(foreign="output is for kernel 'q', the run's is 'k'")),
    ("a blank d cell", _row(64) + _row(128, d=""), RUN, Verdict(foreign="output is for d None, the run's is 64")),
    ("d blank in every row: absent", _row(64, d="") + _row(128, d=""), RUN, Verdict()),
    ("threads not planned", _row(64, threads="2") + _row(128, threads="2"), Expected((64, 128), False, "k"), Verdict()),
    ("mixed ranks", _row(64, ranks="2") + _row(128, ranks="4"), RUN,
     Verdict(foreign="output mixes ranks [2, 4]: one run is one launch")),
    ("a blank ranks cell is 1", _row(64, ranks="2") + _row(128), RUN, Verdict(foreign="output mixes ranks [1, 2]: one run is one launch")),
    ("planned ranks", _row(64, ranks="2") + _row(128, ranks="2"), Expected((64, 128), False, "k", ranks=4),
     Verdict(foreign="output is for ranks 2, the run's is 4")),
    ("an argument as a number", _row(64, a="32.0") + _row(128, a=" 32"), Expected((64, 128), False, "k", extra_args=(("a", "32"),)),
     Verdict()),
    ("another argument value", _row(64) + _row(128, a="40"), Expected((64, 128), False, "k", extra_args=(("a", "32"),)),
     Verdict(foreign="output is for a '40', the run's is '32'")),
    ("a list argument sweeps inside", _row(64, a="20") + _row(128, a="40"),
     Expected((64, 128), False, "k", extra_args=(("a", "20,40"),)), Verdict()),
    ("stray n, sorted, five at most", GOOD + "".join(_row(n) for n in (9, 8, 7, 6, 5, 4)), RUN, Verdict(stray=(4, 5, 6, 7, 8))),
    ("a missing n", _row(64), RUN, Verdict(missing=(128,))),
    ("a stray and a missing n", _row(64) + _row(256), RUN, Verdict(stray=(256,), missing=(128,))),
    ("negative rel_err without --check", _row(64) + _row(128, rel_err="-0.5"), RUN,
     Verdict(failed="rel_err -0.5 at n=128 is negative: not an error magnitude (the check is broken)")),
    ("infinite rel_err without --check", _row(64, rel_err="inf") + _row(128), RUN,
     Verdict(failed="rel_err inf > 0.0001 at n=64 (fp32)")),
    ("a large rel_err without --check", _row(64, rel_err="0.5") + _row(128), RUN, Verdict()),
    ("a large rel_err under --check", _row(64) + _row(128, rel_err="0.5"), Expected((64, 128), True, "k"),
     Verdict(failed="rel_err 0.5 > 0.0001 at n=128 (fp32)")),
    ("the dtype's own tolerance", _row(64, dtype="fp16", rel_err="5e-3") + _row(128, dtype="fp16", rel_err="5e-3"),
     Expected((64, 128), True, "k"), Verdict()),
    ("nan under --check", _row(64, rel_err="nan") + _row(128), Expected((64, 128), True, "k"),
     Verdict(failed="rel_err nan > 0.0001 at n=64 (fp32)")),
    ("missing under --check", _row(64) + _row(128, rel_err=""), Expected((64, 128), True, "k"),
     Verdict(failed="rel_err missing at n=128 although the run checks results")),
    ("missing without --check", _row(64) + _row(128, rel_err=""), RUN, Verdict()),
]


def test_each_file_of_one_table_is_judged_by_its_own_run() -> None:
    """All the cases as one pool (a sync's batch): each file's verdict is its own."""
    pools = read([HEADER + text for _, text, _, _ in CASES], KERNEL_COLUMNS, JUDGED_COLUMNS)
    assert len(pools) == 1 and all(r is None for r in pools[0].refusals)
    [pool] = pools
    verdicts = judge(pool.table, pool.sizes, [want for _, _, want, _ in CASES])
    assert {name: v for (name, _, _, _), v in zip(CASES, verdicts)} == {name: v for name, _, _, v in CASES}


@pytest.mark.parametrize(("name", "text", "want", "verdict"), CASES, ids=[c[0] for c in CASES])
def test_a_file_alone(name: str, text: str, want: Expected, verdict: Verdict) -> None:
    [pool] = read([HEADER + text], KERNEL_COLUMNS, JUDGED_COLUMNS)
    assert judge(pool.table, pool.sizes, [want]) == [verdict]
