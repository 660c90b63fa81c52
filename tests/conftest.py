import os
import sys

from hypothesis import HealthCheck, settings

# Lets test modules import the shared brute-force oracle (tests/oracle.py) as `oracle`.
sys.path.insert(0, os.path.dirname(__file__))

# Profiles for the tests that take their settings from the profile (the state machines of
# tests/stateful.py, the formula checks of tests/aggregations/test_formulas.py).
# `HYPOTHESIS_PROFILE=deep bash scripts/test.sh tests/fifo/test_fifo_stateful.py ...` explores
# far more sequences; CI runs the default.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.filter_too_much])
settings.register_profile("default", max_examples=6, stateful_step_count=25, **_COMMON)
settings.register_profile("deep", max_examples=60, stateful_step_count=50, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
