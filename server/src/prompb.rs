//! The protobuf messages of Prometheus remote write 1.0 that Sightline reads
//! (`prometheus.WriteRequest`, prompb/remote.proto and types.proto): decoded by
//! `http::prometheus::remote_write` through the borrowed [`view`], written by the tests' clients.

pub mod view;

/// `prometheus.WriteRequest` (remote.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// Series with their samples.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    /// Metric family metadata.
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// `prometheus.TimeSeries` (types.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Labels, `__name__` included.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Float samples.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Exemplars (not stored).
    #[prost(message, repeated, tag = "3")]
    pub exemplars: Vec<Exemplar>,
    /// Native histograms, left encoded (not stored).
    #[prost(bytes = "vec", repeated, tag = "4")]
    pub histograms: Vec<Vec<u8>>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.Exemplar`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    /// Labels.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Value.
    #[prost(double, tag = "2")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// `prometheus.MetricMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricMetadata {
    /// `MetricType`: 0 unknown, 1 counter, 2 gauge, 3 histogram, 4 gaugehistogram,
    /// 5 summary, 6 info, 7 stateset.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    /// Family name.
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    /// Help text.
    #[prost(string, tag = "4")]
    pub help: String,
    /// Unit.
    #[prost(string, tag = "5")]
    pub unit: String,
}
