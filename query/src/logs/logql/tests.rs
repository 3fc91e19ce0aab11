//! Parser tests.

#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn parses_grafana_queries() {
    let e = parse(r#"sum by (level, detected_level) (count_over_time({service_name="api"} |= "x" | drop __error__[1m]))"#).unwrap();
    let Expr::Metric(MetricExpr::Agg {
        op,
        grouping,
        inner,
        ..
    }) = e
    else {
        panic!("not an aggregation");
    };
    assert_eq!(op, AggOp::Sum);
    assert_eq!(
        grouping,
        Some(Grouping::By(vec!["level".into(), "detected_level".into()]))
    );
    let MetricExpr::Range {
        func,
        log,
        range_ns,
    } = *inner
    else {
        panic!("not a range aggregation");
    };
    assert_eq!(func, RangeFunc::CountOverTime);
    assert_eq!(range_ns, 60_000_000_000);
    assert_eq!(log.selector.len(), 1);
    assert_eq!(log.stages.len(), 2);
    assert!(matches!(
        parse("vector(1)+vector(1)").unwrap(),
        Expr::Metric(MetricExpr::Binary { op: BinOp::Add, .. })
    ));
    let e = parse(r#"{service_name=~"a|b", level!="debug"} != "health" |~ `err\d` | json | status >= 500 | user="x""#).unwrap();
    let Expr::Log(l) = e else { panic!() };
    assert_eq!(l.selector.len(), 2);
    assert_eq!(l.stages.len(), 5);
    assert!(matches!(
        parse(r#"topk(3, sum(rate({a="b"}[5m])) by (c))"#).unwrap(),
        Expr::Metric(MetricExpr::Agg {
            op: AggOp::Topk,
            param: Some(3.0),
            ..
        })
    ));
}

#[test]
fn rejects_unsupported_with_names() {
    for (q, word) in [
        (r#"{a="b"} | line_format "{{.x}}""#, "line_format"),
        (r#"sum_over_time({a="b"} | unwrap x [1m])"#, "sum_over_time"),
        (r#"{a="b"} | unwrap x"#, "unwrap"),
        (
            r#"quantile_over_time(0.9, {a="b"}[1m])"#,
            "quantile_over_time",
        ),
        (r#"count_over_time({a="b"}[1m]) or vector(0)"#, "or"),
        (r#"count_over_time({a="b"}[1m] offset 1h)"#, "offset"),
    ] {
        let err = parse(q).unwrap_err().to_string();
        assert!(err.contains(word), "{q}: {err}");
    }
    for bad in [
        r#"{a="b""#,
        r#"{a=b}"#,
        "count_over_time({a=\"b\"})",
        "{a=\"b\"} |= ",
        "[1x]",
        "{a=~\"(\"}",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}
