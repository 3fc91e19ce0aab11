//! Flags of the `sightline query` subcommands that take many options.

use clap::Args;

/// Flags of `sightline query aggregate`.
#[derive(Debug, Args)]
pub struct AggregateArgs {
    /// `spans` or `logs`.
    #[arg(long, default_value = "spans")]
    pub signal: String,
    /// Only the last DURATION (e.g. 1h); overrides --start.
    #[arg(long)]
    pub since: Option<String>,
    /// Start (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub start: Option<String>,
    /// End (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub end: Option<String>,
    /// Matcher KEY=VALUE, KEY!=VALUE, KEY=~REGEX or KEY!~REGEX (repeatable), e.g.
    /// gen_ai.request.model=gpt-4o or user.id=~"u-1.*".
    #[arg(long = "match", value_name = "MATCHER")]
    pub matchers: Vec<String>,
    /// Full-text query over log bodies (logs).
    #[arg(long)]
    pub text: Option<String>,
    /// Numeric filter FIELD>VALUE, >=, <, <=, =, != (repeatable); durations take units:
    /// duration>2s.
    #[arg(long = "filter", value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Group-by key (repeatable).
    #[arg(long = "group-by", value_name = "KEY")]
    pub group_by: Vec<String>,
    /// Time bucket (a duration, e.g. 5m).
    #[arg(long)]
    pub bucket: Option<String>,
    /// Aggregate: count, rate, error_ratio, sum:F, avg:F, min:F, max:F, pNN:F (e.g. p99:duration)
    /// or quantile:Q:F (repeatable). None: list rows (needs --limit and --order-by).
    #[arg(long = "agg", value_name = "AGG")]
    pub aggregates: Vec<String>,
    /// Columns of a row listing (repeatable).
    #[arg(long = "column", value_name = "KEY")]
    pub columns: Vec<String>,
    /// Order by an aggregate's position (0-based) or, for row listings, a numeric field.
    #[arg(long)]
    pub order_by: Option<String>,
    /// Descending order.
    #[arg(long)]
    pub desc: bool,
    /// Most rows.
    #[arg(long)]
    pub limit: Option<usize>,
}

/// Flags of `sightline query traces`.
#[derive(Debug, Args)]
pub struct TraceSearchArgs {
    /// Only the last DURATION (e.g. 1h); overrides --start.
    #[arg(long)]
    pub since: Option<String>,
    /// Start (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub start: Option<String>,
    /// End (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub end: Option<String>,
    /// service.name.
    #[arg(long)]
    pub service: Option<String>,
    /// Span name.
    #[arg(long)]
    pub name: Option<String>,
    /// ok, error or unset.
    #[arg(long)]
    pub status: Option<String>,
    /// The request or the response model (gen_ai.request.model, gen_ai.response.model).
    #[arg(long)]
    pub model: Option<String>,
    /// gen_ai.provider.name.
    #[arg(long)]
    pub provider: Option<String>,
    /// gen_ai.operation.name.
    #[arg(long)]
    pub operation: Option<String>,
    /// Shortest duration (e.g. 500ms, 2s).
    #[arg(long)]
    pub min_duration: Option<String>,
    /// Longest duration.
    #[arg(long)]
    pub max_duration: Option<String>,
    /// Attribute matcher KEY=V, KEY!=V, KEY=~RE, KEY!~RE (repeatable).
    #[arg(long = "attr", value_name = "MATCHER")]
    pub attrs: Vec<String>,
    /// A TraceQL filter (subset), e.g. '{ span.gen_ai.request.model = "gpt-4o" && duration > 2s }'.
    #[arg(long)]
    pub traceql: Option<String>,
    /// List matching spans instead of traces.
    #[arg(long)]
    pub spans: bool,
    /// Order: start (newest first) or duration (longest first).
    #[arg(long)]
    pub sort: Option<String>,
    /// Most results [default: 20].
    #[arg(long)]
    pub limit: Option<usize>,
    /// The next page: the cursor the previous page printed (same filters; give --start and
    /// --end rather than --since so that the range stays put).
    #[arg(long)]
    pub cursor: Option<String>,
}

/// Flags of `sightline query logs`.
#[derive(Debug, Args)]
pub struct LogSearchArgs {
    /// Full-text query (words ANDed, "a phrase", a OR b, -excluded, prefix*).
    pub text: Option<String>,
    /// Only the last DURATION [default: the hour before --end].
    #[arg(long)]
    pub since: Option<String>,
    /// Start (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub start: Option<String>,
    /// End (RFC 3339 or Unix seconds) [default: now].
    #[arg(long)]
    pub end: Option<String>,
    /// service.name.
    #[arg(long)]
    pub service: Option<String>,
    /// Exact severity text (ERROR).
    #[arg(long)]
    pub severity: Option<String>,
    /// Minimum severity: a number (1-24) or trace, debug, info, warn, error, fatal.
    #[arg(long)]
    pub min_severity: Option<String>,
    /// Lines of one trace (hex id).
    #[arg(long)]
    pub trace_id: Option<String>,
    /// Attribute matcher KEY=V, KEY!=V, KEY=~RE, KEY!~RE (repeatable).
    #[arg(long = "filter", value_name = "MATCHER")]
    pub filters: Vec<String>,
    /// Oldest first instead of newest first.
    #[arg(long)]
    pub forward: bool,
    /// Most lines [default: 100].
    #[arg(long)]
    pub limit: Option<usize>,
    /// The next page: the cursor the previous page printed (same filters; give --start and
    /// --end rather than --since so that the range stays put).
    #[arg(long)]
    pub cursor: Option<String>,
}

/// Flags of `sightline query provenance` and `sightline query documents`.
#[derive(Debug, Args)]
pub struct ProvenanceArgs {
    /// Only answers whose retrieved context held this document id (provenance).
    #[arg(long)]
    pub document: Option<String>,
    /// Only answers with sentences no document supports (provenance).
    #[arg(long)]
    pub unsupported: bool,
    /// Only answers served on this route (app.route / http.route).
    #[arg(long)]
    pub route: Option<String>,
    /// Only answers made from this prompt template (its name as `--by prompt_template` shows
    /// it).
    #[arg(long)]
    pub prompt_template: Option<String>,
    /// Count the answers per model, route, prompt_template, service or provider
    /// (provenance).
    #[arg(long, value_parser = ["model", "route", "prompt_template", "service", "provider"])]
    pub by: Option<String>,
    /// Only the last DURATION [default: the hour before --end].
    #[arg(long)]
    pub since: Option<String>,
    /// Start (RFC 3339 or Unix seconds).
    #[arg(long)]
    pub start: Option<String>,
    /// End (RFC 3339 or Unix seconds) [default: now].
    #[arg(long)]
    pub end: Option<String>,
    /// service.name.
    #[arg(long)]
    pub service: Option<String>,
    /// The request or the response model (gen_ai.request.model, gen_ai.response.model).
    #[arg(long)]
    pub model: Option<String>,
    /// gen_ai.provider.name.
    #[arg(long)]
    pub provider: Option<String>,
    /// Most rows [default: 100].
    #[arg(long)]
    pub limit: Option<usize>,
}
