"""``winagg pipeline`` on a small CSV: outputs, values from the definition, stream = batch, clear errors."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from winagg.cli import main
from winagg.spark.pipeline import PipelineConfig, PipelineInputError, default_flights, run, stamp_in_order

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def flights_csv(tmp_path_factory):
    """300 flights of two airports and three carriers over two days, in arrival order."""
    rng = random.Random(2)
    start = pd.Timestamp("2013-03-01 05:00")
    rows = []
    for i in range(300):
        scheduled = start + pd.Timedelta(minutes=10 * i)
        delay = None if rng.random() < 0.05 else float(rng.randrange(-10, 180))
        departure = None if delay is None else scheduled + pd.Timedelta(minutes=delay)
        rows.append({"flight": i, "origin": rng.choice(["JFK", "LGA"]), "carrier": rng.choice(["AA", "B6", "UA"]),
                     "tailnum": f"N{rng.randrange(40)}", "dep_delay": delay,
                     "departure": None if departure is None else departure.strftime("%Y-%m-%d %H:%M:%S")})
    path = tmp_path_factory.mktemp("input") / "flights.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _config(path, out, **kwargs):
    return PipelineConfig(input=str(path), output=str(out), progress=False, **kwargs)


def _by_definition(frame: pd.DataFrame, key: str, hours: float):
    """Count, max and mean of dep_delay over [t - window, t] per key, straight from the rows."""
    frame = frame[frame["departure"].notna()]
    times = pd.to_datetime(frame["departure"])
    out = {}
    for i, row in frame.iterrows():
        same = frame[(frame[key] == row[key]) & (times <= times[i]) & (times >= times[i] - pd.Timedelta(hours=hours))]
        delays = same["dep_delay"].dropna()
        out[row["flight"]] = (len(delays), delays.max() if len(delays) else None, delays.mean() if len(delays) else None)
    return out


def test_batch_job_writes_parquet_and_a_report_with_values_from_the_definition(spark, flights_csv, tmp_path):
    facts = run(_config(flights_csv, tmp_path / "out"))
    assert facts["rows"] == 300 - sum(pd.read_csv(flights_csv)["departure"].isna())
    _assert_outputs_by_definition(flights_csv, tmp_path / "out", facts["rows"])


def _assert_outputs_by_definition(flights_csv, out, rows):
    source = pd.read_csv(flights_csv)
    for key in ("origin", "carrier"):
        result = pd.read_parquet(out / f"by_{key}")
        assert len(result) == rows
        assert {"flights_1h", "mean_delay_1h", "max_delay_1h", "std_delay_1h", "tails_1h",
                "flights_1d", "mean_delay_1d", "max_delay_1d", "std_delay_1d", "tails_1d"} <= set(result.columns)
        want = _by_definition(source, key, hours=1)
        for row in result.itertuples():
            count, peak, mean = want[row.flight]
            assert row.flights_1h == count
            assert (row.max_delay_1h == peak) if peak is not None else pd.isna(row.max_delay_1h)
            assert np.isclose(row.mean_delay_1h, mean) if mean is not None else pd.isna(row.mean_delay_1h)
        assert (out / f"by_{key}.png").read_bytes()[:8] == PNG_SIGNATURE
    report = (out / "report.md").read_text()
    assert "## Per origin" in report and "## Per carrier" in report and "![per carrier](by_carrier.png)" in report


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_the_cli_runs_the_job_on_a_spark_connect_server(connect_url, flights_csv, tmp_path, stream):
    """``winagg pipeline --remote``: a Connect client in its own process (as a user runs it), relative paths;
    the streaming job counts its dropped events (none) without a sparkContext."""
    env = {key: value for key, value in os.environ.items() if key != "SPARK_CONNECT_MODE_ENABLED"}
    options = ["--stream", "--replay-files", "6", "--files-per-batch", "2"] if stream else []
    done = subprocess.run([sys.executable, "-m", "winagg.cli", "pipeline", "--remote", connect_url, "--input",
                           str(flights_csv), "--output", "out", "--no-progress", *options],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = 300 - sum(pd.read_csv(flights_csv)["departure"].isna())
    assert f"{rows:,} rows in" in done.stdout and "on local[2]" in done.stdout
    if stream:
        assert "events dropped as late or without a time: 0" in done.stdout
    _assert_outputs_by_definition(flights_csv, tmp_path / "out", rows)


def test_stream_job_gives_the_batch_rows(spark, flights_csv, tmp_path):
    run(_config(flights_csv, tmp_path / "batch", groupings=("origin",)))
    facts = run(_config(flights_csv, tmp_path / "stream", groupings=("origin",), stream=True, replay_files=6,
                        files_per_batch=2))
    assert facts["dropped"] == 0
    batch = pd.read_parquet(tmp_path / "batch" / "by_origin").sort_values("flight").reset_index(drop=True)
    stream = pd.read_parquet(tmp_path / "stream" / "by_origin").sort_values("flight").reset_index(drop=True)
    assert stream["flight"].tolist() == batch["flight"].tolist()
    for column in ("flights_1h", "max_delay_1h", "mean_delay_1h", "std_delay_1d", "tails_1d"):
        np.testing.assert_allclose(stream[column].astype(float), batch[column].astype(float), rtol=1e-9,
                                   err_msg=column)
    assert "events dropped as late or without a time: 0" in (tmp_path / "stream" / "report.md").read_text()


def test_missing_file_column_and_non_time_column_are_named(spark, flights_csv, tmp_path, capsys):
    with pytest.raises(PipelineInputError, match="does not exist"):
        run(_config(tmp_path / "nope.csv", tmp_path / "o1"))
    with pytest.raises(PipelineInputError, match="the value column 'delay' is not in the input"):
        run(_config(flights_csv, tmp_path / "o2", value="delay"))
    with pytest.raises(PipelineInputError, match="the time column 'flight' is not a time"):
        run(_config(flights_csv, tmp_path / "o3", time="flight"))
    with pytest.raises(PipelineInputError, match="holds text that is not a time"):
        run(_config(flights_csv, tmp_path / "o4", time="tailnum"))
    assert main(["pipeline", "--input", str(tmp_path / "nope.parquet"), "--no-progress"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_default_data_is_the_flights_by_actual_departure_in_arrival_order():
    flights = default_flights()
    assert len(flights) == 336_776
    timed = flights[flights["departure"].notna()]
    assert len(timed) == 336_776 - 8_255  # cancelled flights have no departure delay
    first = timed.iloc[0]  # UA 1545 scheduled 05:15 EST on Jan 1st, 2 minutes late
    assert (first["carrier"], first["flight"]) == ("UA", 1545)
    assert first["departure"] == pd.Timestamp("2013-01-01 10:17", tz="UTC")


def test_replay_files_are_stamped_so_spark_takes_them_in_arrival_order(tmp_path):
    paths = [tmp_path / f"part-{number}.parquet" for number in range(5)]
    for path in reversed(paths):  # written last to first, within one clock tick
        path.write_bytes(b"")
    stamp_in_order(paths)
    by_mtime = sorted(paths, key=lambda p: p.stat().st_mtime_ns)
    assert by_mtime == paths
    assert all(p.stat().st_mtime <= time.time() for p in paths)


def test_report_defines_its_columns_rounds_distinct_counts_and_states_the_keys_plotted(tmp_path):
    from winagg.spark.pipeline import write_report

    rng = np.random.default_rng(3)
    carriers = [f"C{i}" for i in range(10)]  # more than the plot draws
    n = 400
    frame = pd.DataFrame({
        "carrier": rng.choice(carriers, n, p=np.linspace(1, 2, 10) / np.linspace(1, 2, 10).sum()),
        "departure": pd.Timestamp("2013-01-01", tz="UTC") + pd.to_timedelta(np.sort(rng.integers(0, 5 * 1440, n)), "min"),
        "dep_delay": rng.normal(10, 20, n).round(),
    })
    for suffix in ("1h", "1d"):
        frame[f"flights_{suffix}"] = rng.integers(1, 30, n)
        frame[f"mean_delay_{suffix}"] = rng.normal(10, 5, n)
        frame[f"max_delay_{suffix}"] = frame["dep_delay"]
        frame[f"std_delay_{suffix}"] = 1.0
        frame[f"tails_{suffix}"] = rng.uniform(1, 50, n)  # HyperLogLog estimates are fractional
    config = PipelineConfig(groupings=("carrier",))
    facts = {"input": "test", "rows": n, "master": "local", "seconds": 1.0, "dropped": 0}
    report = write_report({"carrier": frame}, config, tmp_path, facts).read_text()

    assert "- dep_delay: in minutes" in report
    table = [line for line in report.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    for name in header[1:]:  # every column is defined above the table
        assert f"- **{name}**: " in report
    medians = frame.groupby("carrier")["tails_1d"].median().round().astype(int)
    for line in table[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[-1] == f"{medians[cells[0]]:,}"  # a whole number, as counted by pandas here
        assert int(cells[1].replace(",", "")) == (frame["carrier"] == cells[0]).sum()
    assert (tmp_path / "by_carrier.png").read_bytes()[:8] == PNG_SIGNATURE


def test_plot_title_states_how_many_keys_it_draws(tmp_path, monkeypatch):
    import matplotlib.figure

    from winagg.spark import pipeline

    titles = []
    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle", lambda self, text, **kw: titles.append(text))
    frame = pd.DataFrame({"carrier": [f"C{i % 12}" for i in range(120)],
                          "departure": pd.date_range("2013-01-01", periods=120, freq="h", tz="UTC"),
                          "dep_delay": 1.0, "mean_delay_1d": 1.0, "max_delay_1h": 1.0, "tails_1d": 1.0})
    pipeline._plot(frame, "carrier", PipelineConfig(), tmp_path / "a.png", top=8)
    pipeline._plot(frame[frame["carrier"].isin(["C0", "C1"])], "carrier", PipelineConfig(), tmp_path / "b.png", top=8)
    assert "the 8 carriers with the most rows, of 12" in titles[0]
    assert "all 2 carriers" in titles[1]


def test_a_missing_input_is_reported_before_spark_starts(tmp_path, capsys):
    from pyspark.sql import SparkSession

    before = SparkSession.getActiveSession()
    assert main(["pipeline", "--input", str(tmp_path / "missing.csv"), "--output", str(tmp_path / "out"),
                 "--no-progress"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert SparkSession.getActiveSession() is before and not (tmp_path / "out").exists()


def test_remote_is_in_the_pipeline_help_and_excludes_master(capsys):
    from winagg.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["pipeline", "--help"])
    assert "--remote sc://HOST:PORT" in capsys.readouterr().out
    assert build_parser().parse_args(["pipeline", "--remote", "sc://h:15002"]).remote == "sc://h:15002"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["pipeline", "--remote", "sc://h:15002", "--master", "local[2]"])
    assert "not allowed with argument" in capsys.readouterr().err
