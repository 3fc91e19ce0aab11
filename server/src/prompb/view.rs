//! A borrowed decoding of `prometheus.WriteRequest`: one pass over the protobuf that leaves
//! label names and values as `&str` into the request body and gathers every sample into one
//! vector, instead of a `String` per label and a `Vec` per series.
//!
//! Remote write sends each series' full label set with every request, often for one or two
//! samples each; decoding into owned messages costs more than storing the samples. The view
//! costs 32 bytes per label and 16 per sample, counted as it grows: past `max_decoded_bytes`
//! the request is refused (`TooLarge`), past `max_items` samples too, and the caller's budget
//! reservation grows before each further MiB is taken.
//!
//! It accepts what `prost` accepts for these messages: the same varint, key and wire-type
//! rules (it uses `prost::encoding`), UTF-8 checked on labels, lengths checked against the
//! enclosing message, unknown fields skipped (`prost::encoding::skip_field`), a repeated
//! singular field's last occurrence winning. Exemplars are decoded with `prost` to check them
//! and then only counted; native histograms are only counted. Metadata entries are decoded
//! with `prost` (owned; a request carries few).

use std::ops::Range;

use prost::Message as _;
use prost::bytes::Buf as _;
use prost::encoding::{DecodeContext, WireType, decode_key, decode_varint, skip_field};

use super::{Exemplar, MetricMetadata};
use crate::error::IngestError;
use crate::ingest::budget::Reservation;

/// Memory the view takes per label, sample and series (the elements of its vectors).
const LABEL_BYTES: u64 = std::mem::size_of::<(&str, &str)>() as u64;
const SAMPLE_BYTES: u64 = std::mem::size_of::<Sample>() as u64;
const SERIES_BYTES: u64 = std::mem::size_of::<SeriesView>() as u64;
/// The reservation grows in steps of this many bytes.
const RESERVE_STEP: u64 = 1 << 20;

/// One float sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    /// The value, bit for bit.
    pub value: f64,
}

/// One `TimeSeries`: ranges into the view's labels and samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesView {
    /// Its labels, in wire order, `__name__` included.
    pub labels: Range<usize>,
    /// Its samples, in wire order.
    pub samples: Range<usize>,
    /// Exemplars sent (not stored).
    pub exemplars: u64,
    /// Native histogram samples sent (not stored).
    pub histograms: u64,
}

/// A decoded `WriteRequest` borrowing from its body.
#[derive(Debug, Default)]
pub struct WriteView<'a> {
    /// The series, in wire order.
    pub series: Vec<SeriesView>,
    /// Every series' labels `(name, value)`, back to back.
    pub labels: Vec<(&'a str, &'a str)>,
    /// Every series' samples, back to back.
    pub samples: Vec<Sample>,
    /// Metric family metadata.
    pub metadata: Vec<MetricMetadata>,
}

impl<'a> WriteView<'a> {
    /// The labels of `s`.
    pub fn labels_of(&self, s: &SeriesView) -> &[(&'a str, &'a str)] {
        &self.labels[s.labels.clone()]
    }

    /// The samples of `s`.
    pub fn samples_of(&self, s: &SeriesView) -> &[Sample] {
        &self.samples[s.samples.clone()]
    }
}

/// Bounds of one decoding.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Samples allowed in the request.
    pub max_samples: usize,
    /// Labels allowed on one series.
    pub max_labels: usize,
    /// Memory the view may take.
    pub max_decoded_bytes: u64,
}

fn malformed(e: impl std::fmt::Display) -> IngestError {
    IngestError::Malformed(format!("invalid prometheus.WriteRequest: {e}"))
}

struct Decoder<'a, 'r> {
    view: WriteView<'a>,
    bounds: Bounds,
    reserved: &'r mut Reservation,
    /// The view's memory so far.
    used: u64,
}

impl<'a> Decoder<'a, '_> {
    fn take(&mut self, n: u64) -> Result<(), IngestError> {
        self.used += n;
        if self.used > self.bounds.max_decoded_bytes {
            return Err(IngestError::TooLarge(format!(
                "decoded request would take more than {} bytes",
                self.bounds.max_decoded_bytes
            )));
        }
        if self.used > self.reserved.bytes() {
            self.reserved.grow_to(self.used + RESERVE_STEP)?;
        }
        Ok(())
    }
}

/// The bytes of a field of wire type `wire`, which must be length-delimited, advancing `buf`
/// past them.
fn delimited<'a>(wire: WireType, buf: &mut &'a [u8]) -> Result<&'a [u8], IngestError> {
    expect(wire, WireType::LengthDelimited)?;
    let len = decode_varint(buf).map_err(malformed)?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= buf.len())
        .ok_or_else(|| malformed("length past the end of its message"))?;
    let (head, tail) = buf.split_at(len);
    *buf = tail;
    Ok(head)
}

fn expect(actual: WireType, expected: WireType) -> Result<(), IngestError> {
    if actual == expected {
        Ok(())
    } else {
        Err(malformed(format!(
            "wire type {actual:?} where {expected:?} was expected"
        )))
    }
}

fn skip(wire: WireType, tag: u32, buf: &mut &[u8]) -> Result<(), IngestError> {
    skip_field(wire, tag, buf, DecodeContext::default()).map_err(malformed)
}

/// Decodes `raw` within `bounds`, growing `reserved` with the view's memory.
pub fn decode<'a>(
    raw: &'a [u8],
    bounds: Bounds,
    reserved: &mut Reservation,
) -> Result<WriteView<'a>, IngestError> {
    let mut d = Decoder {
        view: WriteView::default(),
        bounds,
        reserved,
        used: 0,
    };
    let mut buf = raw;
    while buf.has_remaining() {
        let (tag, wire) = decode_key(&mut buf).map_err(malformed)?;
        match tag {
            1 => {
                let body = delimited(wire, &mut buf)?;
                series(&mut d, body)?;
            }
            3 => {
                let body = delimited(wire, &mut buf)?;
                d.take(std::mem::size_of::<MetricMetadata>() as u64 + body.len() as u64)?;
                d.view
                    .metadata
                    .push(MetricMetadata::decode(body).map_err(malformed)?);
            }
            _ => skip(wire, tag, &mut buf)?,
        }
    }
    Ok(d.view)
}

fn series<'a>(d: &mut Decoder<'a, '_>, mut buf: &'a [u8]) -> Result<(), IngestError> {
    d.take(SERIES_BYTES)?;
    let index = d.view.series.len();
    let mut s = SeriesView {
        labels: d.view.labels.len()..d.view.labels.len(),
        samples: d.view.samples.len()..d.view.samples.len(),
        ..SeriesView::default()
    };
    while buf.has_remaining() {
        let (tag, wire) = decode_key(&mut buf).map_err(malformed)?;
        match tag {
            1 => {
                let body = delimited(wire, &mut buf)?;
                if s.labels.len() >= d.bounds.max_labels {
                    return Err(IngestError::Malformed(format!(
                        "series {index}: more than {} labels",
                        d.bounds.max_labels
                    )));
                }
                d.take(LABEL_BYTES)?;
                d.view.labels.push(label(body)?);
                s.labels.end += 1;
            }
            2 => {
                let body = delimited(wire, &mut buf)?;
                if d.view.samples.len() >= d.bounds.max_samples {
                    return Err(IngestError::TooLarge(format!(
                        "more than {} samples in one request",
                        d.bounds.max_samples
                    )));
                }
                d.take(SAMPLE_BYTES)?;
                d.view.samples.push(sample(body)?);
                s.samples.end += 1;
            }
            3 => {
                Exemplar::decode(delimited(wire, &mut buf)?).map_err(malformed)?;
                s.exemplars += 1;
            }
            4 => {
                delimited(wire, &mut buf)?;
                s.histograms += 1;
            }
            _ => skip(wire, tag, &mut buf)?,
        }
    }
    // Labels and samples of one series are contiguous: nothing else is pushed in between.
    debug_assert_eq!(s.labels.end, d.view.labels.len());
    debug_assert_eq!(s.samples.end, d.view.samples.len());
    d.view.series.push(s);
    Ok(())
}

fn label(mut buf: &[u8]) -> Result<(&str, &str), IngestError> {
    let (mut name, mut value) = ("", "");
    while buf.has_remaining() {
        let (tag, wire) = decode_key(&mut buf).map_err(malformed)?;
        match tag {
            1 | 2 => {
                let text = std::str::from_utf8(delimited(wire, &mut buf)?)
                    .map_err(|_| malformed("label is not valid UTF-8"))?;
                if tag == 1 {
                    name = text;
                } else {
                    value = text;
                }
            }
            _ => skip(wire, tag, &mut buf)?,
        }
    }
    Ok((name, value))
}

fn sample(mut buf: &[u8]) -> Result<Sample, IngestError> {
    let mut out = Sample::default();
    while buf.has_remaining() {
        let (tag, wire) = decode_key(&mut buf).map_err(malformed)?;
        match tag {
            1 => {
                expect(wire, WireType::SixtyFourBit)?;
                if buf.len() < 8 {
                    return Err(malformed("sample value past the end of its message"));
                }
                out.value = buf.get_f64_le();
            }
            2 => {
                expect(wire, WireType::Varint)?;
                // int64: the varint's bits, two's complement.
                out.timestamp = decode_varint(&mut buf).map_err(malformed)? as i64;
            }
            _ => skip(wire, tag, &mut buf)?,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
