"""FiBA, per item, against the out-of-order oracle on long random operation sequences."""

import pytest

import winagg

from oracle import CONCAT
from stateful import window_machine


@pytest.mark.parametrize("options", [{"min_arity": 2}, {"min_arity": 4, "variant": "classic"},
                                     {"min_arity": 8, "bulk": False}])
def test_long_out_of_order_sequences_match_the_oracle(options):
    machine = window_machine(lambda: winagg.make("fiba", CONCAT, **options), CONCAT, out_of_order=True)
    machine.TestCase().runTest()
