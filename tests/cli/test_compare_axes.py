"""`axis.NAME=VALUE` in a compare selection: one build of a campaign that
sweeps builds as a grid axis, the axis then left out of the match. The CLI end to end
is tests/e2e/test_replicates_local.py::test_compare_two_builds_of_one_campaign_by_axis."""

from __future__ import annotations

import pandas as pd
import pytest

from campaign.commands.compare import parse_selection, select_axes
from campaign.plumbing.errors import BadInputError


def test_axis_keys_parse_beside_the_others() -> None:
    sel = parse_selection("campaign=c,axis.build=new,axis.side=x")
    assert sel.campaign == "c" and sel.axes == (("build", "new"), ("side", "x"))
    for bad in ("campaign=c,axis.=x", "campaign=c,axis.build=", "campaign=c,axes.build=x"):
        with pytest.raises(BadInputError):
            parse_selection(bad)


def test_select_axes_keeps_the_value_and_drops_the_axis_from_params() -> None:
    frame = pd.DataFrame(
        {
            "params": ["a=20,32,build=old,tag=t", "a=20,32,build=new,tag=t", "build=new", None],
            "time_s": [1.0, 2.0, 3.0, 4.0],
        }
    )
    got = select_axes(frame, parse_selection("campaign=c,axis.build=new"))
    assert got["params"].tolist() == ["a=20,32,tag=t", ""]  # a list argument's comma stays in its value
    assert got["time_s"].tolist() == [2.0, 3.0]
    assert select_axes(frame, parse_selection("campaign=c")) is frame
    with pytest.raises(BadInputError, match=r"no results with build=mid \(seen: build=new, build=old\)"):
        select_axes(frame, parse_selection("campaign=c,axis.build=mid"))


def test_a_value_that_only_looks_like_the_one_asked_is_named_as_such() -> None:
    """The stored value decomposed ('cafe' and a combining accent), the one typed composed: the
    line said 'no results with build=café (seen: build=café)', the same text twice."""
    frame = pd.DataFrame({"params": ["build=cafe\u0301", "build=old"], "time_s": [1.0, 2.0]})
    with pytest.raises(BadInputError) as refused:
        select_axes(frame, parse_selection("campaign=c,axis.build=caf\u00e9"))
    message = str(refused.value)
    assert ascii("build=cafe\u0301") in message and "another Unicode form" in message, message
    with pytest.raises(BadInputError) as plain:
        select_axes(frame, parse_selection("campaign=c,axis.build=mid"))
    assert "Unicode" not in str(plain.value)
