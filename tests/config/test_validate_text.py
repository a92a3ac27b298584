"""check_text: one rule for free text, with or without lines (campaign.config.validate)."""

from __future__ import annotations

import pytest

from campaign.config.validate import check_text
from campaign.plumbing.errors import ConfigError


def test_one_line_text_refuses_newlines_and_tabs() -> None:
    assert check_text("gcc -O3", "cluster.build.cflags") == "gcc -O3"
    for bad in ("a\nb", "a\tb", "a\x00b"):
        with pytest.raises(ConfigError, match=r"cluster\.env\.X contains the control character .*; newlines, tabs "
                                              "and NUL cannot reach a job script"):
            check_text(bad, "cluster.env.X")


def test_lines_allow_newlines_and_tabs_only() -> None:
    script = "set -x\n\tmybench {n}\n"
    assert check_text(script, "kernels.k.impls.i.script", lines=True) == script
    for bad in ("a\x00b", "a\rb", "a\x1bb"):
        with pytest.raises(ConfigError, match=r"kernels\.k\.impls\.i\.script contains the control character "
                                              ".*; only newlines and tabs$"):
            check_text(bad, "kernels.k.impls.i.script", lines=True)


def test_the_limit_holds_either_way() -> None:
    for lines in (False, True):
        with pytest.raises(ConfigError, match="is 11 characters long; at most 10 are allowed"):
            check_text("x" * 11, "kernels.k.inputs.f", limit=10, lines=lines)
