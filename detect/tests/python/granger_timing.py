"""Time statsmodels grangercausalitytests on a workload written by
examples/granger_vs_statsmodels.rs, and write its results back for comparison.

usage: granger_timing.py IN.f64 PAIRS POINTS MAX_LAG OUT.f64
IN holds PAIRS x 2 x POINTS little-endian float64 (cause row, then effect row, per pair).
OUT receives PAIRS x MAX_LAG x 8 float64: per lag F, p of ssr_ftest, chi2, p of
ssr_chi2test, chi2, p of lrtest, F, p of params_ftest. Prints {"seconds": ...} (time spent in
grangercausalitytests only; loading and writing excluded).
"""

import json
import sys
import time
import warnings

import numpy as np
from statsmodels.tsa.stattools import grangercausalitytests


def main():
    src, pairs, points, max_lag, dst = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    warnings.simplefilter("ignore")
    data = np.fromfile(src, dtype="<f8").reshape(pairs, 2, points)
    out = np.full((pairs, max_lag, 8), np.nan)
    start = time.perf_counter()
    results = []
    for i in range(pairs):
        cause, effect = data[i, 0], data[i, 1]
        results.append(grangercausalitytests(np.column_stack([effect, cause]), max_lag))
    seconds = time.perf_counter() - start
    for i, res in enumerate(results):
        for lag in range(1, max_lag + 1):
            r = res[lag][0]
            out[i, lag - 1] = [r["ssr_ftest"][0], r["ssr_ftest"][1], r["ssr_chi2test"][0], r["ssr_chi2test"][1],
                               r["lrtest"][0], r["lrtest"][1], r["params_ftest"][0], r["params_ftest"][1]]
    out.astype("<f8").tofile(dst)
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main()
