"""winagg.spark.session: classic or Spark Connect, with winagg's settings."""

import pytest

from winagg.spark.session import DEFAULT_CONF, master_of, session, session_conf


def test_the_master_of_either_kind_of_session_is_read_without_a_spark_context(kind_spark, session_kind):
    # the tests' classic session and the Connect server both run on local[2], even where a test in
    # this process ran the pipeline's local[*] session first
    assert master_of(kind_spark) == "local[2]"


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


def test_a_session_reused_under_another_master_still_says_the_master_its_jobs_run_on(spark):
    # getOrCreate hands back the running local[2] session and copies the builder's spark.master
    # (local[*]) into that session's SQL conf: the master is the context's, not the conf's
    settings = {key: spark.conf.get(key) for key in session_conf()}  # session() sets winagg's again
    try:
        reused = session()
        assert reused.conf.get("spark.master") == "local[*]"
        assert master_of(reused) == "local[2]"
    finally:
        for key, value in settings.items():  # the tests' own (4 shuffle partitions) for the tests after
            spark.conf.set(key, value)
