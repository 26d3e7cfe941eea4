"""The stdlib parse tree the lead screens read (`guardrails.re_syntax`, the one adapter over
`re._parser`): if a Python release changes its shape, these fail before a screen goes wrong."""

from __future__ import annotations

import re

import regex

from sluicegate.guardrails import re_syntax
from sluicegate.guardrails.lead_screen import lead_screen


def test_every_name_the_lead_screens_read_is_there() -> None:
    for name in re_syntax.OPCODES:
        assert hasattr(re_syntax.constants, name), name


def test_the_tree_has_the_shape_the_lead_screens_read() -> None:
    c = re_syntax.constants
    tree = list(re_syntax.parser.parse(r"sk-\d{2,4}[a-f]", 0))
    assert tree[:3] == [(c.LITERAL, ord("s")), (c.LITERAL, ord("k")), (c.LITERAL, ord("-"))]
    op, (low, high, body) = tree[3]
    assert (op, low, high) == (c.MAX_REPEAT, 2, 4)
    assert list(body) == [(c.IN, [(c.CATEGORY, c.CATEGORY_DIGIT)])]
    assert tree[4] == (c.IN, [(c.RANGE, (ord("a"), ord("f")))])
    assert list(re_syntax.parser.parse(r"x\b", 0))[-1] == (c.AT, c.AT_BOUNDARY)


def test_a_screen_built_from_the_tree_finds_where_a_rule_can_start() -> None:
    screen = lead_screen(regex.compile(r"sk-[A-Za-z0-9]{20,}"))
    assert screen is not None
    assert re.search(screen, "the key is sk-abc") and re.search(screen, "ends with s")
    assert not re.search(screen, "nothing here at all")
