//! A TraceQL subset: one spanset filter, `{ cond && cond && ... }`, turned into [`Cond`]s.
//!
//! Supported conditions:
//! * intrinsics `name`, `status` (`error`, `ok`, `unset`), `kind` (`server`, `client`, ...),
//!   `duration` (with a unit: `ns`, `us`, `ms`, `s`, `m`, `h`; the unit table of
//!   [`DurationDialect::TraceQl`]), also spelled `span:name`,
//!   `span:status`, `span:kind`, `span:duration`;
//! * attributes `span.key`, `resource.key` and unscoped `.key`, compared with `=`, `!=`, `=~`,
//!   `!~` against strings (and `true`/`false`), or with `=`, `!=`, `<`, `<=`, `>`, `>=` against
//!   numbers and durations;
//! * `{}` (every span).
//!
//! Anything else fails with [`QueryError::Unsupported`] naming the construct: pipelines (`|`),
//! aggregates (`count()`, `avg()`, ...), structural operators (`>>`, `>`, `~`, `<<` between
//! spansets), spanset operators (`&&`, `||` between spansets), `||` inside a spanset,
//! parentheses, negation, `nil`, and scopes other than span and resource (`event.`, `link.`,
//! `instrumentation.`, `trace:`).
//!
//! Also here: the logfmt `tags` parameter of Tempo's search (`k=v k2="v 2"`), as equality
//! conditions on unscoped keys.

use sightline_storage::MatchOp;

use super::filter::{CmpOp, Cond, DURATION_KEY, Scope};
use crate::error::{QueryError, Result};
use crate::time::DurationDialect;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    LBrace,
    RBrace,
    LParen,
    RParen,
    AndAnd,
    OrOr,
    Pipe,
    Op(&'static str),
    Not,
    Ident(String),
    Str(String),
    Num(f64),
    Duration(f64),
    Comma,
}

fn unsupported(what: impl Into<String>) -> QueryError {
    QueryError::Unsupported(what.into())
}

fn parse_err(what: impl Into<String>) -> QueryError {
    QueryError::Parse(what.into())
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '.'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | ':' | '/')
}

fn lex(src: &str) -> Result<Vec<Tok>> {
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let at = |i: usize| chars.get(i).copied();
    while let Some(c) = at(i) {
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let tok = match two.as_str() {
            "&&" => Some(Tok::AndAnd),
            "||" => Some(Tok::OrOr),
            "=~" => Some(Tok::Op("=~")),
            "!=" => Some(Tok::Op("!=")),
            "!~" => Some(Tok::Op("!~")),
            ">=" => Some(Tok::Op(">=")),
            "<=" => Some(Tok::Op("<=")),
            ">>" => Some(Tok::Op(">>")),
            "<<" => Some(Tok::Op("<<")),
            _ => None,
        };
        if let Some(t) = tok {
            out.push(t);
            i += 2;
            continue;
        }
        match c {
            '{' => out.push(Tok::LBrace),
            '}' => out.push(Tok::RBrace),
            '(' => out.push(Tok::LParen),
            ')' => out.push(Tok::RParen),
            '|' => out.push(Tok::Pipe),
            ',' => out.push(Tok::Comma),
            '=' => out.push(Tok::Op("=")),
            '>' => out.push(Tok::Op(">")),
            '<' => out.push(Tok::Op("<")),
            '~' => out.push(Tok::Op("~")),
            '!' => out.push(Tok::Not),
            '"' | '`' => {
                let quote = c;
                let mut s = String::new();
                i += 1;
                loop {
                    match at(i) {
                        None => return Err(parse_err("unterminated string")),
                        Some(ch) if ch == quote => break,
                        Some('\\') if quote == '"' => {
                            i += 1;
                            match at(i) {
                                Some('n') => s.push('\n'),
                                Some('t') => s.push('\t'),
                                Some(e) => s.push(e),
                                None => return Err(parse_err("unterminated string")),
                            }
                        }
                        Some(ch) => s.push(ch),
                    }
                    i += 1;
                }
                out.push(Tok::Str(s));
            }
            c if c.is_ascii_digit()
                || (c == '-' && at(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                let start = i;
                i += 1;
                while at(i).is_some_and(|d| d.is_ascii_digit() || d == '.' || d == 'e' || d == 'E')
                {
                    i += 1;
                }
                let num: String = chars[start..i].iter().collect();
                let value: f64 = num
                    .parse()
                    .map_err(|_| parse_err(format!("bad number {num:?}")))?;
                let ustart = i;
                while at(i).is_some_and(|d| d.is_alphabetic()) {
                    i += 1;
                }
                let unit: String = chars[ustart..i].iter().collect();
                if unit.is_empty() {
                    out.push(Tok::Num(value));
                } else {
                    let mult = DurationDialect::TraceQl
                        .unit_nanos(&unit)
                        .ok_or_else(|| parse_err(format!("unknown duration unit {unit:?}")))?;
                    out.push(Tok::Duration(value * mult));
                }
                continue;
            }
            c if is_ident_start(c) => {
                let start = i;
                i += 1;
                while let Some(d) = at(i) {
                    if is_ident_char(d) {
                        i += 1;
                    } else if d == '"' && chars.get(i - 1) == Some(&'.') {
                        // span."key with spaces"
                        let mut j = i + 1;
                        while at(j).is_some_and(|x| x != '"') {
                            j += 1;
                        }
                        if at(j).is_none() {
                            return Err(parse_err("unterminated quoted attribute name"));
                        }
                        i = j + 1;
                    } else {
                        break;
                    }
                }
                let raw: String = chars[start..i].iter().collect();
                out.push(Tok::Ident(raw.replace('"', "")));
                continue;
            }
            other => return Err(parse_err(format!("unexpected character {other:?}"))),
        }
        i += 1;
    }
    Ok(out)
}

const AGGREGATES: &[&str] = &[
    "count",
    "avg",
    "min",
    "max",
    "sum",
    "select",
    "by",
    "coalesce",
    "rate",
    "quantile_over_time",
    "count_over_time",
    "histogram_over_time",
    "compare",
    "topk",
    "bottomk",
];

/// Parses a query into the conditions of its single spanset.
pub fn parse(src: &str) -> Result<Vec<Cond>> {
    crate::bounds::check(src, crate::bounds::Language::TraceQl)?;
    let toks = lex(src)?;
    let mut p = Parser { toks, pos: 0 };
    if p.toks.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(Tok::Ident(name)) = p.peek()
        && AGGREGATES.contains(&name.as_str())
    {
        return Err(unsupported(format!("aggregate or function {name}()")));
    }
    p.expect(&Tok::LBrace, "a query starts with `{`")?;
    let mut conds = Vec::new();
    if p.peek() != Some(&Tok::RBrace) {
        loop {
            conds.push(p.cond()?);
            match p.next() {
                Some(Tok::AndAnd) => continue,
                Some(Tok::RBrace) => break,
                Some(Tok::OrOr) => {
                    return Err(unsupported(
                        "`||` inside a spanset (only `&&` of conditions)",
                    ));
                }
                Some(t) => return Err(parse_err(format!("expected `&&` or `}}`, found {t:?}"))),
                None => return Err(parse_err("missing `}`")),
            }
        }
    } else {
        p.pos += 1;
    }
    match p.next() {
        None => Ok(conds),
        Some(Tok::Pipe) => Err(unsupported("pipelines (`|`)")),
        Some(Tok::Op(op @ (">>" | ">" | "<<" | "<" | "~"))) => {
            Err(unsupported(format!("structural operator `{op}`")))
        }
        Some(Tok::Not) => Err(unsupported("structural operators (`!>>`, `!~`, ...)")),
        Some(Tok::AndAnd | Tok::OrOr) => Err(unsupported(
            "spanset operators (`&&`, `||` between `{...}`)",
        )),
        Some(t) => Err(parse_err(format!("unexpected {t:?} after `}}`"))),
    }
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

enum Field {
    Name,
    Status,
    Kind,
    Duration,
    Attr(Scope, String),
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn expect(&mut self, t: &Tok, msg: &str) -> Result<()> {
        if self.next().as_ref() == Some(t) {
            Ok(())
        } else {
            Err(parse_err(msg.to_owned()))
        }
    }

    fn field(&mut self) -> Result<Field> {
        let name = match self.next() {
            Some(Tok::Ident(n)) => n,
            Some(Tok::LParen) => return Err(unsupported("parentheses")),
            Some(Tok::Not) => return Err(unsupported("negation `!`")),
            Some(t) => return Err(parse_err(format!("expected a field, found {t:?}"))),
            None => return Err(parse_err("missing condition")),
        };
        let scoped = |rest: &str, scope: Scope| -> Result<Field> {
            if rest.is_empty() {
                return Err(parse_err(format!("empty attribute name in {name:?}")));
            }
            Ok(Field::Attr(scope, rest.to_owned()))
        };
        if let Some(rest) = name.strip_prefix("resource.") {
            return scoped(rest, Scope::Resource);
        }
        if let Some(rest) = name.strip_prefix("span.") {
            return scoped(rest, Scope::Span);
        }
        if let Some(rest) = name.strip_prefix('.') {
            return scoped(rest, Scope::Any);
        }
        for scope in [
            "event.",
            "link.",
            "instrumentation.",
            "event:",
            "link:",
            "instrumentation:",
            "trace:",
            "resource:",
        ] {
            if name.starts_with(scope) {
                return Err(unsupported(format!("scope `{scope}` ({name})")));
            }
        }
        Ok(match name.trim_start_matches("span:") {
            "name" => Field::Name,
            "status" => Field::Status,
            "kind" => Field::Kind,
            "duration" => Field::Duration,
            n if AGGREGATES.contains(&n) => {
                return Err(unsupported(format!("aggregate or function {n}()")));
            }
            other => {
                return Err(unsupported(format!(
                    "intrinsic {other:?}; attributes need a scope: span.{other}, resource.{other} or .{other}"
                )));
            }
        })
    }

    fn cond(&mut self) -> Result<Cond> {
        let field = self.field()?;
        let op = match self.next() {
            Some(Tok::Op(op)) => op,
            Some(t) => return Err(parse_err(format!("expected an operator, found {t:?}"))),
            None => return Err(parse_err("missing operator")),
        };
        let value = self
            .next()
            .ok_or_else(|| parse_err(format!("missing value after `{op}`")))?;
        if let Tok::Ident(v) = &value
            && v == "nil"
        {
            return Err(unsupported("nil comparisons"));
        }
        match field {
            Field::Status | Field::Kind => {
                let key = if matches!(field, Field::Status) {
                    "status"
                } else {
                    "kind"
                };
                let Tok::Ident(v) = value else {
                    return Err(parse_err(format!(
                        "{key} compares with a keyword, e.g. {key} = error"
                    )));
                };
                let valid: &[&str] = if key == "status" {
                    &["error", "ok", "unset"]
                } else {
                    &[
                        "unspecified",
                        "internal",
                        "server",
                        "client",
                        "producer",
                        "consumer",
                    ]
                };
                if !valid.contains(&v.as_str()) {
                    return Err(parse_err(format!("unknown {key} {v:?}")));
                }
                Cond::string(Scope::Any, key, str_op(op)?, &v)
            }
            Field::Duration => {
                let nanos = match value {
                    Tok::Duration(d) => d,
                    t => {
                        return Err(parse_err(format!(
                            "duration compares with a duration like 2s, found {t:?}"
                        )));
                    }
                };
                Ok(Cond::number(
                    Scope::Any,
                    DURATION_KEY,
                    num_op(op)?,
                    nanos.round(),
                ))
            }
            Field::Name => match value {
                Tok::Str(s) => Cond::string(Scope::Any, "name", str_op(op)?, &s),
                t => Err(parse_err(format!(
                    "name compares with a string, found {t:?}"
                ))),
            },
            Field::Attr(scope, key) => match value {
                Tok::Str(s) => Cond::string(scope, &key, str_op(op)?, &s),
                Tok::Ident(b) if b == "true" || b == "false" => {
                    Cond::string(scope, &key, str_op(op)?, &b)
                }
                Tok::Num(n) | Tok::Duration(n) => Ok(Cond::number(scope, &key, num_op(op)?, n)),
                Tok::Ident(other) => Err(parse_err(format!(
                    "value {other:?} must be quoted (\"{other}\")"
                ))),
                t => Err(parse_err(format!("bad value {t:?}"))),
            },
        }
    }
}

fn str_op(op: &str) -> Result<MatchOp> {
    Ok(match op {
        "=" => MatchOp::Eq,
        "!=" => MatchOp::NotEq,
        "=~" => MatchOp::Regex,
        "!~" => MatchOp::NotRegex,
        other => return Err(unsupported(format!("operator `{other}` on strings"))),
    })
}

fn num_op(op: &str) -> Result<CmpOp> {
    Ok(match op {
        "=" => CmpOp::Eq,
        "!=" => CmpOp::Ne,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::Le,
        ">" => CmpOp::Gt,
        ">=" => CmpOp::Ge,
        other => return Err(unsupported(format!("operator `{other}` on numbers"))),
    })
}

/// Parses Tempo's logfmt `tags` parameter (`service.name=api http.status_code=500
/// msg="two words"`) into equality conditions on unscoped keys.
pub fn parse_tags(src: &str) -> Result<Vec<Cond>> {
    crate::bounds::check(src, crate::bounds::Language::Logfmt)?;
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        let ks = i;
        while i < chars.len() && chars[i] != '=' && !chars[i].is_whitespace() {
            i += 1;
        }
        let key: String = chars[ks..i].iter().collect();
        if i >= chars.len() || chars[i] != '=' || key.is_empty() {
            return Err(parse_err(format!(
                "tags: expected key=value, found {key:?}"
            )));
        }
        i += 1;
        let mut value = String::new();
        if chars.get(i) == Some(&'"') {
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(parse_err("tags: unterminated quoted value")),
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some('\\') => {
                        if let Some(c) = chars.get(i + 1) {
                            value.push(*c);
                        }
                        i += 2;
                    }
                    Some(c) => {
                        value.push(*c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < chars.len() && !chars[i].is_whitespace() {
                value.push(chars[i]);
                i += 1;
            }
        }
        out.push(Cond::string(Scope::Any, &key, MatchOp::Eq, &value)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe(c: &Cond) -> String {
        match c {
            Cond::Str { scope, matcher } => {
                format!(
                    "{scope:?} {} {:?} {}",
                    matcher.key, matcher.op, matcher.value
                )
            }
            Cond::Num {
                scope,
                key,
                op,
                value,
            } => format!("{scope:?} {key} {op:?} {value}"),
            Cond::Any(alternatives) => {
                let parts: Vec<String> = alternatives.iter().map(describe).collect();
                format!("any({})", parts.join(" | "))
            }
        }
    }

    #[test]
    fn parses_the_supported_subset() {
        let q = r#"{ resource.service.name = "x" && span.gen_ai.request.model = "y" && duration > 2s && status = error && name =~ "chat.*" && .http.status_code >= 500 && span.flag != true }"#;
        let got: Vec<String> = parse(q).expect("parses").iter().map(describe).collect();
        assert_eq!(
            got,
            vec![
                "Resource service.name Eq x",
                "Span gen_ai.request.model Eq y",
                "Any duration Gt 2000000000",
                "Any status Eq error",
                "Any name Regex chat.*",
                "Any http.status_code Ge 500",
                "Span flag NotEq true",
            ]
        );
        assert!(parse("{}").expect("empty").is_empty());
        assert!(parse("").expect("blank").is_empty());
        let d = parse("{ span:duration <= 1.5ms }").expect("ok");
        assert_eq!(describe(&d[0]), "Any duration Le 1500000");
    }

    #[test]
    fn rejects_unsupported_constructs_by_name() {
        for (q, needle) in [
            ("{ .a = 1 } | count() > 2", "pipelines"),
            ("{ .a = 1 } >> { .b = 2 }", ">>"),
            ("{ .a = 1 } && { .b = 2 }", "spanset operators"),
            ("{ .a = 1 || .b = 2 }", "||"),
            ("{ (.a = 1) }", "parentheses"),
            ("{ event.name = \"x\" }", "event."),
            ("{ foo = \"x\" }", "attributes need a scope"),
            ("{ .a = nil }", "nil"),
            ("count()", "aggregate"),
            ("{ .a > \"x\" }", "operator `>` on strings"),
        ] {
            let e = parse(q).expect_err(q).to_string();
            assert!(e.contains(needle), "{q}: {e}");
        }
        for q in [
            "{ .a = }",
            "{ .a = \"x\" ",
            "{ duration > 2 }",
            "{ status = bad }",
            "{ .a = 1x }",
        ] {
            assert!(matches!(parse(q), Err(QueryError::Parse(_))), "{q}");
        }
    }

    #[test]
    fn parses_logfmt_tags() {
        let c = parse_tags(r#"service.name=api msg="two words" code=500"#).expect("ok");
        let got: Vec<String> = c.iter().map(describe).collect();
        assert_eq!(
            got,
            vec![
                "Any service.name Eq api",
                "Any msg Eq two words",
                "Any code Eq 500"
            ]
        );
        assert!(parse_tags("novalue").is_err());
        assert!(parse_tags("k=\"open").is_err());
    }
}
