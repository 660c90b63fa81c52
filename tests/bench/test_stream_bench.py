"""winagg bench stream: its source files and the figures it reads from Spark's progress reports."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from winagg.bench import stream


def test_the_source_is_one_file_per_micro_batch_in_arrival_order_each_event_near_its_place(tmp_path):
    folder = stream.write_source(tmp_path / "src", events=1000, keys=4, hours=2, files=4, jitter_seconds=30)
    paths = sorted(folder.glob("*.parquet"))
    assert len(paths) == 4
    assert [p.stat().st_mtime_ns for p in paths] == sorted(p.stat().st_mtime_ns for p in paths)
    table = pd.concat([pq.read_table(p).to_pandas() for p in paths], ignore_index=True)
    assert len(table) == 1000 and set(table["key"]) <= {0, 1, 2, 3}
    seconds = (table["ts"] - pd.Timestamp("2024-01-01", tz="UTC")).dt.total_seconds().to_numpy()
    place = np.arange(1000) * 2 * 3600 / 1000  # event i's place in time order: i * 7.2 s
    assert np.abs(seconds - place).max() <= 30


def test_batch_figures_are_medians_over_the_micro_batches_that_read_events():
    progress = [
        {"numInputRows": 10, "durationMs": {"triggerExecution": 900, "addBatch": 600},
         "stateOperators": [{"commitTimeMs": 300}, {"commitTimeMs": 20}]},
        {"numInputRows": 10, "durationMs": {"triggerExecution": 500, "addBatch": 450},
         "stateOperators": [{"commitTimeMs": 100}]},
        {"numInputRows": 10, "durationMs": {"triggerExecution": 700, "addBatch": 400},
         "stateOperators": [{"commitTimeMs": 200}]},
        {"numInputRows": 0, "durationMs": {"triggerExecution": 5000, "addBatch": 4500},
         "stateOperators": [{"commitTimeMs": 4000}]},
    ]
    assert stream.batch_figures(progress) == {"trigger_ms": 700, "query_ms": 450, "commit_ms": 200}
    assert stream.batch_figures([]) == {"trigger_ms": 0.0, "query_ms": 0.0, "commit_ms": 0.0}


def test_hopping_is_compared_with_the_native_run_of_its_key_count_and_slide():
    table = [dict(keys=16, slide="1 minute", method="native", seconds=12.0, state_bytes_per_key=4000.0),
             dict(keys=16, slide="1 minute", method="hopping", seconds=3.0, state_bytes_per_key=1000.0),
             dict(keys=16, slide="1 hour", method="hopping", seconds=2.0, state_bytes_per_key=10.0),
             dict(keys=16, slide="per event", method="per_event", seconds=9.0, state_bytes_per_key=5.0)]
    stream._ratios(table)
    assert table[1]["speedup_vs_native"] == 4.0 and table[1]["state_vs_native"] == 0.25
    assert "speedup_vs_native" not in table[2] and "speedup_vs_native" not in table[3]
