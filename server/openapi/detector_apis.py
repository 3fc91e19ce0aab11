"""Paths and schemas of the anomaly detector API for the OpenAPI document (see generate.py)."""
D = "See docs/detectors.md."
def _ref(n): return {"$ref": f"#/components/schemas/{n}"}
def _json(schema): return {"content": {"application/json": {"schema": schema}}}
_err = _json(_ref("Error"))
_name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]{0,63}$"}}
def _q(name, desc, typ="string"): return {"name": name, "in": "query", "required": False, "description": desc, "schema": {"type": typ}}
_example = {"name": "chat_latency_p50", "query": "histogram_quantile(0.5, sum by (le) (rate(http_server_duration_bucket{service=\"chat\"}[5m])))",
            "step": "60s", "history": "7d", "model": {"kind": "seasonal_naive", "season": 1440}, "direction": "above", "alpha": 0.01,
            "sustain": {"window": 5, "min_points": 4, "recovery": 3}}
schemas = {
    "DetectorSpec": {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "name": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]{0,63}$"},
        "query": {"type": "string", "description": "PromQL; one model per returned series (required unless mode is service)"},
        "step": {"type": "string", "default": "60s"}, "history": {"type": "string", "default": "7d"},
        "horizon": {"type": "integer", "default": 24}, "lookback": {"type": "integer", "default": 168},
        "model": {"type": "object", "required": ["kind"], "additionalProperties": False, "properties": {
            "kind": {"type": "string", "enum": ["nbeats", "seasonal_naive", "zscore", "median_mad"]},
            "season": {"type": "integer"}, "window": {"type": "integer"}, "calibration_window": {"type": "integer"}, "exclude_breaches": {"type": "boolean"}, "calibration": {"type": "string", "enum": ["rolling", "robust"]},
            "epochs": {"type": "integer"}, "width": {"type": "integer"}, "stacks": {"type": "integer"}, "layers": {"type": "integer"},
            "batch_size": {"type": "integer"}, "learning_rate": {"type": "number"}, "patience": {"type": "integer"},
            "forecast_origin": {"type": "integer", "minimum": 1, "description": "N-BEATS: compare each point with the forecast made this many steps before it (1..=horizon) [1]"},
            "seed": {"type": "integer"}}},
        "direction": {"type": "string", "enum": ["above", "below", "both"], "default": "both"},
        "alpha": {"type": "number", "default": 0.01},
        "sustain": {"type": "object", "properties": {"window": {"type": "integer", "default": 5}, "min_points": {"type": "integer", "default": 4}, "recovery": {"type": "integer", "default": 3}}},
        "min_volume": {"type": ["number", "null"]}, "volume_query": {"type": "string"},
        "retrain_every": {"type": "string", "default": "24h"}, "max_series": {"type": "integer", "default": 100},
        "mode": {"type": "string", "enum": ["single", "service"], "default": "single"},
        "roles": {"type": "object", "additionalProperties": {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}, "threshold": {"type": "number"}}},
                  "description": "service mode: latency_p50, latency_p90, latency_p99, request_rate, error_ratio, token_throughput"},
        "description": {"type": "string"}}},
    "DetectorStatus": {"type": "object", "properties": {
        "state": {"type": "string", "enum": ["pending", "training", "ready", "failed"]},
        "progress": {"type": ["object", "null"], "properties": {"series_done": {"type": "integer"}, "series_total": {"type": "integer"}, "epoch": {"type": "integer"}, "epochs": {"type": "integer"}, "train_loss": {"type": ["number", "null"]}, "val_loss": {"type": ["number", "null"]}}},
        "last_trained_ms": {"type": ["integer", "null"]}, "last_scored_ms": {"type": ["integer", "null"]}, "series": {"type": "integer"},
        "error": {"type": ["string", "null"]}, "fallback": {"type": ["string", "null"]}}},
    "Detector": {"allOf": [_ref("DetectorSpec"), {"type": "object", "properties": {"status": _ref("DetectorStatus")}}]},
    "Anomaly": {"type": "object", "properties": {
        "id": {"type": "string"}, "detector": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "start_ms": {"type": "integer"}, "end_ms": {"type": ["integer", "null"]}, "severity": {"type": "number", "minimum": 0, "maximum": 1},
        "level": {"type": "string", "enum": ["low", "medium", "high"]}, "direction": {"type": "string", "enum": ["above", "below"]},
        "peak_score": {"type": "number"}, "explanation": {"type": "string"},
        "moved": {"type": "array", "items": {"type": "string"}}, "kind": {"type": "string", "enum": ["hidden_degradation", "visible_degradation"]}}},
    "Annotation": {"type": "object", "properties": {"time": {"type": "integer"}, "timeEnd": {"type": "integer"}, "title": {"type": "string"}, "text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}},
}
paths = {
    "/api/v1/detectors": {
        "get": {"tags": ["detectors"], "summary": "The tenant's detectors with their status", "description": D,
                "responses": {"200": {"description": "Detectors", **_json({"type": "object", "properties": {"detectors": {"type": "array", "items": _ref("Detector")}}})}, "401": {"description": "Unauthorized", **_err}}},
        "post": {"tags": ["detectors"], "summary": "Create a detector (trained and scored in the background)", "description": D,
                 "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("DetectorSpec"), "example": _example}}},
                 "responses": {"201": {"description": "Created", **_json(_ref("Detector"))}, "400": {"description": "Invalid definition", **_err}, "401": {"description": "Unauthorized", **_err}, "409": {"description": "Name exists", **_err}}}},
    "/api/v1/detectors/{name}": {
        "get": {"tags": ["detectors"], "summary": "One detector", "description": D, "parameters": [_name],
                "responses": {"200": {"description": "The detector", **_json(_ref("Detector"))}, "404": {"description": "No such detector", **_err}}},
        "put": {"tags": ["detectors"], "summary": "Create or replace a detector (keeps its events, retrains)", "description": D, "parameters": [_name],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("DetectorSpec")}}},
                "responses": {"200": {"description": "Replaced", **_json(_ref("Detector"))}, "201": {"description": "Created", **_json(_ref("Detector"))}, "400": {"description": "Invalid definition", **_err}}},
        "delete": {"tags": ["detectors"], "summary": "Delete a detector and its events (written series remain)", "description": D, "parameters": [_name],
                   "responses": {"200": {"description": "Deleted"}, "404": {"description": "No such detector", **_err}}}},
    "/api/v1/detectors/{name}/run": {
        "post": {"tags": ["detectors"], "summary": "Train and score now", "description": D, "parameters": [_name],
                 "responses": {"202": {"description": "Queued"}, "404": {"description": "No such detector", **_err}, "503": {"description": "Scheduler disabled", **_err}}}},
    "/api/v1/anomalies": {
        "get": {"tags": ["detectors"], "summary": "Anomaly events, newest first", "description": D,
                "parameters": [_q("detector", "only this detector's"), _q("start", "RFC 3339, Unix seconds or Unix ms"), _q("end", "RFC 3339, Unix seconds or Unix ms"), _q("limit", "1..10000, default 1000", "integer")],
                "responses": {"200": {"description": "Events", **_json({"type": "object", "properties": {"anomalies": {"type": "array", "items": _ref("Anomaly")}}})}, "400": {"description": "Bad parameter", **_err}}}},
    "/api/v1/annotations": {
        "get": {"tags": ["detectors"], "summary": "Anomaly events as Grafana annotations", "description": D,
                "parameters": [_q("detector", "only this detector's"), _q("start", "RFC 3339, Unix seconds or Unix ms"), _q("end", "RFC 3339, Unix seconds or Unix ms"), _q("limit", "1..10000", "integer")],
                "responses": {"200": {"description": "Annotations", **_json({"type": "array", "items": _ref("Annotation")})}, "400": {"description": "Bad parameter", **_err}}}},
}
