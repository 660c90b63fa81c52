"""Order-sensitive aggregations: first, last, collect, M4 (the non-commutative ones that catch order bugs)."""

import functools

import pytest

import winagg
from winagg import aggregations as A

FIFO_NO_INVERSE = ["recalc", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]
ITEMS = [4, "b", 2.5, None, (1, 2), "b", 0]
NUMBERS = [3, 9, -2, 9, 5, -2, 1]


def fold(monoid, items):
    return monoid.lower(functools.reduce(monoid.combine, (monoid.lift(x) for x in items), monoid.identity))


def test_first_last_collect_by_name():
    assert fold(A.get("first"), NUMBERS) == 3
    assert fold(A.get("last"), NUMBERS) == 1
    assert fold(A.get("collect"), NUMBERS) == [3, 9, -2, 9, 5, -2, 1]
    assert fold(A.get("m4"), NUMBERS) == (3, 1, -2, 9)


def test_any_python_items():
    assert fold(A.Collect(), ITEMS) == [4, "b", 2.5, None, (1, 2), "b", 0]
    assert fold(A.First(), ITEMS) == 4
    assert fold(A.Last(), ITEMS) == 0
    assert fold(A.M4(), ["q", "a", "z", "m"]) == ("q", "m", "a", "z")


def test_empty():
    assert fold(A.First(), []) is None
    assert fold(A.Last(), []) is None
    assert fold(A.Collect(), []) == []
    assert fold(A.M4(), []) is None


@pytest.mark.parametrize("name", ["first", "last", "collect", "m4"])
def test_identity_and_associativity(name):
    m = A.get(name)
    lifted = [m.lift(x) for x in NUMBERS]
    parts = lifted + [m.combine(lifted[i], lifted[i + 1]) for i in range(len(lifted) - 1)] + [m.identity]
    for p in parts:
        assert m.combine(m.identity, p) == p
        assert m.combine(p, m.identity) == p
    for a in parts:
        for b in parts:
            for c in parts[::3]:
                assert m.combine(m.combine(a, b), c) == m.combine(a, m.combine(b, c))


@pytest.mark.parametrize("name", ["first", "last", "collect", "m4"])
def test_not_commutative(name):
    m = A.get(name)
    assert not m.commutative
    a, b = m.lift(1), m.lift(2)
    assert m.lower(m.combine(a, b)) != m.lower(m.combine(b, a))


@pytest.mark.parametrize("algorithm", FIFO_NO_INVERSE)
def test_through_every_fifo_algorithm(algorithm):
    aggs = {name: winagg.make(algorithm, name) for name in ("first", "last", "collect", "m4")}
    window = []
    values = [5, 1, 8, 8, 3, 7, 2, 9, 4, 6, 0, 11]
    for step, v in enumerate(values):
        for agg in aggs.values():
            agg.insert(v)
        window.append(v)
        if step % 3 == 2:  # evict two every third step: the window grows and shrinks
            for _ in range(2):
                for agg in aggs.values():
                    agg.evict()
                window.pop(0)
        assert aggs["collect"].query() == window
        assert aggs["first"].query() == window[0]
        assert aggs["last"].query() == window[-1]
        assert aggs["m4"].query() == (window[0], window[-1], min(window), max(window))
    while window:
        for agg in aggs.values():
            agg.evict()
        window.pop(0)
        assert aggs["collect"].query() == window
    assert aggs["first"].query() is None and aggs["m4"].query() is None
