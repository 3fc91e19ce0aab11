//! A LogQL subset: the AST and its parser. Evaluation lives in [`eval`].
//!
//! Supported:
//! * stream selectors `{service_name="api", level=~"err.*"}` with `=`, `!=`, `=~`, `!~`
//!   (regexes anchored, as in Loki);
//! * line filters `|= "x"`, `!= "x"`, `|~ "re"`, `!~ "re"` (substring / unanchored regex),
//!   chained;
//! * parsers `| json` and `| logfmt` (no parameters), label filters `| name="v"` (also `!=`,
//!   `=~`, `!~`, and numeric `>`, `>=`, `<`, `<=`, `==`), `| drop a, b` and `| keep a, b`;
//! * range aggregations `count_over_time`, `rate`, `bytes_over_time`, `bytes_rate` over
//!   `[range]`;
//! * vector aggregations `sum`, `count`, `min`, `max`, `avg`, `topk`, `bottomk` with
//!   `by (...)` / `without (...)` before or after the parentheses;
//! * `vector(n)`, number literals and `+ - * /` between them and metric queries (Grafana's
//!   health check is `vector(1)+vector(1)`).
//!
//! Anything else is a [`QueryError::Unsupported`] (or [`QueryError::Parse`]) naming the construct.

pub mod eval;
mod lexer;
mod pipeline;

use sightline_storage::{MatchOp, Matcher};

use crate::error::{QueryError, Result};
pub use lexer::parse_duration;
use lexer::{Tok, lex};

/// A parsed query.
#[derive(Clone, Debug)]
pub enum Expr {
    /// Returns log lines.
    Log(LogExpr),
    /// Returns samples.
    Metric(MetricExpr),
}

/// Selector plus pipeline.
#[derive(Clone, Debug)]
pub struct LogExpr {
    /// Stream label matchers.
    pub selector: Vec<Matcher>,
    /// Stages in order.
    pub stages: Vec<Stage>,
}

/// A line filter operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineOp {
    /// `|=`
    Contains,
    /// `!=`
    NotContains,
    /// `|~`
    Matches,
    /// `!~`
    NotMatches,
}

/// A numeric comparison of a label filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumOp {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=` with a number
    Ne,
}

/// One pipeline stage.
#[derive(Clone, Debug)]
pub enum Stage {
    /// A line filter.
    Line {
        /// Operator.
        op: LineOp,
        /// Literal text (for `|=`, `!=`).
        text: String,
        /// Compiled regex (for `|~`, `!~`).
        re: Option<regex::Regex>,
    },
    /// `| json`: the line's JSON object fields become labels (nested keys joined with `_`).
    Json,
    /// `| logfmt`: the line's `key=value` pairs become labels.
    Logfmt,
    /// `| name op "value"` (string comparison, missing label = `""`).
    LabelMatch(Matcher),
    /// `| name op number`.
    LabelNum {
        /// Label name.
        name: String,
        /// Comparison.
        op: NumOp,
        /// Right-hand side.
        value: f64,
    },
    /// `| drop a, b`.
    Drop(Vec<String>),
    /// `| keep a, b`.
    Keep(Vec<String>),
}

/// A range aggregation function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeFunc {
    /// Lines in the window.
    CountOverTime,
    /// Lines per second.
    Rate,
    /// Body bytes in the window.
    BytesOverTime,
    /// Body bytes per second.
    BytesRate,
}

impl RangeFunc {
    /// Whether the sum of its values over series equals its value over their lines taken
    /// together (it counts lines or adds their bytes), so `sum by (g) (f(...))` can group
    /// lines by `g` as it reads them instead of keeping every series.
    pub fn is_additive(self) -> bool {
        match self {
            RangeFunc::CountOverTime
            | RangeFunc::Rate
            | RangeFunc::BytesOverTime
            | RangeFunc::BytesRate => true,
        }
    }
}

/// A vector aggregation operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggOp {
    /// `sum`
    Sum,
    /// `count`
    Count,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `avg`
    Avg,
    /// `topk`
    Topk,
    /// `bottomk`
    Bottomk,
}

/// `by (...)` or `without (...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// Keep only these labels.
    By(Vec<String>),
    /// Drop these labels.
    Without(Vec<String>),
}

/// An arithmetic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

/// A metric query.
#[derive(Clone, Debug)]
pub enum MetricExpr {
    /// `func(log_expr [range])`.
    Range {
        /// Function.
        func: RangeFunc,
        /// Lines counted.
        log: LogExpr,
        /// Window length in nanoseconds.
        range_ns: i64,
    },
    /// `op [grouping] ([k,] inner)`.
    Agg {
        /// Operator.
        op: AggOp,
        /// `k` of topk/bottomk.
        param: Option<f64>,
        /// Grouping (none = everything in one group).
        grouping: Option<Grouping>,
        /// Aggregated expression.
        inner: Box<MetricExpr>,
    },
    /// `vector(n)`: one series without labels.
    Vector(f64),
    /// A number literal.
    Number(f64),
    /// `lhs op rhs`.
    Binary {
        /// Operator.
        op: BinOp,
        /// Left side.
        lhs: Box<MetricExpr>,
        /// Right side.
        rhs: Box<MetricExpr>,
    },
}

/// Parses a LogQL query. The text must pass [`crate::bounds::check`] first (length,
/// nesting, operators and stages), which bounds the recursion of the parser and evaluator.
pub fn parse(query: &str) -> Result<Expr> {
    crate::bounds::check(query, crate::bounds::Language::LogQl)?;
    let toks = lex(query)?;
    let mut p = Parser { toks, pos: 0 };
    let e = if matches!(p.peek(), Some(Tok::LBrace)) {
        Expr::Log(p.log_expr()?)
    } else {
        Expr::Metric(p.metric_expr()?)
    };
    match p.peek() {
        None => Ok(e),
        Some(t) => Err(QueryError::Parse(format!(
            "unexpected {} at end of query",
            t.describe()
        ))),
    }
}

/// Parses a stream selector alone (`{a="b"}`); an empty string selects everything.
pub fn parse_selector(text: &str) -> Result<Vec<Matcher>> {
    crate::bounds::check(text, crate::bounds::Language::LogQl)?;
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    match parse(text)? {
        Expr::Log(l) => Ok(l.selector),
        Expr::Metric(_) => Err(QueryError::BadRequest(
            "expected a stream selector, got a metric query".into(),
        )),
    }
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

const UNSUPPORTED_STAGES: &[&str] = &[
    "line_format",
    "label_format",
    "pattern",
    "regexp",
    "unpack",
    "unwrap",
    "decolorize",
    "distinct",
];

const UNSUPPORTED_FUNCS: &[&str] = &[
    "sum_over_time",
    "avg_over_time",
    "min_over_time",
    "max_over_time",
    "stddev_over_time",
    "stdvar_over_time",
    "quantile_over_time",
    "first_over_time",
    "last_over_time",
    "absent_over_time",
    "rate_counter",
    "stddev",
    "stdvar",
    "sort",
    "sort_desc",
    "label_replace",
    "approx_topk",
];

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_at(&self, n: usize) -> Option<&Tok> {
        self.toks.get(self.pos + n)
    }

    fn next(&mut self) -> Result<Tok> {
        let t = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or_else(|| QueryError::Parse("unexpected end of query".into()))?;
        self.pos += 1;
        Ok(t)
    }

    fn expect(&mut self, want: &Tok) -> Result<()> {
        let t = self.next()?;
        if &t == want {
            Ok(())
        } else {
            Err(QueryError::Parse(format!(
                "expected {}, found {}",
                want.describe(),
                t.describe()
            )))
        }
    }

    fn ident(&mut self) -> Result<String> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            t => Err(QueryError::Parse(format!(
                "expected a label name, found {}",
                t.describe()
            ))),
        }
    }

    fn string(&mut self) -> Result<String> {
        match self.next()? {
            Tok::Str(s) => Ok(s),
            t => Err(QueryError::Parse(format!(
                "expected a string, found {}",
                t.describe()
            ))),
        }
    }

    fn log_expr(&mut self) -> Result<LogExpr> {
        self.expect(&Tok::LBrace)?;
        let mut selector = Vec::new();
        if !matches!(self.peek(), Some(Tok::RBrace)) {
            loop {
                let name = self.ident()?;
                let op = match self.next()? {
                    Tok::Eq => MatchOp::Eq,
                    Tok::Ne => MatchOp::NotEq,
                    Tok::Re => MatchOp::Regex,
                    Tok::Nre => MatchOp::NotRegex,
                    t => {
                        return Err(QueryError::Parse(format!(
                            "expected =, !=, =~ or !~ after {name}, found {}",
                            t.describe()
                        )));
                    }
                };
                let value = self.string()?;
                selector.push(matcher(name, op, value)?);
                if matches!(self.peek(), Some(Tok::Comma)) {
                    self.pos += 1;
                    continue;
                }
                break;
            }
        }
        self.expect(&Tok::RBrace)?;
        let mut stages = Vec::new();
        loop {
            let op = match self.peek() {
                Some(Tok::PipeEq) => LineOp::Contains,
                Some(Tok::Ne) => LineOp::NotContains,
                Some(Tok::PipeRe) => LineOp::Matches,
                Some(Tok::Nre) => LineOp::NotMatches,
                Some(Tok::Pipe) => {
                    self.pos += 1;
                    stages.push(self.pipe_stage()?);
                    continue;
                }
                _ => break,
            };
            self.pos += 1;
            let text = self.string()?;
            if matches!(self.peek(), Some(Tok::Ident(s)) if s == "or") {
                return Err(QueryError::Unsupported(
                    "`or` between line filters is not supported".into(),
                ));
            }
            let re = match op {
                LineOp::Matches | LineOp::NotMatches => Some(
                    regex::RegexBuilder::new(&text)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| QueryError::Parse(format!("bad regex {text:?}: {e}")))?,
                ),
                _ => None,
            };
            stages.push(Stage::Line { op, text, re });
        }
        Ok(LogExpr { selector, stages })
    }

    fn pipe_stage(&mut self) -> Result<Stage> {
        let name = self.ident()?;
        match name.as_str() {
            "json" | "logfmt" => {
                if matches!(self.peek(), Some(Tok::Ident(_)))
                    && matches!(self.peek_at(1), Some(Tok::Eq | Tok::Comma))
                {
                    return Err(QueryError::Unsupported(format!(
                        "`| {name}` with parameters is not supported (use `| {name}` alone)"
                    )));
                }
                if name == "logfmt" && matches!(self.peek(), Some(Tok::Minus)) {
                    return Err(QueryError::Unsupported(
                        "`| logfmt` flags are not supported".into(),
                    ));
                }
                Ok(if name == "json" {
                    Stage::Json
                } else {
                    Stage::Logfmt
                })
            }
            "drop" | "keep" => {
                let mut names = vec![self.ident()?];
                while matches!(self.peek(), Some(Tok::Comma)) {
                    self.pos += 1;
                    names.push(self.ident()?);
                }
                if matches!(self.peek(), Some(Tok::Eq | Tok::Ne | Tok::Re | Tok::Nre)) {
                    return Err(QueryError::Unsupported(format!(
                        "`| {name}` with label matchers is not supported (name labels only)"
                    )));
                }
                Ok(if name == "drop" {
                    Stage::Drop(names)
                } else {
                    Stage::Keep(names)
                })
            }
            s if UNSUPPORTED_STAGES.contains(&s) => Err(QueryError::Unsupported(format!(
                "the `| {s}` stage is not supported"
            ))),
            _ => {
                let t = self.next()?;
                let num_op = match &t {
                    Tok::Gt => Some(NumOp::Gt),
                    Tok::Ge => Some(NumOp::Ge),
                    Tok::Lt => Some(NumOp::Lt),
                    Tok::Le => Some(NumOp::Le),
                    Tok::EqEq => Some(NumOp::Eq),
                    _ => None,
                };
                let str_op = match &t {
                    Tok::Eq => Some(MatchOp::Eq),
                    Tok::Ne => Some(MatchOp::NotEq),
                    Tok::Re => Some(MatchOp::Regex),
                    Tok::Nre => Some(MatchOp::NotRegex),
                    _ => None,
                };
                match (self.next()?, num_op, str_op) {
                    (Tok::Str(v), None, Some(op)) => Ok(Stage::LabelMatch(matcher(name, op, v)?)),
                    (Tok::Num(v), Some(op), _) => Ok(Stage::LabelNum { name, op, value: v }),
                    (Tok::Num(v), None, Some(MatchOp::Eq)) => Ok(Stage::LabelNum {
                        name,
                        op: NumOp::Eq,
                        value: v,
                    }),
                    (Tok::Num(v), None, Some(MatchOp::NotEq)) => Ok(Stage::LabelNum {
                        name,
                        op: NumOp::Ne,
                        value: v,
                    }),
                    (Tok::Duration(_), _, _) | (Tok::Ident(_), _, _) => {
                        Err(QueryError::Unsupported(format!(
                            "label filter on {name:?}: only string and number comparisons are supported"
                        )))
                    }
                    (v, _, _) => Err(QueryError::Parse(format!(
                        "bad label filter on {name:?}: {} {}",
                        t.describe(),
                        v.describe()
                    ))),
                }
            }
        }
    }

    fn metric_expr(&mut self) -> Result<MetricExpr> {
        let mut lhs = self.metric_term()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Plus) => BinOp::Add,
                Some(Tok::Minus) => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.metric_term()?;
            lhs = MetricExpr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
    }

    fn metric_term(&mut self) -> Result<MetricExpr> {
        let mut lhs = self.metric_atom()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Star) => BinOp::Mul,
                Some(Tok::Slash) => BinOp::Div,
                Some(Tok::Ident(s)) if matches!(s.as_str(), "and" | "or" | "unless") => {
                    return Err(QueryError::Unsupported(format!(
                        "the set operator `{s}` is not supported"
                    )));
                }
                Some(t @ (Tok::Gt | Tok::Ge | Tok::Lt | Tok::Le | Tok::EqEq | Tok::Ne)) => {
                    return Err(QueryError::Unsupported(format!(
                        "comparison operator {} between metric queries is not supported",
                        t.describe()
                    )));
                }
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.metric_atom()?;
            lhs = MetricExpr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
    }

    fn metric_atom(&mut self) -> Result<MetricExpr> {
        match self.next()? {
            Tok::Num(n) => Ok(MetricExpr::Number(n)),
            Tok::LParen => {
                let e = self.metric_expr()?;
                self.expect(&Tok::RParen)?;
                Ok(e)
            }
            Tok::LBrace => Err(QueryError::BadRequest(
                "a log query cannot be combined with metric operators".into(),
            )),
            Tok::Ident(name) => self.call(name),
            t => Err(QueryError::Parse(format!("unexpected {}", t.describe()))),
        }
    }

    fn call(&mut self, name: String) -> Result<MetricExpr> {
        let range = match name.as_str() {
            "count_over_time" => Some(RangeFunc::CountOverTime),
            "rate" => Some(RangeFunc::Rate),
            "bytes_over_time" => Some(RangeFunc::BytesOverTime),
            "bytes_rate" => Some(RangeFunc::BytesRate),
            _ => None,
        };
        if let Some(func) = range {
            self.expect(&Tok::LParen)?;
            if !matches!(self.peek(), Some(Tok::LBrace)) {
                return Err(QueryError::Parse(format!(
                    "{name} expects a log query with a [range]"
                )));
            }
            let log = self.log_expr()?;
            let range_ns = match self.next()? {
                Tok::Duration(d) => d,
                t => {
                    return Err(QueryError::Parse(format!(
                        "expected [range] in {name}, found {}",
                        t.describe()
                    )));
                }
            };
            if matches!(self.peek(), Some(Tok::Ident(s)) if s == "offset") {
                return Err(QueryError::Unsupported("`offset` is not supported".into()));
            }
            self.expect(&Tok::RParen)?;
            return Ok(MetricExpr::Range {
                func,
                log,
                range_ns,
            });
        }
        let agg = match name.as_str() {
            "sum" => Some(AggOp::Sum),
            "count" => Some(AggOp::Count),
            "min" => Some(AggOp::Min),
            "max" => Some(AggOp::Max),
            "avg" => Some(AggOp::Avg),
            "topk" => Some(AggOp::Topk),
            "bottomk" => Some(AggOp::Bottomk),
            _ => None,
        };
        if let Some(op) = agg {
            let mut grouping = self.grouping()?;
            self.expect(&Tok::LParen)?;
            let param = if matches!(op, AggOp::Topk | AggOp::Bottomk) {
                let k = match self.next()? {
                    Tok::Num(k) if k >= 1.0 && k.fract() == 0.0 => k,
                    t => {
                        return Err(QueryError::Parse(format!(
                            "{name} expects a positive integer k, found {}",
                            t.describe()
                        )));
                    }
                };
                self.expect(&Tok::Comma)?;
                Some(k)
            } else {
                None
            };
            let inner = self.metric_expr()?;
            self.expect(&Tok::RParen)?;
            if grouping.is_none() {
                grouping = self.grouping()?;
            }
            return Ok(MetricExpr::Agg {
                op,
                param,
                grouping,
                inner: Box::new(inner),
            });
        }
        if name == "vector" {
            self.expect(&Tok::LParen)?;
            let v = match self.next()? {
                Tok::Num(n) => n,
                t => {
                    return Err(QueryError::Parse(format!(
                        "vector() expects a number, found {}",
                        t.describe()
                    )));
                }
            };
            self.expect(&Tok::RParen)?;
            return Ok(MetricExpr::Vector(v));
        }
        if UNSUPPORTED_FUNCS.contains(&name.as_str()) {
            return Err(QueryError::Unsupported(format!(
                "the function `{name}` is not supported"
            )));
        }
        Err(QueryError::Parse(format!(
            "unknown function or keyword `{name}`"
        )))
    }

    fn grouping(&mut self) -> Result<Option<Grouping>> {
        let by = match self.peek() {
            Some(Tok::Ident(s)) if s == "by" => true,
            Some(Tok::Ident(s)) if s == "without" => false,
            _ => return Ok(None),
        };
        self.pos += 1;
        self.expect(&Tok::LParen)?;
        let mut names = Vec::new();
        while !matches!(self.peek(), Some(Tok::RParen)) {
            names.push(self.ident()?);
            if matches!(self.peek(), Some(Tok::Comma)) {
                self.pos += 1;
            }
        }
        self.expect(&Tok::RParen)?;
        Ok(Some(if by {
            Grouping::By(names)
        } else {
            Grouping::Without(names)
        }))
    }
}

fn matcher(name: String, op: MatchOp, value: String) -> Result<Matcher> {
    Matcher::new(name, op, value).map_err(|e| QueryError::Parse(e.to_string()))
}

#[cfg(test)]
mod tests;
