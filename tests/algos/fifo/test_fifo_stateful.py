"""Every in-order algorithm, per item, against the oracle on long random operation sequences."""

import pytest

import winagg
from winagg.algos.registry import info

from oracle import CONCAT, MATRIX
from stateful import window_machine

FIFO = [a.name for a in winagg.algorithms() if a.order == "fifo"]


@pytest.mark.parametrize("algorithm", FIFO)
def test_long_sequences_match_the_oracle(algorithm):
    # concat is exact and not commutative, so any order bug shows; soe needs an inverse: the
    # matrix group, also not commutative
    monoid = MATRIX if info(algorithm).needs_inverse else CONCAT
    machine = window_machine(lambda: winagg.make(algorithm, monoid), monoid)
    machine.TestCase().runTest()


@pytest.mark.parametrize("algorithm", ["two_stacks_lite", "amta", "flatfat"])
def test_long_sequences_match_the_oracle_on_argmax(algorithm):
    # a built-in aggregation whose ties go to the older item, through the same machine
    monoid = winagg.aggregations.get("argmax")
    window_machine(lambda: winagg.make(algorithm, monoid), monoid).TestCase().runTest()
