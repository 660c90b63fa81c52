"""Thread scaling of winagg.rolling against bottleneck (one series) and of by= (keyed), interleaved."""
import json, os, platform, sys, time
import numpy as np
import bottleneck as bn
import winagg

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000_000
REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else 5
THREADS = [t for t in (1, 2, 4, 8, 16) if t <= len(os.sched_getaffinity(0))]
rng = np.random.default_rng(7)
x = rng.normal(100.0, 10.0, N)
BN = {"sum": bn.move_sum, "mean": bn.move_mean, "max": bn.move_max, "min": bn.move_min,
      "std": lambda a, w, min_count: bn.move_std(a, w, min_count=min_count, ddof=1)}
out = {"cpus": len(os.sched_getaffinity(0)), "cpu": platform.processor() or platform.machine(), "rows": N,
       "numba": __import__("numba").__version__, "numpy": np.__version__, "load": os.getloadavg()[0]}
try:
    out["cpu"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
except Exception:
    pass
print(json.dumps(out), flush=True)
series = []
for agg, move in BN.items():
    for w in (100, 10_000):
        ref = move(x[:20000], w, min_count=1)
        got = winagg.rolling(x[:20000], w, agg, threads=2)  # compile
        assert np.allclose(got, ref, rtol=1e-9, atol=1e-9, equal_nan=True)
        times = {"bottleneck": []} | {t: [] for t in THREADS}
        for _ in range(REPEAT):
            s = time.perf_counter(); move(x, w, min_count=1); times["bottleneck"].append(time.perf_counter() - s)
            for t in THREADS:
                s = time.perf_counter(); winagg.rolling(x, w, agg, threads=t); times[t].append(time.perf_counter() - s)
        med = {k: float(np.median(v)) for k, v in times.items()}
        row = dict(agg=agg, window=w, bottleneck_s=med["bottleneck"],
                   **{f"t{t}_s": med[t] for t in THREADS}, **{f"t{t}_ratio": med["bottleneck"] / med[t] for t in THREADS})
        series.append(row)
        print(agg, w, " ".join(f"t{t}={row[f't{t}_ratio']:.2f}x" for t in THREADS), f"bn={med['bottleneck']*1e3:.1f}ms", flush=True)
keyed = []
n, k = 2_000_000, 10_000
keys = rng.integers(0, k, n)
vals = rng.normal(100.0, 10.0, n)
ts = np.datetime64("2024-01-01", "ns") + np.cumsum(rng.exponential(3.6e12 / (100 * k), n).astype(np.int64)).astype("timedelta64[ns]")
for label, kw in (("rows100", dict(window=100)), ("1h", dict(window="1h", times=ts))):
    small = {k: (v[:5000] if k == "times" else v) for k, v in kw.items()}
    winagg.rolling(vals[:5000], agg="mean", by=keys[:5000], **small)
    times = {t: [] for t in THREADS}
    for _ in range(REPEAT):
        for t in THREADS:
            s = time.perf_counter(); winagg.rolling(vals, agg="mean", by=keys, threads=t, **kw); times[t].append(time.perf_counter() - s)
    row = dict(case=label, **{f"t{t}_s": float(np.median(v)) for t, v in times.items()})
    keyed.append(row)
    print("keyed mean", label, " ".join(f"t{t}={row[f't{t}_s']*1e3:.1f}ms" for t in THREADS), flush=True)
out.update(series=series, keyed=keyed, load_end=os.getloadavg()[0])
with open(os.path.join(os.environ.get("OUT", "/tmp"), "scaling.json"), "w") as f:
    json.dump(out, f, indent=1)
