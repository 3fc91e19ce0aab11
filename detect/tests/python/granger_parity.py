"""Reference results for the Granger / ADF parity test (detect/tests/integration/statsmodels_parity.rs).

Builds deterministic datasets (random, autocorrelated AR, causal by construction,
near-collinear, short, badly scaled, random walks), runs statsmodels
`grangercausalitytests(np.column_stack([effect, cause]), max_lag)` and
`adfuller(series)` (defaults: regression="c", autolag="AIC") on each, and writes datasets and
results as JSON to the path given as the first argument. Errors raised by statsmodels are
recorded too, so the Rust side can check that it refuses the same inputs.
"""

import json
import sys
import warnings

import numpy as np
import scipy
import statsmodels
from statsmodels.tsa.stattools import adfuller, grangercausalitytests


def ar(rng, n, phi, scale=1.0):
    e = rng.standard_normal(n) * scale
    x = np.zeros(n)
    for t in range(n):
        x[t] = (phi * x[t - 1] if t else 0.0) + e[t]
    return x


def causal(rng, n, lag, strength, phi=0.4):
    x = ar(rng, n, 0.3)
    e = rng.standard_normal(n)
    y = np.zeros(n)
    for t in range(n):
        y[t] = (phi * y[t - 1] if t else 0.0) + (strength * x[t - lag] if t >= lag else 0.0) + e[t]
    return x, y


def datasets():
    out = []

    def add(kind, name, cause, effect, max_lag, reference="raw"):
        out.append({"kind": kind, "name": name, "cause": list(map(float, cause)),
                    "effect": list(map(float, effect)), "max_lag": int(max_lag),
                    "reference": reference})

    rng = np.random.default_rng(20261129)
    for i, n in enumerate([40, 60, 100, 150, 250, 400, 800, 1500]):
        add("random", f"random_n{n}", rng.standard_normal(n), rng.standard_normal(n), 1 + i % 5)
    for i, (phi_x, phi_y) in enumerate([(0.5, 0.5), (0.9, 0.2), (0.95, 0.95), (-0.6, 0.7), (0.99, 0.3)]):
        n = 120 + 80 * i
        add("autocorrelated", f"ar_{phi_x}_{phi_y}", ar(rng, n, phi_x), ar(rng, n, phi_y), 3 + i % 3)
    for i, (lag, strength, n) in enumerate([(1, 0.3, 200), (2, 0.8, 300), (3, 1.5, 500), (1, 3.0, 1000),
                                             (4, 0.15, 400), (2, 5.0, 2000)]):
        x, y = causal(rng, n, lag, strength)
        add("causal", f"causal_lag{lag}_s{strength}_n{n}", x, y, max(lag + 1, 4))
    for i, eps in enumerate([1e-1, 1e-2, 1e-3, 1e-4]):
        n = 200
        x = ar(rng, n + 1, 0.7)
        # cause is (almost) the effect one step ahead: cause lags ~ effect lags shifted
        y = x[:-1] + eps * rng.standard_normal(n)
        add("near_collinear", f"lead_eps{eps:g}", x[1:], y, 3)
    x = rng.standard_normal(150)
    add("near_collinear", "scaled_copy", x, 2.0 * x + 1e-3 * rng.standard_normal(150), 2)
    for n, lag in [(5, 1), (8, 2), (11, 3), (14, 4), (20, 6), (26, 8)]:
        add("short", f"short_n{n}_lag{lag}", rng.standard_normal(n), ar(rng, n, 0.5), lag)
    # With a 1e6 offset statsmodels' own ssr-based statistics lose ~8 digits to cancellation
    # (its ssr_ftest and params_ftest then disagree by 1.2e-8 relative). Both tests include a
    # constant, so they are invariant to shifting a series: the reference is computed on the
    # mean-removed series, where statsmodels is accurate; the Rust side gets the raw series.
    add("scaled", "offset_1e6", 1e6 + rng.standard_normal(300), 5e3 + 1e-2 * ar(rng, 300, 0.6), 4,
        reference="centered")
    add("scaled", "tiny_1e-6", 1e-6 * rng.standard_normal(300), 1e-6 * ar(rng, 300, 0.2), 3)
    for i in range(3):
        n = 300 + 200 * i
        add("random_walk", f"walks_{i}", np.cumsum(rng.standard_normal(n)), np.cumsum(rng.standard_normal(n)), 2 + i)
    t = np.arange(400, dtype=float)
    add("trend", "trend_plus_noise", 0.05 * t + rng.standard_normal(400), 0.02 * t + ar(rng, 400, 0.5), 4)
    # degenerate inputs that statsmodels refuses; the Rust side must refuse them as well
    add("degenerate", "too_short", rng.standard_normal(7), rng.standard_normal(7), 2)
    add("degenerate", "constant_cause", np.full(50, 3.0), rng.standard_normal(50), 2)
    return out


def triple(v):
    return [float(x) if isinstance(x, (float, np.floating)) else int(x) for x in v]


def prepared(d, series):
    s = np.asarray(series)
    return s - s.mean() if d["reference"] == "centered" else s


def run_granger(d):
    x = np.column_stack([prepared(d, d["effect"]), prepared(d, d["cause"])])
    try:
        res = grangercausalitytests(x, d["max_lag"])
    except Exception as exc:  # recorded, compared as "both refuse"
        return {"error": f"{type(exc).__name__}: {exc}"}
    lags = []
    for lag in sorted(res):
        r = res[lag][0]
        lags.append({
            "lag": int(lag),
            "ssr_ftest": triple(r["ssr_ftest"]),
            "ssr_chi2test": triple(r["ssr_chi2test"]),
            "lrtest": triple(r["lrtest"]),
            "params_ftest": triple(r["params_ftest"]),
        })
    return {"lags": lags}


def run_adf(series):
    try:
        r = adfuller(np.asarray(series), result_object=True)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"statistic": float(r.statistic), "pvalue": float(r.pvalue), "usedlag": int(r.lags),
            "nobs": int(r.nobs), "icbest": float(r.icbest),
            "critical_values": {k: float(v) for k, v in r.critical_values.items()}}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: granger_parity.py OUT.json")
    warnings.simplefilter("ignore")
    results = []
    for d in datasets():
        d["granger"] = run_granger(d)
        d["adf"] = {"cause": run_adf(prepared(d, d["cause"])), "effect": run_adf(prepared(d, d["effect"]))}
        results.append(d)
    doc = {"versions": {"numpy": np.__version__, "scipy": scipy.__version__,
                        "statsmodels": statsmodels.__version__, "python": sys.version.split()[0]},
           "datasets": results}
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
