"""winagg.Monoid: a user-defined aggregation from plain callables."""

import operator
import pickle

import pytest

import winagg


def concat(a, b):
    return a + b


def bracket(x):
    return f"[{x}]"


def length(s):
    return len(s)


def test_defaults_lift_and_lower_are_identity_functions():
    m = winagg.Monoid(0, operator.add)
    assert m.lift(7) == 7 and m.lower(7) == 7
    assert m.commutative is False
    assert m.invertible is False and m.inverse is None
    assert m.identity == 0
    assert m.compiled_for(int) is None  # user monoids run in Python


def test_fold_is_a_left_to_right_fold_from_identity():
    m = winagg.Monoid("<", concat, bracket, length, name="concat")
    assert m.fold(["a", "b", "c"]) == len("<[a][b][c]")
    plain = winagg.Monoid("", concat)
    assert plain.fold(["x", "y", "z"]) == "xyz"  # order kept: not commutative
    assert plain.fold([]) == ""


def test_name_and_repr():
    assert winagg.Monoid("", concat).name == "concat"
    m = winagg.Monoid(0, operator.add, commutative=True, inverse=operator.neg, name="plus")
    assert m.name == "plus"
    assert m.commutative and m.invertible
    assert "plus" in repr(m)


@pytest.mark.parametrize("kwargs", [
    dict(combine=42), dict(combine=concat, lift="no"), dict(combine=concat, lower=1),
    dict(combine=concat, inverse=[1]),
])
def test_non_callables_are_rejected(kwargs):
    with pytest.raises(TypeError):
        winagg.Monoid("", **kwargs)


def test_module_level_monoid_pickles():
    m = winagg.Monoid("", concat, bracket, length, name="brackets")
    back = pickle.loads(pickle.dumps(m))
    assert back.fold(["a", "bc"]) == m.fold(["a", "bc"]) == 7
    assert back.name == "brackets" and back.commutative is False


def test_monoid_of_lambdas_pickles_and_its_aggregator_continues():
    suffix = "!"  # a closure over a local: not importable by name
    m = winagg.Monoid("", lambda a, b: a + b, lift=lambda x: f"{x}{suffix}", lower=lambda p: p.upper(),
                      inverse=None, name="shout")
    back = pickle.loads(pickle.dumps(m))
    assert back.fold(["a", "b"]) == "A!B!" and back.name == "shout" and not back.invertible

    agg = winagg.make("daba", m)
    for item in "xyz":
        agg.insert(item)
    copy = pickle.loads(pickle.dumps(agg))
    copy.evict()
    copy.insert("w")
    assert copy.query() == "Y!Z!W!"  # the window y, z, w concatenated by hand
    assert agg.query() == "X!Y!Z!"  # the original is untouched


def test_module_level_functions_still_pickle_by_name():
    m = winagg.Monoid(0, operator.add)
    assert pickle.loads(pickle.dumps(m)).combine is operator.add


def test_user_monoid_runs_in_every_algorithm():
    # a non-commutative monoid with an inverse: integer 2x2 matrices of determinant 1 (exact)
    def mul(a, b):
        return (a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3])

    def inv(a):
        return (a[3], -a[1], -a[2], a[0])

    m = winagg.Monoid((1, 0, 0, 1), mul, lambda k: (1, k, 0, 1) if k % 2 else (1, 0, k, 1), inverse=inv)
    assert mul(m.lift(1), m.lift(2)) != mul(m.lift(2), m.lift(1))
    for name in ["recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]:
        agg = winagg.make(name, m)
        window = []
        for k in range(1, 12):
            agg.insert(k)
            window.append(k)
            if k % 4 == 0:
                agg.evict()
                window.pop(0)
            want = (1, 0, 0, 1)
            for x in window:
                want = mul(want, m.lift(x))
            assert agg.query() == want, (name, k)
