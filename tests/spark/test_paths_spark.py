"""The differential test's Spark path: ``winagg.spark.sliding`` against tests/exact_oracle.py.

A few generated cases (several keys each, so that one Spark job checks many windows): values
with nulls, NaN, +-inf, -0.0, huge and tiny magnitudes, and int64 values whose window sums
come near int64's limit without leaving it; order values with ties, in any order. Row frames
(``rowsBetween(-(N-1), 0)``, ties broken by a second order column) and range frames
(``rangeBetween(-D, 0)``: ``[t - D, t]``, peers included). Spark answers null where the
oracle says NaN (a window without a value, a sample variance of one value).
"""

from __future__ import annotations

import math

from hypothesis import Phase, given, note
from hypothesis import strategies as st

import exact_oracle as X

DOUBLE_AGGS = ("sum", "mean", "min", "max", "count", "var", "std")
LONG_AGGS = ("sum", "min", "max", "count")

doubles = st.one_of(st.none(), st.just(math.nan), st.sampled_from([math.inf, -math.inf, -0.0, 1e300, -1e300, 5e-324]),
                    st.integers(-20, 20).map(float), st.floats(-1e6, 1e6), st.floats(allow_nan=False))
longs = st.one_of(st.none(), st.integers(-1000, 1000), st.integers(-(2 ** 40), 2 ** 40))


@st.composite
def keys(draw):
    n = draw(st.integers(0, 12))
    return dict(x=draw(st.lists(doubles, min_size=n, max_size=n)),
                y=draw(st.lists(longs, min_size=n, max_size=n)),
                t=draw(st.lists(st.integers(0, 2 * n + 1), min_size=n, max_size=n)))


#: int64 values every run of which sums within int64, rows 0..1 to exactly 2**63 - 1 and rows 1..4 to
#: exactly -2**63 (times 0..4: every row and range frame is a run): no false overflow at the limit
NEAR_LIMIT = dict(x=[1.0, 2.0, 3.0, 4.0, 5.0], y=[2 ** 62, 2 ** 62 - 1, -(2 ** 62), -(2 ** 62), 2 ** 62 - 1],
                  t=[0, 1, 2, 3, 4])


def _frame_rows(spec, frame, size):
    """Per row of one key, the rows of its frame (indices into the key's lists)."""
    t = spec["t"]
    if frame == "range":
        return X.range_frames(t, size)
    order = sorted(range(len(t)), key=lambda j: (t[j], j))
    place = {j: k for k, j in enumerate(order)}
    return [order[max(0, place[i] - size + 1):place[i] + 1] for i in range(len(t))]


# no shrinking: each try is two Spark jobs, and the message names the key, row and column
@X.examples(ci=2, deep=60, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(groups=st.lists(keys(), min_size=1, max_size=4), rows=st.integers(1, 4), span=st.integers(0, 4))
def test_sliding_equals_the_oracle(spark, groups, rows, span):
    from winagg.spark import sliding

    groups = groups + [NEAR_LIMIT]
    note(repr(groups))
    data = [(f"k{g}", j, spec["t"][j], spec["x"][j], spec["y"][j])
            for g, spec in enumerate(groups) for j in range(len(spec["t"]))]
    df = spark.createDataFrame(data, "k string, seq long, t long, x double, y long")
    aggs = {f"x_{a}": (a, "x") for a in DOUBLE_AGGS}
    aggs.update({f"y_{a}": (a, "y") for a in LONG_AGGS})
    for frame, size in (("rows", rows), ("range", span)):
        if frame == "rows":
            out = sliding(df, partition_by="k", order_by=["t", "seq"], rows=size, aggs=aggs)
        else:
            out = sliding(df, partition_by="k", order_by="t", range=size, aggs=aggs)
        got = {(r["k"], r["seq"]): r for r in out.collect()}
        assert len(got) == len(data), f"{frame}: {len(got)} rows back for {len(data)}"
        bad = []
        for g, spec in enumerate(groups):
            frames = _frame_rows(spec, frame, size)
            for i, members in enumerate(frames):
                row = got[(f"k{g}", i)]
                for column, integer in (("x", False), ("y", True)):
                    for agg in (LONG_AGGS if integer else DOUBLE_AGGS):
                        want = X.aggregate(agg, [spec[column][j] for j in members], integer=integer)
                        message = want.check(row[f"{column}_{agg}"])
                        if message:
                            bad.append(f"{frame}={size} key k{g} row {i} {column}_{agg}: {message}")
        assert not bad, "; ".join(bad[:5]) + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")
