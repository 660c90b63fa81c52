"""winagg.spark.session: classic or Spark Connect, with winagg's settings."""

import pytest

from winagg.spark.session import DEFAULT_CONF, master_of, session, session_conf


def test_the_master_of_either_kind_of_session_is_read_without_a_spark_context(kind_spark, session_kind):
    # a classic session's context says its master (a test in this process may have started the
    # pipeline's local[*] before the tests' local[2]); the Connect server runs on local[2]
    want = kind_spark.sparkContext.master if session_kind == "classic" else "local[2]"
    assert master_of(kind_spark) == want


def test_a_connect_client_sets_only_the_sql_settings_the_rest_are_the_servers():
    assert set(session_conf()) == {key for key in DEFAULT_CONF if key.startswith("spark.sql.")}
    assert "spark.ui.enabled" in DEFAULT_CONF and "spark.ui.enabled" not in session_conf()


@pytest.mark.parametrize("kwargs,message", [
    (dict(master="local[2]", remote="sc://localhost:15002"), "give master .* or remote .*, not both"),
    (dict(remote="localhost:15002"), "remote must be a Spark Connect URL"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        session(**kwargs)
