//! Tokens of the LogQL subset.

use crate::error::{QueryError, Result};

/// A token.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Str(String),
    Num(f64),
    /// `[range]`, in nanoseconds.
    Duration(i64),
    LBrace,
    RBrace,
    LParen,
    RParen,
    Comma,
    Eq,
    EqEq,
    Ne,
    Re,
    Nre,
    PipeEq,
    PipeRe,
    Pipe,
    Gt,
    Ge,
    Lt,
    Le,
    Plus,
    Minus,
    Star,
    Slash,
}

impl Tok {
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Num(n) => format!("number {n}"),
            Tok::Duration(_) => "a [range]".into(),
            t => format!(
                "`{}`",
                match t {
                    Tok::LBrace => "{",
                    Tok::RBrace => "}",
                    Tok::LParen => "(",
                    Tok::RParen => ")",
                    Tok::Comma => ",",
                    Tok::Eq => "=",
                    Tok::EqEq => "==",
                    Tok::Ne => "!=",
                    Tok::Re => "=~",
                    Tok::Nre => "!~",
                    Tok::PipeEq => "|=",
                    Tok::PipeRe => "|~",
                    Tok::Pipe => "|",
                    Tok::Gt => ">",
                    Tok::Ge => ">=",
                    Tok::Lt => "<",
                    Tok::Le => "<=",
                    Tok::Plus => "+",
                    Tok::Minus => "-",
                    Tok::Star => "*",
                    _ => "/",
                }
            ),
        }
    }
}

/// LogQL durations (`[5m]`, `offset 1h`, `> 250ms`): [`crate::time::DurationDialect::LogQl`],
/// re-exported as `logs::logql::parse_duration`.
pub use crate::time::parse_logql_duration as parse_duration;

pub(crate) fn lex(src: &str) -> Result<Vec<Tok>> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while let Some(c) = at(i) {
        let next = at(i + 1);
        let (tok, len) = match (c, next) {
            (c, _) if c.is_whitespace() => {
                i += 1;
                continue;
            }
            ('#', _) => {
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
                continue;
            }
            ('{', _) => (Tok::LBrace, 1),
            ('}', _) => (Tok::RBrace, 1),
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            (',', _) => (Tok::Comma, 1),
            ('=', Some('~')) => (Tok::Re, 2),
            ('=', Some('=')) => (Tok::EqEq, 2),
            ('=', _) => (Tok::Eq, 1),
            ('!', Some('=')) => (Tok::Ne, 2),
            ('!', Some('~')) => (Tok::Nre, 2),
            ('|', Some('=')) => (Tok::PipeEq, 2),
            ('|', Some('~')) => (Tok::PipeRe, 2),
            ('|', _) => (Tok::Pipe, 1),
            ('>', Some('=')) => (Tok::Ge, 2),
            ('>', _) => (Tok::Gt, 1),
            ('<', Some('=')) => (Tok::Le, 2),
            ('<', _) => (Tok::Lt, 1),
            ('+', _) => (Tok::Plus, 1),
            ('-', _) => (Tok::Minus, 1),
            ('*', _) => (Tok::Star, 1),
            ('/', _) => (Tok::Slash, 1),
            ('[', _) => {
                let end = (i + 1..chars.len())
                    .find(|&j| chars[j] == ']')
                    .ok_or_else(|| QueryError::Parse("unclosed [range]".into()))?;
                let text: String = chars[i + 1..end].iter().collect();
                (Tok::Duration(parse_duration(&text)?), end + 1 - i)
            }
            ('"', _) => {
                let mut s = String::new();
                let mut j = i + 1;
                loop {
                    match at(j) {
                        None => return Err(QueryError::Parse("unterminated string".into())),
                        Some('"') => break,
                        Some('\\') => {
                            let e = at(j + 1)
                                .ok_or_else(|| QueryError::Parse("unterminated string".into()))?;
                            match e {
                                'n' => s.push('\n'),
                                't' => s.push('\t'),
                                'r' => s.push('\r'),
                                '\\' => s.push('\\'),
                                '"' => s.push('"'),
                                '\'' => s.push('\''),
                                'u' => {
                                    let hex: String = chars
                                        .get(j + 2..j + 6)
                                        .ok_or_else(|| QueryError::Parse("bad \\u escape".into()))?
                                        .iter()
                                        .collect();
                                    let ch = u32::from_str_radix(&hex, 16)
                                        .ok()
                                        .and_then(char::from_u32)
                                        .ok_or_else(|| {
                                            QueryError::Parse("bad \\u escape".into())
                                        })?;
                                    s.push(ch);
                                    j += 4;
                                }
                                // Regex escapes like `\.` or `\d` inside double quotes are
                                // kept (Loki users write them routinely).
                                other => {
                                    s.push('\\');
                                    s.push(other);
                                }
                            }
                            j += 2;
                        }
                        Some(ch) => {
                            s.push(ch);
                            j += 1;
                        }
                    }
                }
                (Tok::Str(s), j + 1 - i)
            }
            ('`', _) => {
                let end = (i + 1..chars.len())
                    .find(|&j| chars[j] == '`')
                    .ok_or_else(|| QueryError::Parse("unterminated raw string".into()))?;
                (Tok::Str(chars[i + 1..end].iter().collect()), end + 1 - i)
            }
            (c, _)
                if c.is_ascii_digit() || (c == '.' && next.is_some_and(|n| n.is_ascii_digit())) =>
            {
                let mut j = i;
                while at(j).is_some_and(|c| c.is_ascii_alphanumeric() || c == '.') {
                    j += 1;
                }
                let text: String = chars[i..j].iter().collect();
                // A number, or a bare duration (`offset 1h`, `| latency > 250ms`).
                let tok = match text.parse::<f64>() {
                    Ok(n) => Tok::Num(n),
                    Err(_) => Tok::Duration(parse_duration(&text).map_err(|_| {
                        QueryError::Parse(format!("bad number or duration {text:?}"))
                    })?),
                };
                (tok, j - i)
            }
            (c, _) if c.is_ascii_alphabetic() || c == '_' => {
                let mut j = i;
                while at(j).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    j += 1;
                }
                (Tok::Ident(chars[i..j].iter().collect()), j - i)
            }
            (c, _) => return Err(QueryError::Parse(format!("unexpected character {c:?}"))),
        };
        out.push(tok);
        i += len;
    }
    Ok(out)
}
