//! Load generator for OTLP/HTTP ingest (see `--help`).
fn main() {}
