//! The tower services behind the three OTLP/gRPC export methods.
//!
//! Each request is authenticated (its tenant resolved) from the metadata and takes an
//! in-flight slot before a single byte of the message is read: a request without a valid
//! token, or one over the in-flight limit, is answered from its headers alone. Only then does
//! tonic read the message, gunzip it within the message size limit, and hand it over as raw
//! bytes ([`RawCodec`]): `prost` never runs in the transport, the ingest pipeline pre-scans
//! and decodes the bytes itself.

use std::convert::Infallible;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::{Buf as _, Bytes};
use sightline_storage::TenantId;
use tokio::sync::OwnedSemaphorePermit;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{BoxFuture, Context, Poll, Service, StdError, http};
use tonic::server::{NamedService, UnaryService};
use tonic::{Code, Status};

use super::rpc;
use crate::error::IngestError;
use crate::ingest::{Body, Ingest, Outcome};
use crate::otlp::{Encoding, SignalKind};
use crate::telemetry::Transport;

/// One OTLP export method: its names, signal and response.
pub trait Export: Send + Sync + 'static {
    /// The gRPC service name.
    const SERVICE: &'static str;
    /// The method's path.
    const PATH: &'static str;
    /// The signal it carries.
    const SIGNAL: SignalKind;
    /// The response message.
    type Response: prost::Message + Default + Send + 'static;
    /// The response for a stored request.
    fn response(o: Outcome) -> Self::Response;
}

/// Requests as raw bytes, responses encoded with `prost`.
#[derive(Debug)]
pub struct RawCodec<R>(PhantomData<fn() -> R>);

impl<R> Default for RawCodec<R> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

/// [`RawCodec`]'s encoder.
#[derive(Debug)]
pub struct ProtoEncoder<R>(PhantomData<fn() -> R>);

/// [`RawCodec`]'s decoder: the whole message, as it came (decompressed).
#[derive(Debug)]
pub struct RawDecoder;

impl<R: prost::Message + Send + 'static> Codec for RawCodec<R> {
    type Encode = R;
    type Decode = Bytes;
    type Encoder = ProtoEncoder<R>;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProtoEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawDecoder
    }
}

impl<R: prost::Message> Encoder for ProtoEncoder<R> {
    type Item = R;
    type Error = Status;

    fn encode(&mut self, item: R, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("cannot encode the response: {e}")))
    }
}

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// The service of one export method over an [`Ingest`].
pub struct ExportServer<E> {
    ingest: Arc<Ingest>,
    max_message_bytes: usize,
    _export: PhantomData<fn() -> E>,
}

impl<E> ExportServer<E> {
    /// A service writing through `ingest`, accepting messages of up to `max_message_bytes`
    /// (decompressed; gzip accepted).
    pub fn new(ingest: Arc<Ingest>, max_message_bytes: usize) -> Self {
        Self {
            ingest,
            max_message_bytes,
            _export: PhantomData,
        }
    }
}

impl<E> Clone for ExportServer<E> {
    fn clone(&self) -> Self {
        Self::new(Arc::clone(&self.ingest), self.max_message_bytes)
    }
}

impl<E> std::fmt::Debug for ExportServer<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportServer")
            .field("max_message_bytes", &self.max_message_bytes)
            .finish_non_exhaustive()
    }
}

impl<E: Export> NamedService for ExportServer<E> {
    const NAME: &'static str = E::SERVICE;
}

/// The tenant and in-flight slot of a request, from its metadata alone.
fn admit(
    ingest: &Ingest,
    signal: SignalKind,
    headers: &http::HeaderMap,
) -> Result<(TenantId, OwnedSemaphorePermit), IngestError> {
    let refuse = |e: IngestError| {
        ingest.refused(signal, Transport::Grpc, &e);
        e
    };
    let tenant = ingest
        .tenant(
            headers.get("authorization").map(|v| v.as_bytes()),
            headers.get("x-scope-orgid").map(|v| v.as_bytes()),
        )
        .map_err(refuse)?;
    let permit = ingest.admit().map_err(refuse)?;
    Ok((tenant, permit))
}

impl<E, B> Service<http::Request<B>> for ExportServer<E>
where
    E: Export,
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let ingest = Arc::clone(&self.ingest);
        let max = self.max_message_bytes;
        Box::pin(async move {
            if req.uri().path() != E::PATH {
                return Ok(Status::unimplemented("unknown method").into_http());
            }
            let (tenant, permit) = match admit(&ingest, E::SIGNAL, req.headers()) {
                Ok(admitted) => admitted,
                Err(e) => return Ok(rpc::tonic_status(&e).into_http()),
            };
            let method = Unary::<E> {
                ingest,
                admitted: Some((tenant, permit)),
                _export: PhantomData,
            };
            let mut grpc = tonic::server::Grpc::new(RawCodec::<E::Response>::default())
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(max);
            let mut resp = grpc.unary(method, req).await;
            // tonic answers a message whose length prefix is over the limit OUT_OF_RANGE;
            // every other size refusal is RESOURCE_EXHAUSTED, as gRPC servers answer it.
            let out_of_range = http::HeaderValue::from(Code::OutOfRange as i32);
            let headers = resp.headers_mut();
            if headers.get(Status::GRPC_STATUS) == Some(&out_of_range) {
                headers.insert(
                    Status::GRPC_STATUS,
                    http::HeaderValue::from(Code::ResourceExhausted as i32),
                );
            }
            Ok(resp)
        })
    }
}

/// The method body: the admitted request's message through the ingest pipeline.
struct Unary<E> {
    ingest: Arc<Ingest>,
    admitted: Option<(TenantId, OwnedSemaphorePermit)>,
    _export: PhantomData<fn() -> E>,
}

impl<E: Export> UnaryService<Bytes> for Unary<E> {
    type Response = E::Response;
    type Future = BoxFuture<tonic::Response<E::Response>, Status>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let ingest = Arc::clone(&self.ingest);
        let admitted = self.admitted.take();
        Box::pin(async move {
            let Some((tenant, _permit)) = admitted else {
                return Err(Status::internal("request admitted twice"));
            };
            let body = Body {
                bytes: request.into_inner(),
                gzip: false,
                encoding: Encoding::Protobuf,
            };
            let outcome = ingest
                .export(E::SIGNAL, Transport::Grpc, tenant, body)
                .await
                .map_err(|e| rpc::tonic_status(&e))?;
            Ok(tonic::Response::new(E::response(outcome)))
        })
    }
}
