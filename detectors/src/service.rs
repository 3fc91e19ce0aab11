//! Service mode: one query per role (latency p50/p90/p99, request rate, error ratio, token
//! throughput), each yielding one series, judged together by the detect crate's
//! `judge_service`. Each role's band is written back with a `role` label; each finding becomes
//! an event whose explanation names what moved and what stayed under its threshold
//! ("hidden degradation: latency_p50 38% above expected for 25 min; latency_p99 within band,
//! under its threshold 2.5").
//!
//! `judge_service` scores with baselines (it takes no trained model): an `nbeats` service
//! detector uses the rolling median/MAD baseline, noted in `status.fallback`.

use std::collections::BTreeMap;

use sightline_detect::anomaly::{
    AnomalyReport, Direction, ServiceSeries, detect_continued, judge_service,
};
use sightline_storage::Store;

use super::events::{Observed, deviation_words, duration_words, series_key, severity};
use super::failure::RunFailure;
use super::grid::{GridSeries, Window, fetch, shifted};
use super::outcome::{Carried, Outcome, alert_stats, collect};
use super::registry::Detector;
use super::spec::{DetectorSpec, ModelKind, RoleSpec, signal_role};

struct Role<'a> {
    name: &'a str,
    spec: &'a RoleSpec,
    series: GridSeries,
}

pub(super) fn service(
    store: &Store,
    det: &Detector,
    spec: &DetectorSpec,
    w: Window,
    carried: &Carried,
) -> Result<Outcome, RunFailure> {
    let mut roles = Vec::new();
    for (name, r) in &spec.roles {
        let mut got = fetch(store, &det.tenant, &r.query, w)?;
        if got.len() != 1 {
            return Err(RunFailure::RoleNotOneSeries {
                role: name.clone(),
                got: got.len(),
            });
        }
        let series = got.remove(0);
        if series.values.is_empty() {
            return Err(RunFailure::RoleNoData {
                role: name.clone(),
                history: spec.history.clone(),
            });
        }
        roles.push(Role {
            name,
            spec: r,
            series,
        });
    }
    // Align every role on the common stretch of time.
    let start = roles
        .iter()
        .map(|r| r.series.start_ms)
        .max()
        .unwrap_or(w.start_ms);
    let end = roles
        .iter()
        .map(|r| r.series.start_ms + (r.series.values.len() as i64 - 1) * w.step_ms)
        .min()
        .unwrap_or(w.end_ms);
    if end < start {
        return Err(RunFailure::NoCommonRange);
    }
    for r in &mut roles {
        let from = ((start - r.series.start_ms) / w.step_ms) as usize;
        let to = ((end - r.series.start_ms) / w.step_ms) as usize;
        r.series.values = r.series.values[from..=to].to_vec();
        r.series.start_ms = start;
    }
    // Labels every role shares (e.g. service="chat") identify the events.
    let mut common = roles[0].series.labels.clone();
    common.retain(|k, v| roles.iter().all(|r| r.series.labels.get(k) == Some(v)));
    let volume = match &spec.volume_query {
        Some(q) => {
            let v = fetch(store, &det.tenant, q, w)?;
            let [v] = v.as_slice() else {
                return Err(RunFailure::ServiceVolume);
            };
            let shift = (start - v.start_ms) / w.step_ms;
            Some(shifted(&v.values, shift, roles[0].series.values.len()))
        }
        None => None,
    };
    let input: Vec<ServiceSeries> = roles
        .iter()
        .map(|r| ServiceSeries {
            name: r.name.to_owned(),
            role: signal_role(r.name).unwrap_or(sightline_detect::anomaly::SignalRole::Other),
            values: r.series.values.clone(),
            static_threshold: r.spec.threshold,
        })
        .collect();
    let base = spec.anomaly_config(spec.direction);
    let judged = judge_service(&input, volume.as_deref(), &base).map_err(RunFailure::Service)?;
    let mut out = Outcome::default();
    if spec.model.kind == ModelKind::Nbeats {
        out.fallbacks
            .push("service mode scores with baselines: used rolling median/MAD".into());
    }
    // Bands per role, written with a `role` label.
    let mut reports: BTreeMap<&str, AnomalyReport> = BTreeMap::new();
    for (r, s) in roles.iter().zip(&input) {
        let mut labels = r.series.labels.clone();
        labels.insert("role".into(), r.name.to_owned());
        let key = series_key(&labels);
        let cfg = spec.anomaly_config(s.role.bad_direction());
        let seen = carried.seen.get(&key).copied();
        let report =
            detect_continued(&s.values, volume.as_deref(), &cfg, None, seen).map_err(|source| {
                RunFailure::RoleScoring {
                    role: r.name.to_owned(),
                    source,
                }
            })?;
        let gs = GridSeries {
            labels: labels.clone(),
            start_ms: start,
            values: s.values.clone(),
        };
        let mut scratch = Outcome::default();
        let label = format!("{} {}", spec.name, r.name);
        collect(
            &mut scratch,
            spec,
            &gs,
            &report,
            &key,
            carried.written.get(&key).copied(),
            w.step_ms,
            &label,
        );
        out.writer = merge_writer(out.writer, scratch.writer);
        out.written.extend(scratch.written);
        out.ranges.extend(scratch.ranges);
        out.last_scored_ms = out.last_scored_ms.max(scratch.last_scored_ms);
        out.series += 1;
        reports.insert(r.name, report);
    }
    let key = series_key(&common);
    if let Some(first) = reports.values().next()
        && first.scored.start < input[0].values.len()
    {
        out.scored_from
            .insert(key.clone(), start + first.scored.start as i64 * w.step_ms);
    }
    let n = input[0].values.len();
    for f in &judged.findings {
        let mut parts = Vec::new();
        let mut sev: f64 = 0.0;
        let mut peak: f64 = 0.0;
        let mut direction = "above";
        for name in &f.moved {
            let (Some(report), Some(s)) = (
                reports.get(name.as_str()),
                input.iter().find(|s| &s.name == name),
            ) else {
                continue;
            };
            let st = alert_stats(&s.values, report, f.start, f.end);
            let verdict = judged.series.iter().find(|v| &v.name == name);
            let p = verdict
                .map(|v| {
                    v.alerts
                        .iter()
                        .filter(|a| a.start <= f.end && a.end >= f.start)
                        .map(|a| a.peak_score)
                        .fold(0.0, f64::max)
                })
                .unwrap_or(0.0);
            peak = peak.max(p);
            sev = sev.max(severity(p, st.excess));
            if parts.is_empty() {
                direction = match s.role.bad_direction() {
                    Direction::Below => "below",
                    Direction::Above => "above",
                    Direction::Both if st.actual >= st.expected => "above",
                    Direction::Both => "below",
                };
            }
            parts.push(format!(
                "{name} {}",
                deviation_words(st.actual, st.expected)
            ));
        }
        let dur = (f.end as i64 - f.start as i64 + 1) * w.step_ms;
        let mut text = format!("{} for {}", parts.join(", "), duration_words(dur));
        for name in &f.under_threshold {
            if !f.moved.contains(name) {
                let th = spec
                    .roles
                    .get(name)
                    .and_then(|r| r.threshold)
                    .unwrap_or(f64::NAN);
                text.push_str(&format!("; {name} within band, under its threshold {th}"));
            }
        }
        for name in &f.over_threshold {
            let th = spec
                .roles
                .get(name)
                .and_then(|r| r.threshold)
                .unwrap_or(f64::NAN);
            text.push_str(&format!("; {name} over its threshold {th}"));
        }
        let kind = serde_json::to_value(f.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        let prefix = match kind.as_deref() {
            Some("hidden_degradation") => "hidden degradation: ",
            _ => "degradation: ",
        };
        // A finding is over once every series has been quiet for the recovery period.
        let closed = f.end + spec.sustain.recovery < n;
        out.observed.push(Observed {
            key: key.clone(),
            labels: common.clone(),
            start_ms: start + f.start as i64 * w.step_ms,
            last_ms: start + f.end as i64 * w.step_ms,
            closed,
            severity: sev,
            direction: direction.into(),
            peak_score: peak,
            explanation: format!("{prefix}{text}"),
            moved: f.moved.clone(),
            kind,
        });
    }
    Ok(out)
}

fn merge_writer(
    mut a: super::writeback::Writer,
    b: super::writeback::Writer,
) -> super::writeback::Writer {
    a.append(b);
    a
}
