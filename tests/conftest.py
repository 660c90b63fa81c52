import os
import sys

from hypothesis import HealthCheck, settings

# Lets test modules import the shared brute-force oracle (tests/oracle.py) as `oracle`.
sys.path.insert(0, os.path.dirname(__file__))

# Profiles for the tests that take their settings from the profile (the state machines of
# tests/stateful.py, the formula checks of tests/aggregations/test_formulas.py).
# `HYPOTHESIS_PROFILE=deep bash scripts/test.sh tests/algos/fifo/test_fifo_stateful.py ...` explores
# far more sequences; CI runs the default.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.filter_too_much])
settings.register_profile("default", max_examples=6, stateful_step_count=25, **_COMMON)
settings.register_profile("deep", max_examples=60, stateful_step_count=50, **_COMMON)
# "ci" is the default by name. The differential test (tests/test_paths.py, its Spark part) and
# the exact combine checks (tests/aggregations/test_exact_combine.py) set their own example
# counts from the profile's name (tests/exact_oracle.py: examples()): moderate under
# default/ci, about an hour of exploration under `HYPOTHESIS_PROFILE=deep`.
settings.register_profile("ci", parent=settings.get_profile("default"))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

#: Tests of a minute or more (clusters, Spark subprocesses, the shipped environment), by node
#: id prefix, in the order they start. They run first: xdist's worksteal gives each worker a
#: contiguous part of the run and lets an idle worker take queued tests, never a running one,
#: so a long test started last would end the run with the other worker idle.
LONG_FIRST = (
    "tests/spark/test_packenv.py::",
    "tests/spark/test_streaming.py::test_a_killed_stream_resumes",
    "tests/spark/test_hopping.py::test_one_key_fed_out_of_order",
    "tests/spark/test_batch.py::test_a_monoid_from_a_module_only",
    "tests/test_docs.py::test_python_examples_run[docs/guide/spark.md]",
)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        return next((k for k, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)), len(LONG_FIRST))

    items.sort(key=rank)  # stable: the rest keep their order
