"""AutoETS forecasts for the forecast_eval example (peer comparison).

Reads JSON from argv[1]: {"season": m, "horizon": H, "series": [{"name", "values", "origins"}]}
and prints JSON {"forecasts": [[[...H values] per origin] per series]} to stdout. Each origin's
model is fitted on values[:origin] only. Metrics are computed by the Rust side.
"""
import json
import sys

import numpy as np
from statsforecast.models import AutoETS


def main() -> None:
    with open(sys.argv[1]) as f:
        req = json.load(f)
    season, horizon = int(req["season"]), int(req["horizon"])
    out = []
    for s in req["series"]:
        y = np.asarray(s["values"], dtype=float)
        per = []
        for o in s["origins"]:
            model = AutoETS(season_length=season)
            fc = model.forecast(y=y[:o], h=horizon)["mean"]
            per.append([float(v) for v in fc])
        out.append(per)
    json.dump({"forecasts": out}, sys.stdout)


if __name__ == "__main__":
    main()
