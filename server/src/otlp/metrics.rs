//! OTLP metrics to series and samples, following the OpenTelemetry-to-Prometheus
//! compatibility rules (specification "Prometheus and OpenMetrics Compatibility").
//!
//! * **Names**: characters outside `[a-zA-Z0-9_:]` become `_`, runs of `_` collapse, a leading
//!   digit gets a `_` prefix; the unit is appended as a word (`s` -> `_seconds`, `By` ->
//!   `_bytes`, `1` on a gauge -> `_ratio`, `{packets}` annotations dropped, `m/s` ->
//!   `_meters_per_second`) unless the name already ends with it; monotonic sums get `_total`.
//! * **Labels**: data point attributes, names sanitised the same way (leading digit -> `key_`
//!   prefix); attributes that collide after sanitising are joined with `;` in key order.
//!   Resource: `job` = `service.namespace/service.name` (or `service.name`), `instance` =
//!   `service.instance.id`; the other resource attributes go to one `target_info` gauge
//!   (value 1) per resource, carrying `job`/`instance` for joins (the Prometheus convention,
//!   chosen over copying every resource attribute onto every series, which would multiply
//!   cardinality). Scope: `otel_scope_name`, `otel_scope_version`.
//! * **Types**: monotonic sum -> counter `<name>_total`; gauge and non-monotonic sum -> gauge;
//!   histogram -> `<name>_bucket{le}` (cumulative, `le="+Inf"` = count), `<name>_sum` (when
//!   sent), `<name>_count`; summary -> `<name>{quantile}`, `<name>_sum`, `<name>_count`.
//! * **Exponential histograms** become explicit `le` buckets: with `base = 2^(2^-scale)`,
//!   positive bucket `i` covers `(base^i, base^(i+1)]` and gets `le = base^(i+1)`; negative
//!   bucket `i` covers `[-base^(i+1), -base^i)` and gets `le = -base^i`; the zero bucket gets
//!   `le = zero_threshold`. Buckets are ordered from the most negative up and made cumulative;
//!   `le="+Inf"` is the count.
//! * **Delta temporality** is stored sample for sample (no server-side accumulation, so a
//!   retried request cannot double count), on the same names with the extra label
//!   `__temporality__="delta"` (as Prometheus' native delta ingestion does): use
//!   `sum_over_time`, not `rate`, on those.
//! * **Points**: timestamps in milliseconds (floored); `time_unix_nano` zero or more than
//!   `max_future_skew_secs` ahead rejects the point; the `NO_RECORDED_VALUE` flag stores
//!   Prometheus' stale marker. Exemplars and metric metadata are not stored.

use std::collections::HashSet;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, ExponentialHistogramDataPoint, HistogramDataPoint, Metric,
    NumberDataPoint, SummaryDataPoint, metric::Data, number_data_point,
};
use sightline_storage::{AttrValue, MetricBatch, MetricKind, Sample, SeriesDef, SeriesId};

pub mod names;

pub use names::{
    format_float, metric_name, sanitize_label_name, sanitize_metric_name, unit_suffix,
};

use super::attributes::convert_attributes;
use super::{ItemError, MapContext, Mapped, RejectReason};

/// Prometheus' stale marker (a NaN with a fixed bit pattern).
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;
/// Most buckets of one histogram point.
pub const MAX_BUCKETS: usize = 4096;
/// The label marking delta-temporality series.
pub const TEMPORALITY_LABEL: &str = "__temporality__";

type Labels = Vec<(String, String)>;

/// Number of data points in a request.
pub fn count_points(req: &ExportMetricsServiceRequest) -> usize {
    req.resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .map(points_of)
        .sum()
}

/// Sanitised labels from attributes; collisions joined with `;` in key order.
fn attribute_labels(attrs: &[(String, AttrValue)]) -> Labels {
    let mut raw: Vec<(String, &str, String)> = attrs
        .iter()
        .map(|(k, v)| (sanitize_label_name(k), k.as_str(), v.render()))
        .collect();
    raw.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    let mut out: Labels = Vec::with_capacity(raw.len());
    for (name, _, value) in raw {
        match out.last_mut() {
            Some(last) if last.0 == name => {
                last.1.push(';');
                last.1.push_str(&value);
            }
            _ => out.push((name, value)),
        }
    }
    out
}

/// Labels every series of a resource+scope carries, and the resource's `target_info` labels.
struct Common {
    labels: Labels,
    target_info: Option<Labels>,
}

fn common_labels(resource: &[(String, AttrValue)], scope: Option<&InstrumentationScope>) -> Common {
    let get = |k: &str| {
        resource
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.render())
    };
    let mut labels: Labels = Vec::new();
    let job = match (get("service.namespace"), get("service.name")) {
        (Some(ns), Some(name)) => Some(format!("{ns}/{name}")),
        (None, Some(name)) => Some(name),
        _ => None,
    };
    if let Some(job) = job {
        labels.push(("job".into(), job));
    }
    if let Some(instance) = get("service.instance.id") {
        labels.push(("instance".into(), instance));
    }
    let rest: Vec<(String, AttrValue)> = resource
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "service.name" | "service.namespace" | "service.instance.id"
            )
        })
        .cloned()
        .collect();
    let target_info = (!rest.is_empty()).then(|| {
        let mut t = attribute_labels(&rest);
        t.retain(|(k, _)| k != "job" && k != "instance");
        t.extend(labels.iter().cloned());
        t
    });
    if let Some(sc) = scope {
        if !sc.name.is_empty() {
            labels.push(("otel_scope_name".into(), sc.name.clone()));
        }
        if !sc.version.is_empty() {
            labels.push(("otel_scope_version".into(), sc.version.clone()));
        }
    }
    Common {
        labels,
        target_info,
    }
}

/// Collects series and samples, defining each series once per batch.
struct Builder {
    batch: MetricBatch,
    seen: HashSet<u64>,
    max_ms: Option<i64>,
    /// Per sample, the data point it came from (see [`MetricRows::point_of`]).
    point_of: Vec<Option<u32>>,
    /// The data point being mapped; `None` for synthesized samples (`target_info`).
    point: Option<u32>,
    next_point: u32,
}

impl Builder {
    fn push(
        &mut self,
        name: String,
        kind: MetricKind,
        labels: Labels,
        (unit, help): (&str, &str),
        ts: i64,
        value: f64,
    ) {
        let mut def = SeriesDef::new(name, kind, labels);
        let id = def.id;
        if self.seen.insert(id.0) {
            def.unit = unit.to_owned();
            def.help = help.to_owned();
            self.batch.series.push(def);
        }
        self.batch.samples.push(Sample {
            series: id,
            timestamp_ms: ts,
            value,
        });
        self.point_of.push(self.point);
        self.max_ms = Some(self.max_ms.map_or(ts, |m| m.max(ts)));
    }
}

/// One data point's identity: its labels, timestamp and whether it carries no value.
struct Point {
    labels: Labels,
    ts: i64,
    stale: bool,
}

fn point(
    attrs: &[KeyValue],
    time: u64,
    flags: u32,
    base: &Labels,
    delta: bool,
    ctx: &MapContext,
) -> Result<Point, ItemError> {
    let ts = ctx.timestamp("time_unix_nano", time)?.as_millis();
    let attrs = convert_attributes(attrs, &ctx.limits)?;
    let mut labels = attribute_labels(&attrs);
    for (k, v) in base {
        if !labels.iter().any(|(lk, _)| lk == k) {
            labels.push((k.clone(), v.clone()));
        }
    }
    if delta {
        labels.push((TEMPORALITY_LABEL.into(), "delta".into()));
    }
    Ok(Point {
        labels,
        ts,
        stale: flags & 1 == 1,
    })
}

fn value_or_stale(p: &Point, v: f64) -> f64 {
    if p.stale {
        f64::from_bits(STALE_NAN_BITS)
    } else {
        v
    }
}

fn with_label(labels: &Labels, k: &str, v: String) -> Labels {
    let mut l = labels.clone();
    l.retain(|(lk, _)| lk != k);
    l.push((k.into(), v));
    l
}

fn number_point(
    m: &Metric,
    dp: &NumberDataPoint,
    kind: MetricKind,
    delta: bool,
    base: &Labels,
    b: &mut Builder,
    ctx: &MapContext,
) -> Result<(), ItemError> {
    let p = point(
        &dp.attributes,
        dp.time_unix_nano,
        dp.flags,
        base,
        delta,
        ctx,
    )?;
    let v = match dp.value {
        Some(number_data_point::Value::AsDouble(d)) => d,
        Some(number_data_point::Value::AsInt(i)) => i as f64,
        None if p.stale => f64::NAN,
        None => {
            return Err(ItemError::new(
                RejectReason::InvalidValue,
                format!("data point of {:?} has no value", m.name),
            ));
        }
    };
    let name = metric_name(&m.name, &m.unit, kind);
    b.push(
        name,
        kind,
        p.labels.clone(),
        (&m.unit, &m.description),
        p.ts,
        value_or_stale(&p, v),
    );
    Ok(())
}

fn bucket_series(
    m: &Metric,
    base_name: &str,
    p: &Point,
    buckets: &[(f64, u64)],
    count: u64,
    sum: Option<f64>,
    b: &mut Builder,
) {
    let kind = MetricKind::Histogram;
    let (unit, help) = (m.unit.as_str(), m.description.as_str());
    let mut cum: u64 = 0;
    for &(le, n) in buckets {
        cum = cum.saturating_add(n);
        let labels = with_label(&p.labels, "le", format_float(le));
        b.push(
            format!("{base_name}_bucket"),
            kind,
            labels,
            (unit, help),
            p.ts,
            value_or_stale(p, cum as f64),
        );
    }
    let labels = with_label(&p.labels, "le", "+Inf".into());
    b.push(
        format!("{base_name}_bucket"),
        kind,
        labels,
        (unit, help),
        p.ts,
        value_or_stale(p, count as f64),
    );
    if let Some(sum) = sum {
        b.push(
            format!("{base_name}_sum"),
            kind,
            p.labels.clone(),
            (unit, help),
            p.ts,
            value_or_stale(p, sum),
        );
    }
    b.push(
        format!("{base_name}_count"),
        kind,
        p.labels.clone(),
        (unit, help),
        p.ts,
        value_or_stale(p, count as f64),
    );
}

fn histogram_point(
    m: &Metric,
    dp: &HistogramDataPoint,
    delta: bool,
    base: &Labels,
    b: &mut Builder,
    ctx: &MapContext,
) -> Result<(), ItemError> {
    let p = point(
        &dp.attributes,
        dp.time_unix_nano,
        dp.flags,
        base,
        delta,
        ctx,
    )?;
    let bad = |msg: String| ItemError::new(RejectReason::InvalidValue, msg);
    let n = dp.explicit_bounds.len();
    if n >= MAX_BUCKETS {
        return Err(bad(format!(
            "histogram {:?} has more than {MAX_BUCKETS} buckets",
            m.name
        )));
    }
    let buckets: Vec<(f64, u64)> = if dp.bucket_counts.is_empty() {
        Vec::new()
    } else if dp.bucket_counts.len() != n + 1 {
        return Err(bad(format!(
            "histogram {:?}: {} bucket counts for {} bounds (want bounds + 1)",
            m.name,
            dp.bucket_counts.len(),
            n
        )));
    } else if dp.explicit_bounds.iter().any(|x| x.is_nan())
        || dp.explicit_bounds.windows(2).any(|w| w[0] >= w[1])
    {
        return Err(bad(format!("histogram {:?}: bounds must increase", m.name)));
    } else {
        dp.explicit_bounds
            .iter()
            .copied()
            .zip(dp.bucket_counts.iter().copied())
            .collect()
    };
    let name = metric_name(&m.name, &m.unit, MetricKind::Histogram);
    bucket_series(m, &name, &p, &buckets, dp.count, dp.sum, b);
    Ok(())
}

/// Why an exponential histogram point cannot be turned into explicit buckets.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExponentialError {
    /// A scale outside what OpenTelemetry SDKs produce.
    #[error("scale {0} outside [-10, 20]")]
    Scale(i32),
    /// More buckets than a point may have.
    #[error("more than {MAX_BUCKETS} buckets")]
    TooManyBuckets,
}

/// Explicit `(le, count)` buckets of an exponential histogram point (see module docs).
pub fn exponential_buckets(
    dp: &ExponentialHistogramDataPoint,
) -> Result<Vec<(f64, u64)>, ExponentialError> {
    if !(-10..=20).contains(&dp.scale) {
        return Err(ExponentialError::Scale(dp.scale));
    }
    let empty = Vec::new();
    let pos = dp.positive.as_ref().map_or(&empty, |b| &b.bucket_counts);
    let neg = dp.negative.as_ref().map_or(&empty, |b| &b.bucket_counts);
    if pos.len() + neg.len() >= MAX_BUCKETS {
        return Err(ExponentialError::TooManyBuckets);
    }
    let step = (-f64::from(dp.scale)).exp2();
    let bound = |index: i64| (index as f64 * step).exp2();
    let mut out = Vec::with_capacity(pos.len() + neg.len() + 1);
    let neg_offset = i64::from(dp.negative.as_ref().map_or(0, |b| b.offset));
    for (k, &n) in neg.iter().enumerate().rev() {
        out.push((-bound(neg_offset + k as i64), n));
    }
    out.push((dp.zero_threshold.abs(), dp.zero_count));
    let pos_offset = i64::from(dp.positive.as_ref().map_or(0, |b| b.offset));
    for (k, &n) in pos.iter().enumerate() {
        out.push((bound(pos_offset + k as i64 + 1), n));
    }
    Ok(out)
}

fn exponential_point(
    m: &Metric,
    dp: &ExponentialHistogramDataPoint,
    delta: bool,
    base: &Labels,
    b: &mut Builder,
    ctx: &MapContext,
) -> Result<(), ItemError> {
    let p = point(
        &dp.attributes,
        dp.time_unix_nano,
        dp.flags,
        base,
        delta,
        ctx,
    )?;
    let buckets = exponential_buckets(dp).map_err(|e| {
        ItemError::new(
            RejectReason::InvalidValue,
            format!("exponential histogram {:?}: {e}", m.name),
        )
    })?;
    let name = metric_name(&m.name, &m.unit, MetricKind::Histogram);
    bucket_series(m, &name, &p, &buckets, dp.count, dp.sum, b);
    Ok(())
}

fn summary_point(
    m: &Metric,
    dp: &SummaryDataPoint,
    base: &Labels,
    b: &mut Builder,
    ctx: &MapContext,
) -> Result<(), ItemError> {
    let p = point(
        &dp.attributes,
        dp.time_unix_nano,
        dp.flags,
        base,
        false,
        ctx,
    )?;
    if dp.quantile_values.len() >= MAX_BUCKETS {
        return Err(ItemError::new(
            RejectReason::InvalidValue,
            format!("summary {:?} has too many quantiles", m.name),
        ));
    }
    let kind = MetricKind::Summary;
    let name = metric_name(&m.name, &m.unit, kind);
    let (unit, help) = (m.unit.as_str(), m.description.as_str());
    for q in &dp.quantile_values {
        let labels = with_label(&p.labels, "quantile", format_float(q.quantile));
        b.push(
            name.clone(),
            kind,
            labels,
            (unit, help),
            p.ts,
            value_or_stale(&p, q.value),
        );
    }
    b.push(
        format!("{name}_sum"),
        kind,
        p.labels.clone(),
        (unit, help),
        p.ts,
        value_or_stale(&p, dp.sum),
    );
    b.push(
        format!("{name}_count"),
        kind,
        p.labels.clone(),
        (unit, help),
        p.ts,
        value_or_stale(&p, dp.count as f64),
    );
    Ok(())
}

fn map_metric(
    m: &Metric,
    base: &Labels,
    b: &mut Builder,
    out: &mut Mapped<MetricRows>,
    ctx: &MapContext,
) {
    let delta_code = AggregationTemporality::Delta as i32;
    macro_rules! each {
        ($points:expr, |$dp:ident| $body:expr) => {
            for $dp in $points {
                b.point = Some(b.next_point);
                b.next_point = b.next_point.saturating_add(1);
                let result = if m.name.is_empty() {
                    Err(ItemError::new(
                        RejectReason::InvalidValue,
                        "metric without a name",
                    ))
                } else {
                    $body
                };
                match result {
                    Ok(()) => out.accepted += 1,
                    Err(e) => out.reject(e),
                }
            }
        };
    }
    match &m.data {
        Some(Data::Gauge(g)) => each!(&g.data_points, |dp| number_point(
            m,
            dp,
            MetricKind::Gauge,
            false,
            base,
            b,
            ctx
        )),
        Some(Data::Sum(s)) => {
            let kind = if s.is_monotonic {
                MetricKind::Counter
            } else {
                MetricKind::Gauge
            };
            let delta = s.aggregation_temporality == delta_code;
            each!(&s.data_points, |dp| number_point(
                m, dp, kind, delta, base, b, ctx
            ))
        }
        Some(Data::Histogram(h)) => {
            let delta = h.aggregation_temporality == delta_code;
            each!(&h.data_points, |dp| histogram_point(
                m, dp, delta, base, b, ctx
            ))
        }
        Some(Data::ExponentialHistogram(h)) => {
            let delta = h.aggregation_temporality == delta_code;
            each!(&h.data_points, |dp| exponential_point(
                m, dp, delta, base, b, ctx
            ))
        }
        Some(Data::Summary(s)) => each!(&s.data_points, |dp| summary_point(m, dp, base, b, ctx)),
        None => {}
    }
    b.point = None;
}

/// Mapped metric samples, with the data point each sample came from, so that a refusal of
/// some series by the store is answered per data point (a histogram point spans many series:
/// it is stored whole or not at all).
#[derive(Debug, Default)]
pub struct MetricRows {
    /// Series and samples.
    pub batch: MetricBatch,
    /// Per sample (same index as `batch.samples`), the index of its data point within the
    /// request; `None` for samples the mapping synthesizes (`target_info`).
    pub point_of: Vec<Option<u32>>,
}

impl MetricRows {
    /// The batch without any data point that has a sample of a series in `refused` (and
    /// without synthesized samples of those series); returns it with the number of data
    /// points dropped.
    pub fn without_series(&self, refused: &[SeriesId]) -> (MetricBatch, u64) {
        let refused: HashSet<SeriesId> = refused.iter().copied().collect();
        let dropped_points: HashSet<u32> = self
            .batch
            .samples
            .iter()
            .zip(&self.point_of)
            .filter(|(s, _)| refused.contains(&s.series))
            .filter_map(|(_, p)| *p)
            .collect();
        let samples: Vec<Sample> = self
            .batch
            .samples
            .iter()
            .zip(&self.point_of)
            .filter(|(s, p)| match p {
                Some(p) => !dropped_points.contains(p),
                None => !refused.contains(&s.series),
            })
            .map(|(s, _)| *s)
            .collect();
        let used: HashSet<SeriesId> = samples.iter().map(|s| s.series).collect();
        let series = self
            .batch
            .series
            .iter()
            .filter(|d| used.contains(&d.id))
            .cloned()
            .collect();
        (MetricBatch { series, samples }, dropped_points.len() as u64)
    }
}

/// Maps a request's metrics to one batch; rejected data points are counted, not returned.
pub fn map_metrics(req: &ExportMetricsServiceRequest, ctx: &MapContext) -> Mapped<MetricRows> {
    let mut out = Mapped::<MetricRows>::default();
    let mut b = Builder {
        batch: MetricBatch::default(),
        seen: HashSet::new(),
        max_ms: None,
        point_of: Vec::new(),
        point: None,
        next_point: 0,
    };
    for rm in &req.resource_metrics {
        let resource = match rm
            .resource
            .as_ref()
            .map(|r| convert_attributes(&r.attributes, &ctx.limits))
        {
            Some(Ok(a)) => a,
            None => Vec::new(),
            Some(Err(e)) => {
                let n: usize = rm
                    .scope_metrics
                    .iter()
                    .flat_map(|s| &s.metrics)
                    .map(points_of)
                    .sum();
                for _ in 0..n {
                    out.reject(ItemError::new(e.reason, format!("resource: {}", e.message)));
                }
                continue;
            }
        };
        b.max_ms = None;
        let mut target_info = None;
        for sm in &rm.scope_metrics {
            let common = common_labels(&resource, sm.scope.as_ref());
            target_info = common.target_info;
            for m in &sm.metrics {
                map_metric(m, &common.labels, &mut b, &mut out, ctx);
            }
        }
        if let (Some(labels), Some(ts)) = (target_info, b.max_ms) {
            b.push(
                "target_info".into(),
                MetricKind::Gauge,
                labels,
                ("", "Target metadata"),
                ts,
                1.0,
            );
        }
    }
    out.rows = MetricRows {
        batch: b.batch,
        point_of: b.point_of,
    };
    out
}

fn points_of(m: &Metric) -> usize {
    match &m.data {
        Some(Data::Gauge(g)) => g.data_points.len(),
        Some(Data::Sum(s)) => s.data_points.len(),
        Some(Data::Histogram(h)) => h.data_points.len(),
        Some(Data::ExponentialHistogram(h)) => h.data_points.len(),
        Some(Data::Summary(s)) => s.data_points.len(),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_buckets_bounds() {
        use opentelemetry_proto::tonic::metrics::v1::exponential_histogram_data_point::Buckets;
        let dp = ExponentialHistogramDataPoint {
            scale: 0,
            zero_count: 1,
            count: 6,
            positive: Some(Buckets {
                offset: 0,
                bucket_counts: vec![2, 3],
            }),
            negative: Some(Buckets {
                offset: 1,
                bucket_counts: vec![0],
            }),
            ..Default::default()
        };
        let b = exponential_buckets(&dp).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b, vec![(-2.0, 0), (0.0, 1), (2.0, 2), (4.0, 3)]);
        let dp1 = ExponentialHistogramDataPoint {
            scale: 1,
            positive: Some(Buckets {
                offset: -1,
                bucket_counts: vec![1],
            }),
            ..Default::default()
        };
        let b1 = exponential_buckets(&dp1).unwrap_or_else(|e| panic!("{e}"));
        assert!((b1[1].0 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn collisions_join_values() {
        let attrs = vec![
            ("a.b".to_owned(), AttrValue::Str("1".into())),
            ("a_b".to_owned(), AttrValue::Int(2)),
        ];
        assert_eq!(
            attribute_labels(&attrs),
            vec![("a_b".to_owned(), "1;2".to_owned())]
        );
    }
}
