//! The `google.rpc.Status` and `google.rpc.RetryInfo` messages, for error bodies of
//! OTLP/HTTP (the spec's `Status` message) and the details of gRPC errors.

use std::time::Duration;

use prost::Message as _;

use crate::error::IngestError;

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    /// Type URL.
    #[prost(string, tag = "1")]
    pub type_url: String,
    /// Encoded message.
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// `google.protobuf.Duration`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProtoDuration {
    /// Whole seconds.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// `google.rpc.RetryInfo`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RetryInfo {
    /// How long to wait.
    #[prost(message, optional, tag = "1")]
    pub retry_delay: Option<ProtoDuration>,
}

/// `google.rpc.Status`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    /// gRPC status code.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// Message.
    #[prost(string, tag = "2")]
    pub message: String,
    /// Details (`RetryInfo` for retryable errors).
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<Any>,
}

/// Type URL of `RetryInfo`.
pub const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// The gRPC code of an ingest error (OTLP/gRPC spec: `UNAVAILABLE` and `RESOURCE_EXHAUSTED`
/// with `RetryInfo` are retryable, the rest are not).
pub fn grpc_code(e: &IngestError) -> tonic::Code {
    use tonic::Code;
    match e {
        IngestError::Malformed(_)
        | IngestError::InvalidTenant(_)
        | IngestError::AllRejected { .. }
        | IngestError::UnsupportedMediaType(_) => Code::InvalidArgument,
        IngestError::Unauthenticated(_) => Code::Unauthenticated,
        IngestError::TooLarge(_) | IngestError::Busy { .. } => Code::ResourceExhausted,
        IngestError::OverBudget { .. } | IngestError::Unavailable(_) => Code::Unavailable,
        IngestError::Internal(_) => Code::Internal,
    }
}

fn retry_info(d: Duration) -> Any {
    let info = RetryInfo {
        retry_delay: Some(ProtoDuration {
            seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
        }),
    };
    Any {
        type_url: RETRY_INFO_TYPE.into(),
        value: info.encode_to_vec(),
    }
}

/// The `google.rpc.Status` describing `e`.
pub fn status_of(e: &IngestError) -> Status {
    Status {
        code: grpc_code(e) as i32,
        message: e.to_string(),
        details: e.retry_after().map(retry_info).into_iter().collect(),
    }
}

/// A tonic status for `e`, with `RetryInfo` details when retryable.
pub fn tonic_status(e: &IngestError) -> tonic::Status {
    let status = status_of(e);
    if status.details.is_empty() {
        tonic::Status::new(grpc_code(e), status.message)
    } else {
        let details = bytes::Bytes::from(status.encode_to_vec());
        tonic::Status::with_details(grpc_code(e), status.message, details)
    }
}
