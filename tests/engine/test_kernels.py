"""The one decision between compiled and plain Python."""

import numpy as np

import winagg
from winagg import aggregations
from winagg.engine.kernels import compiled_spec


def test_a_monoid_of_python_callables_runs_in_python():
    assert compiled_spec(winagg.Monoid(0, lambda a, b: a + b), np.float64) is None


def test_a_builtin_numeric_aggregation_runs_compiled_over_numbers():
    spec = compiled_spec(aggregations.Sum(), np.int64)
    assert spec is not None and spec.key == aggregations.Sum().compiled_for(np.dtype(np.int64)).key


def test_a_sketch_runs_compiled_only_where_its_estimate_is_the_answer():
    bloom = aggregations.Bloom()
    assert compiled_spec(bloom, np.float64) is not None  # rolling and Spark answer the estimate
    assert compiled_spec(bloom, np.float64, same_answer=True) is None  # a Window answers the filter


def test_the_counted_form_is_taken_where_there_is_one():
    mean = aggregations.Mean()
    counted = compiled_spec(mean, np.float64, counted=True)
    assert counted is not None and counted.key == mean.compiled_counted(np.dtype(np.float64)).key
