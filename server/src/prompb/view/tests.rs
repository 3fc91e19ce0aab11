//! The borrowed decoding against `prost`'s: the same content for any request, the same
//! accept/refuse answer for damaged ones, bounds enforced while decoding.

use std::sync::Arc;

use proptest::prelude::*;
use prost::Message as _;

use super::*;
use crate::ingest::budget::DecodedBudget;
use crate::otlp::wire::tests::mutations;
use crate::otlp::wire::tests::strategies::prom_write;
use crate::prompb as prom;

const OPEN: Bounds = Bounds {
    max_samples: usize::MAX,
    max_labels: usize::MAX,
    max_decoded_bytes: u64::MAX,
};

fn budget() -> Arc<DecodedBudget> {
    DecodedBudget::new(u64::MAX / 2)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn view_matches_prost(req in prom_write()) {
        let raw = req.encode_to_vec();
        let b = budget();
        let mut held = b.reservation();
        let view = decode(&raw, OPEN, &mut held).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(view.series.len(), req.timeseries.len());
        for (s, t) in view.series.iter().zip(&req.timeseries) {
            let labels: Vec<(&str, &str)> =
                t.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
            prop_assert_eq!(view.labels_of(s), labels.as_slice());
            let samples: Vec<(i64, u64)> =
                t.samples.iter().map(|p| (p.timestamp, p.value.to_bits())).collect();
            let got: Vec<(i64, u64)> =
                view.samples_of(s).iter().map(|p| (p.timestamp, p.value.to_bits())).collect();
            prop_assert_eq!(got, samples);
            prop_assert_eq!(s.exemplars, t.exemplars.len() as u64);
            prop_assert_eq!(s.histograms, t.histograms.len() as u64);
        }
        prop_assert_eq!(&view.metadata, &req.metadata);
        // The reservation covers the view's vectors.
        let floor = (view.labels.len() * 32 + view.samples.len() * 16) as u64;
        prop_assert!(held.bytes() >= floor, "{} < {}", held.bytes(), floor);
    }

    #[test]
    fn damaged_requests_agree_with_prost(
        bytes in prom_write().prop_flat_map(|r| mutations(r.encode_to_vec()))
    ) {
        let b = budget();
        let mut held = b.reservation();
        let view = decode(&bytes, OPEN, &mut held);
        let decoded = prom::WriteRequest::decode(bytes.as_slice());
        prop_assert_eq!(view.is_ok(), decoded.is_ok(), "view {:?}, prost {:?}", view, decoded.err());
        if let Err(e) = &view {
            prop_assert!(matches!(e, IngestError::Malformed(_)), "{e:?}");
        }
    }
}

fn one_series(labels: usize, samples: usize) -> Vec<u8> {
    prom::WriteRequest {
        timeseries: vec![prom::TimeSeries {
            labels: (0..labels)
                .map(|i| prom::Label {
                    name: format!("l{i}"),
                    value: "v".into(),
                })
                .collect(),
            samples: (0..samples)
                .map(|i| prom::Sample {
                    value: i as f64,
                    timestamp: i as i64,
                })
                .collect(),
            exemplars: vec![],
            histograms: vec![],
        }],
        metadata: vec![],
    }
    .encode_to_vec()
}

#[test]
fn bounds_refuse_while_decoding() {
    let b = budget();
    let raw = one_series(3, 10);
    let cases = [
        (
            Bounds {
                max_samples: 9,
                ..OPEN
            },
            "samples",
        ),
        (
            Bounds {
                max_labels: 2,
                ..OPEN
            },
            "labels",
        ),
        (
            Bounds {
                max_decoded_bytes: 100,
                ..OPEN
            },
            "decoded",
        ),
    ];
    for (bounds, what) in cases {
        let mut held = b.reservation();
        let r = decode(&raw, bounds, &mut held);
        match r {
            Err(IngestError::TooLarge(m) | IngestError::Malformed(m)) => {
                assert!(m.contains(what), "{what}: {m}")
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    let mut held = b.reservation();
    let view = decode(
        &raw,
        Bounds {
            max_samples: 10,
            max_labels: 3,
            max_decoded_bytes: 10_000,
        },
        &mut held,
    );
    assert!(view.is_ok_and(|v| v.samples.len() == 10 && v.labels.len() == 3));
}

#[test]
fn a_spent_budget_refuses() {
    let b = DecodedBudget::new(1 << 10);
    let mut held = b.reservation();
    let raw = one_series(2, 5);
    let r = decode(&raw, OPEN, &mut held);
    assert!(matches!(r, Err(IngestError::Busy { .. })), "{r:?}");
    drop(held);
    assert_eq!(b.used(), 0);
}
