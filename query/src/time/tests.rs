//! Table tests pinning each dialect (ported from the parsers this module replaced, every case
//! kept) and render-then-parse round trips.

use proptest::prelude::*;

use super::*;

fn prom_time(s: &str) -> Result<i64, String> {
    prometheus_time(s).map(|t| t.0).map_err(|e| e.to_string())
}

fn prom_duration(s: &str) -> Result<i64, String> {
    prometheus_duration(s)
        .map(|d| d.0)
        .map_err(|e| e.to_string())
}

fn loki_time(s: &str) -> Result<i64, String> {
    TimeDialect::Loki
        .parse(s)
        .map(|t| t.0)
        .map_err(|e| e.to_string())
}

fn loki_step(s: &str) -> Result<i64, String> {
    DurationDialect::LokiStep
        .parse(s)
        .map(|d| d.0)
        .map_err(|e| e.to_string())
}

fn traceql(s: &str) -> Result<i64> {
    Ok(DurationDialect::TraceQl.parse(s)?.0)
}

// From query/src/time.rs.
#[test]
fn rfc3339_or_seconds_times() {
    assert_eq!(parse_time("4").ok(), Some(UnixNanos(4_000_000_000)));
    assert_eq!(parse_time("1.5").ok(), Some(UnixNanos(1_500_000_000)));
    assert_eq!(
        parse_time("2026-01-01T00:00:00Z").ok(),
        Some(UnixNanos(1_767_225_600_000_000_000))
    );
    assert_eq!(
        parse_time("2026-01-01T01:00:00+01:00").ok(),
        Some(UnixNanos(1_767_225_600_000_000_000))
    );
    assert!(parse_time("yesterday").is_err());
    assert!(parse_time("NaN").is_err());
    assert!(parse_time("1e300").is_err());
    // Messages and error variants.
    assert_eq!(
        parse_time(" 1e300 ").map_err(|e| e.to_string()),
        Err("bad request: time \"1e300\" is out of range".into())
    );
    let e = parse_time("yesterday").expect_err("bad");
    assert!(matches!(e, QueryError::BadRequest(_)));
    assert!(
        e.to_string().starts_with(
            "bad request: cannot parse \"yesterday\" as a time (RFC 3339 or Unix seconds): "
        ),
        "{e}"
    );
}

// From query/src/time.rs.
#[test]
fn seconds_or_units_durations() {
    assert_eq!(parse_duration("1h30m").ok(), Some(5_400_000_000_000));
    assert_eq!(parse_duration("250ms").ok(), Some(250_000_000));
    assert_eq!(parse_duration("1.5s").ok(), Some(1_500_000_000));
    assert_eq!(parse_duration("15").ok(), Some(15_000_000_000));
    assert_eq!(parse_duration("2d").ok(), Some(172_800_000_000_000));
    for bad in ["", "5x", "m", "-1s", "1h-", "999999999y"] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
    assert_eq!(
        parse_duration("1w1y").ok(),
        Some(604_800_000_000_000 + 31_536_000_000_000_000)
    );
    assert_eq!(parse_duration("5µs3us").ok(), Some(8_000));
    assert_eq!(
        parse_duration(" 5x ").map_err(|e| e.to_string()),
        Err("bad request: cannot parse \"5x\" as a duration".into())
    );
}

// From server/src/http/prometheus/params.rs.
#[test]
fn prometheus_times() {
    assert_eq!(prom_time("4"), Ok(4000));
    assert_eq!(prom_time("1435781451.781"), Ok(1_435_781_451_781));
    assert_eq!(prom_time("1.0005"), Ok(1001));
    assert_eq!(prom_time("-1.5"), Ok(-1500));
    assert_eq!(prom_time("2015-07-01T20:10:51.781Z"), Ok(1_435_781_451_781));
    assert_eq!(
        prom_time("2015-07-01T22:10:51+02:00"),
        Ok(1_435_781_451_000)
    );
    assert!(prom_time("").is_err());
    assert!(prom_time("yesterday").is_err());
    assert!(prom_time("NaN").is_err());
    assert!(prom_time("Inf").is_err());
    assert!(prom_time("1e300").is_err());
    assert_eq!(
        prom_time("yesterday"),
        Err("cannot parse \"yesterday\" to a valid timestamp".into())
    );
    // Wider than nanoseconds hold, and not trimmed.
    assert_eq!(prom_time("1e12"), Ok(1_000_000_000_000_000));
    assert!(prom_time(" 4").is_err());
    assert!(TimeDialect::Prometheus.parse("1e12").is_err());
    assert_eq!(
        TimeDialect::Prometheus.parse("1.0005"),
        Ok(UnixNanos(1_001_000_000))
    );
}

// From server/src/http/prometheus/params.rs.
#[test]
fn prometheus_durations() {
    assert_eq!(prom_duration("15"), Ok(15_000));
    assert_eq!(prom_duration("0.5"), Ok(500));
    assert_eq!(prom_duration("15s"), Ok(15_000));
    assert_eq!(prom_duration("1m30s"), Ok(90_000));
    assert_eq!(prom_duration("1h"), Ok(3_600_000));
    assert_eq!(prom_duration("2d"), Ok(172_800_000));
    assert_eq!(prom_duration("1w"), Ok(604_800_000));
    assert_eq!(prom_duration("100ms"), Ok(100));
    assert_eq!(prom_duration("1s500ms"), Ok(1500));
    assert!(prom_duration("").is_err());
    assert!(prom_duration("1x").is_err());
    assert!(prom_duration("30s1m").is_err());
    assert!(prom_duration("1m1m").is_err());
    assert!(prom_duration("s").is_err());
    assert!(prom_duration("1e300").is_err());
    assert_eq!(
        prom_duration("1e300"),
        Err("cannot parse \"1e300\" to a valid duration. It overflows int64".into())
    );
    assert_eq!(
        prom_duration("1x"),
        Err("cannot parse \"1x\" to a valid duration".into())
    );
    assert_eq!(prom_duration("-1.5"), Ok(-1500));
    assert_eq!(prom_duration("1y"), Ok(31_536_000_000));
    assert!(prom_duration("1.5s").is_err());
}

// From server/src/http/params.rs.
#[test]
fn loki_times_and_steps() {
    assert_eq!(loki_time("1700000000"), Ok(1_700_000_000_000_000_000));
    assert_eq!(
        loki_time("1700000000000000001"),
        Ok(1_700_000_000_000_000_001)
    );
    assert_eq!(loki_time("1700000000.5"), Ok(1_700_000_000_500_000_000));
    assert_eq!(
        loki_time("2023-11-14T22:13:20Z"),
        Ok(1_700_000_000_000_000_000)
    );
    assert_eq!(
        loki_time("2023-11-14T23:13:20.25+01:00"),
        Ok(1_700_000_000_250_000_000)
    );
    assert!(loki_time("yesterday").is_err());
    assert_eq!(loki_step("1m"), Ok(60_000_000_000));
    assert_eq!(loki_step("15"), Ok(15_000_000_000));
    assert!(loki_step("0").is_err());
    // Messages (docs/logs.md quotes the first).
    assert_eq!(
        loki_time(" yesterday"),
        Err("invalid timestamp \"yesterday\": use Unix nanoseconds, seconds or RFC3339".into())
    );
    assert!(loki_time("9999999999").is_err());
    assert_eq!(loki_time("-5"), Ok(-5_000_000_000));
    assert_eq!(
        loki_step("0"),
        Err("invalid step \"0\": must be positive".into())
    );
    assert_eq!(
        loki_step("5x"),
        Err("parse error: bad duration \"5x\"".into())
    );
    assert_eq!(
        loki_step("0s"),
        Err("parse error: duration \"0s\" must be positive".into())
    );
}

// The LogQL lexer's durations (its callers' messages).
#[test]
fn logql_durations() {
    assert_eq!(parse_logql_duration("5m").ok(), Some(300_000_000_000));
    assert_eq!(
        parse_logql_duration(" 1h30m ").ok(),
        Some(5_400_000_000_000)
    );
    let msg = |s| parse_logql_duration(s).map_err(|e| e.to_string());
    assert_eq!(
        msg("5"),
        Err("parse error: bad duration \"5\": a unit is needed".into())
    );
    assert_eq!(msg("5x"), Err("parse error: bad duration \"5x\"".into()));
    assert_eq!(
        msg("0s"),
        Err("parse error: duration \"0s\" must be positive".into())
    );
    assert!(matches!(
        parse_logql_duration("x"),
        Err(QueryError::Parse(_))
    ));
}

// From query/src/traces/traceql.rs.
#[test]
fn traceql_durations() {
    assert_eq!(traceql("250ms").expect("ok"), 250_000_000);
    assert_eq!(traceql("1m30s").expect("ok"), 90_000_000_000);
    assert_eq!(traceql("1.5s").expect("ok"), 1_500_000_000);
    assert_eq!(traceql("0").expect("ok"), 0);
    for b in ["", "5", "ms", "5x", "-1s"] {
        assert!(traceql(b).is_err(), "{b}");
    }
    assert_eq!(
        traceql(" 5x").map_err(|e| e.to_string()),
        Err("bad request: bad duration \" 5x\" (use e.g. 250ms, 1.5s, 1m30s)".into())
    );
    assert!(traceql("1d").is_err());
    // The native trace API: integers are nanoseconds.
    let native = |s| DurationDialect::NanosOrTraceQl.parse(s).map(|d| d.0);
    assert_eq!(native(" 5 "), Ok(5));
    assert_eq!(native("-5"), Ok(-5));
    assert_eq!(native("2s"), Ok(2_000_000_000));
    assert!(native("2x").is_err());
    assert_eq!(DurationDialect::TraceQl.unit_nanos("µs"), Some(1e3));
    assert_eq!(DurationDialect::TraceQl.unit_nanos("d"), None);
}

// From server/src/http/traces.rs (`unix_seconds`).
#[test]
fn unix_seconds() {
    let p = |s| TimeDialect::UnixSeconds.parse(s).map_err(|e| e.to_string());
    assert_eq!(p(" 1.5 "), Ok(UnixNanos(1_500_000_000)));
    assert_eq!(p("x"), Err("expected unix seconds, got \"x\"".into()));
    assert_eq!(p(" 1e300"), Err(" 1e300 is out of range".into()));
    assert!(p("2026-01-01T00:00:00Z").is_err());
}

// From cli/src/query.rs (`time_arg`).
#[test]
fn relative_times() {
    let now = UnixNanos(1_767_225_600_000_000_000);
    let at = |s| RelativeTime::parse(s).map(|t| t.resolve(now));
    assert_eq!(at("-1h"), Ok(UnixNanos(now.0 - 3_600_000_000_000)));
    assert!(at("-x").is_err());
    assert_eq!(at("now"), Ok(now));
    assert_eq!(at("-5"), Ok(UnixNanos(-5_000_000_000)));
    assert_eq!(at("2026-01-01T00:00:00Z"), Ok(now));
    assert_eq!(
        RelativeTime::parse("-6h"),
        Ok(RelativeTime::Ago(Nanos(21_600_000_000_000)))
    );
    assert_eq!(
        RelativeTime::parse("-x").map_err(|e| QueryError::from(e).to_string()),
        Err("bad request: cannot parse \"x\" as a duration".into())
    );
}

#[test]
fn now_is_now() {
    let a = now();
    assert!(a.0 > 1_700_000_000_000_000_000);
    assert!(UnixMillis::from(a).0 >= 1_700_000_000_000);
    assert!((unix_secs_f64(UnixNanos(1_500_000_000)) - 1.5).abs() < 1e-12);
}

const TIME_DIALECTS: [TimeDialect; 4] = [
    TimeDialect::Prometheus,
    TimeDialect::Loki,
    TimeDialect::Rfc3339OrSeconds,
    TimeDialect::UnixSeconds,
];

proptest! {
    #[test]
    fn times_round_trip(t in -9_000_000_000_000_000_000i64..9_000_000_000_000_000_000i64) {
        let t = UnixNanos(t);
        for d in TIME_DIALECTS {
            let text = d.render(t);
            let back = d.parse(&text);
            prop_assert!(back.is_ok(), "{d:?} {text}: {back:?}");
            let back = back.unwrap_or_default();
            match d {
                TimeDialect::Prometheus => prop_assert_eq!(back.0, t.as_millis() * 1_000_000),
                // Float seconds: within two microseconds (f64 precision at 9e9 s).
                TimeDialect::UnixSeconds => prop_assert!((back.0 - t.0).abs() < 2_000, "{text}"),
                _ => prop_assert_eq!(back, t, "{:?} {}", d, text),
            }
        }
    }

    #[test]
    // Float seconds keep every millisecond well within 2^40 s (about 35,000 years).
    fn prometheus_times_round_trip(ms in -(1i64 << 50)..(1i64 << 50)) {
        let text = prometheus::render_time(UnixMillis(ms));
        prop_assert_eq!(prometheus_time(&text), Ok(UnixMillis(ms)), "{}", text);
    }

    #[test]
    fn prometheus_durations_round_trip(ms in -9_000_000_000_000i64..i64::MAX) {
        let text = prometheus::render_duration(Millis(ms));
        prop_assert_eq!(prometheus_duration(&text), Ok(Millis(ms)), "{}", text);
    }

    #[test]
    fn durations_round_trip(ns in 0i64..i64::MAX) {
        let d = Nanos(ns);
        for dialect in [
            DurationDialect::Prometheus,
            DurationDialect::SecondsOrUnits,
            DurationDialect::LogQl,
            DurationDialect::LokiStep,
            DurationDialect::NanosOrTraceQl,
        ] {
            let text = dialect.render(d);
            let back = dialect.parse(&text);
            let want = match dialect {
                DurationDialect::Prometheus => Nanos(ns / 1_000_000 * 1_000_000),
                _ => d,
            };
            if ns == 0 && matches!(dialect, DurationDialect::LogQl | DurationDialect::LokiStep) {
                prop_assert!(back.is_err());
            } else {
                prop_assert_eq!(back, Ok(want), "{:?} {}", dialect, text);
            }
        }
    }

    #[test]
    fn traceql_durations_round_trip(ns in 0i64..(1i64 << 53)) {
        let text = DurationDialect::TraceQl.render(Nanos(ns));
        prop_assert_eq!(DurationDialect::TraceQl.parse(&text), Ok(Nanos(ns)), "{}", text);
    }

    #[test]
    fn relative_times_round_trip(ago in 0i64..i64::MAX, at in any::<i64>(), now in any::<i64>()) {
        for t in [RelativeTime::Now, RelativeTime::Ago(Nanos(ago)), RelativeTime::At(UnixNanos(at))] {
            let text = t.render();
            prop_assert_eq!(RelativeTime::parse(&text), Ok(t), "{}", text);
            let _ = t.resolve(UnixNanos(now));
        }
    }

    #[test]
    fn negative_durations_are_refused(ns in i64::MIN + 1..0i64) {
        for dialect in [DurationDialect::SecondsOrUnits, DurationDialect::LogQl, DurationDialect::TraceQl] {
            let text = format!("-{}", dialect.render(Nanos(ns)));
            prop_assert!(dialect.parse(&text).is_err(), "{:?} {}", dialect, text);
        }
    }

    #[test]
    fn no_input_panics(s in "\\PC{0,24}") {
        for d in TIME_DIALECTS {
            let _ = d.parse(&s);
        }
        for d in [
            DurationDialect::Prometheus,
            DurationDialect::SecondsOrUnits,
            DurationDialect::LogQl,
            DurationDialect::LokiStep,
            DurationDialect::TraceQl,
            DurationDialect::NanosOrTraceQl,
        ] {
            let _ = d.parse(&s);
        }
        let _ = RelativeTime::parse(&s);
    }
}
