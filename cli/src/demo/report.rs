//! Findings next to the truth: which injected incidents the detectors flagged and how early or
//! late, the anomalies that match no incident (false alarms), and the Granger edges from
//! quality to KPIs with their lags. The same numbers are printed and written as
//! `demo-findings.json` next to `demo-truth.json`.

use serde::Serialize;
use serde_json::Value;

use super::incidents::Truth;

/// Minutes after an incident's end during which an anomaly still counts as detecting it (the
/// detectors judge 5-minute rates and sustained windows, so they recover late).
pub const GRACE_MIN: i64 = 20;

/// One detector the demo creates, and the incident it watches.
#[derive(Clone, Debug, Serialize)]
pub struct DemoDetector {
    /// Detector name.
    pub name: String,
    /// Incident id it is meant to catch.
    pub incident: &'static str,
    /// PromQL.
    pub query: String,
    /// `above`, `below` or `both`.
    pub direction: &'static str,
}

/// An anomaly event as the API returns it (the fields the report uses).
#[derive(Clone, Debug, Serialize)]
pub struct Anomaly {
    /// Detector.
    pub detector: String,
    /// Start, ms.
    pub start_ms: i64,
    /// End, ms (`None`: ongoing).
    pub end_ms: Option<i64>,
    /// Severity level.
    pub level: String,
}

impl Anomaly {
    /// Parses one element of `/api/v1/anomalies`' `anomalies`.
    pub fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            detector: v.get("detector")?.as_str()?.to_owned(),
            start_ms: v.get("start_ms")?.as_i64()?,
            end_ms: v.get("end_ms").and_then(Value::as_i64),
            level: v
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        })
    }
}

/// Whether and when one incident was detected.
#[derive(Clone, Debug, Serialize)]
pub struct IncidentFinding {
    /// Incident id.
    pub incident: String,
    /// Detected by at least one of its detectors.
    pub detected: bool,
    /// Minutes from the incident's start to the first matching anomaly (negative: early).
    pub delay_min: Option<f64>,
    /// Detectors that flagged it.
    pub by: Vec<String>,
}

/// A Granger edge as measured.
#[derive(Clone, Debug, Serialize)]
pub struct EdgeFinding {
    /// Cause query.
    pub cause: String,
    /// Effect query.
    pub effect: String,
    /// Lag chosen by BIC (steps).
    pub lag_bic: Option<usize>,
    /// Lag chosen by AIC (steps).
    pub lag_aic: Option<usize>,
    /// F-test p-value at the BIC lag.
    pub p_value: Option<f64>,
    /// The injected lag (steps), when the edge is in the truth.
    pub expected_lag: Option<usize>,
    /// Error text when the test could not run.
    pub error: Option<String>,
}

/// Everything the demo found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Findings {
    /// Whether the detectors API was available.
    pub detectors_available: bool,
    /// Detector states at the end (`name: state`).
    pub detector_states: Vec<(String, String)>,
    /// Per incident.
    pub incidents: Vec<IncidentFinding>,
    /// Anomalies that overlap no incident window of their detector.
    pub false_alarms: Vec<Anomaly>,
    /// Granger edges.
    pub edges: Vec<EdgeFinding>,
}

/// Matches anomalies to incidents through each detector's assigned incident.
pub fn score(truth: &Truth, detectors: &[DemoDetector], anomalies: &[Anomaly], f: &mut Findings) {
    let grace = GRACE_MIN * 60_000;
    for inc in &truth.incidents {
        let mut first: Option<i64> = None;
        let mut by = Vec::new();
        for a in anomalies {
            let Some(d) = detectors.iter().find(|d| d.name == a.detector) else {
                continue;
            };
            let end = a.end_ms.unwrap_or(i64::MAX);
            if d.incident == inc.id && a.start_ms <= inc.end_ms + grace && end >= inc.start_ms {
                first = Some(first.map_or(a.start_ms, |x| x.min(a.start_ms)));
                if !by.contains(&d.name) {
                    by.push(d.name.clone());
                }
            }
        }
        f.incidents.push(IncidentFinding {
            incident: inc.id.to_owned(),
            detected: first.is_some(),
            delay_min: first.map(|t| (t - inc.start_ms) as f64 / 60_000.0),
            by,
        });
    }
    f.false_alarms = anomalies
        .iter()
        .filter(|a| {
            let end = a.end_ms.unwrap_or(i64::MAX);
            !truth
                .incidents
                .iter()
                .any(|inc| a.start_ms <= inc.end_ms + grace && end >= inc.start_ms - grace)
        })
        .cloned()
        .collect();
}

/// Renders the findings next to the truth.
pub fn render(truth: &Truth, f: &Findings) -> String {
    let mut out = String::new();
    let fmt_t = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default()
    };
    out.push_str("\nInjected incidents and what Sightline found\n");
    out.push_str(&format!(
        "  {:<22} {:<17} {:>6}  {:<9} {:>10}  {}\n",
        "incident", "start (UTC)", "min", "detected", "delay min", "by detector"
    ));
    for inc in &truth.incidents {
        let found = f.incidents.iter().find(|x| x.incident == inc.id);
        let (det, delay, by) = match found {
            Some(x) if x.detected => (
                "yes",
                x.delay_min.map(|d| format!("{d:+.0}")).unwrap_or_default(),
                x.by.join(", "),
            ),
            Some(_) if !f.detectors_available => ("n/a", String::new(), String::new()),
            Some(_) => ("NO", String::new(), String::new()),
            None => ("n/a", String::new(), String::new()),
        };
        out.push_str(&format!(
            "  {:<22} {:<17} {:>6}  {:<9} {:>10}  {}\n",
            inc.id,
            fmt_t(inc.start_ms),
            (inc.end_ms - inc.start_ms) / 60_000,
            det,
            delay,
            by
        ));
    }
    if !f.detectors_available {
        out.push_str("  (the detectors API is not available in this build: nothing was scored)\n");
    }
    out.push_str(&format!(
        "  false alarms (anomalies more than {GRACE_MIN} min from any incident): {}\n",
        f.false_alarms.len()
    ));
    let mut per: Vec<(&str, usize)> = Vec::new();
    for a in &f.false_alarms {
        match per.iter_mut().find(|(d, _)| *d == a.detector) {
            Some((_, n)) => *n += 1,
            None => per.push((&a.detector, 1)),
        }
    }
    if !per.is_empty() {
        let list: Vec<String> = per.iter().map(|(d, n)| format!("{d} {n}")).collect();
        out.push_str(&format!("    by detector: {}\n", list.join(", ")));
    }
    out.push_str("\nGranger causality, quality -> KPI (step 60 s)\n");
    out.push_str(&format!(
        "  {:<56} {:<22} {:>8} {:>8} {:>10}\n",
        "cause", "effect", "lag BIC", "injected", "p"
    ));
    for e in &f.edges {
        let p = e
            .p_value
            .map(|p| {
                if p < 1e-300 {
                    "<1e-300".to_owned()
                } else {
                    format!("{p:.2e}")
                }
            })
            .unwrap_or_else(|| e.error.clone().unwrap_or_default());
        out.push_str(&format!(
            "  {:<56} {:<22} {:>8} {:>8} {:>10}\n",
            e.cause,
            e.effect,
            e.lag_bic.map(|l| l.to_string()).unwrap_or_default(),
            e.expected_lag
                .map(|l| l.to_string())
                .unwrap_or_else(|| "-".into()),
            p
        ));
    }
    out
}
