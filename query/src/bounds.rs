//! Size limits every query text passes before any recursive code sees it.
//!
//! Parsers (promql-parser's, and the LogQL one here), the evaluators and promql-parser's
//! `prettify` all recurse over the syntax tree, so a tree as deep as a request is long would
//! overflow the thread's stack and abort the process. [`check`] measures the text with one
//! loop (no recursion, no allocation) and refuses it with [`QueryError::Parse`] when it is too
//! long, nests brackets too deeply, or chains too many operators (`a+b+c+...` parses into a
//! left-deep tree as deep as the chain is long). A text within all three limits yields a tree
//! at most about [`MAX_DEPTH`] + [`MAX_OPERATORS`] levels deep, which every recursive pass
//! walks on a small stack: `query/tests/integration/bounds.rs` runs every parser, evaluator and
//! `prettify` on the largest accepted inputs on a thread with a [`SAFE_STACK_BYTES`] stack.

use crate::error::{QueryError, Result};

/// Longest query text accepted, in bytes.
pub const MAX_QUERY_LEN: usize = 64 * 1024;

/// Deepest bracket nesting accepted (`(`, `[` and `{` together, outside string literals).
pub const MAX_DEPTH: usize = 64;

/// Most operators accepted in one query: binary operators (PromQL's and LogQL's arithmetic,
/// comparison and set operators, `atan2`, TraceQL's `&&` and `||`), unary signs, range and
/// subquery brackets in PromQL, and pipeline stages (`|`, `|=`, `!=`, `|~`, `!~` in LogQL, `|`
/// in TraceQL). Counting errs on the side of more (a `-` inside a number's exponent counts).
pub const MAX_OPERATORS: usize = 512;

/// The thread stack on which `query/tests/integration/bounds.rs` runs every parser, evaluator
/// and `prettify` on the largest inputs these limits admit. In the test build (opt-level 1)
/// the deepest of them needs about 352 KiB, so this leaves room to spare; release builds need
/// less. Threads that run queries must have at least this much (Rust's spawned threads and
/// tokio's blocking pool get 2 MiB).
pub const SAFE_STACK_BYTES: usize = 512 * 1024;

/// The query languages [`check`] knows the quoting and operators of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// PromQL: `"..."`, `'...'` and `` `...` `` strings (backslash escapes in all three, as
    /// promql-parser lexes them), `#` comments to the end of the line.
    PromQl,
    /// LogQL: `"..."` strings with escapes, `` `...` `` raw strings, `#` comments.
    LogQl,
    /// TraceQL: `"..."` strings with escapes, `` `...` `` raw strings, and `span."a b"`
    /// quoted attribute names (no escapes).
    TraceQl,
    /// Tempo's logfmt `tags` (`k=v k2="v 2"`): flat, so only the length is limited.
    Logfmt,
}

/// What [`measure`] found in a query text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measure {
    /// Length in bytes.
    pub len: usize,
    /// Deepest bracket nesting outside string literals and comments.
    pub depth: usize,
    /// Operators and pipeline stages outside string literals and comments (see
    /// [`MAX_OPERATORS`]).
    pub operators: usize,
}

/// Refuses `text` with [`QueryError::Parse`] naming the limit it exceeds: longer than
/// [`MAX_QUERY_LEN`], nested deeper than [`MAX_DEPTH`], or with more than [`MAX_OPERATORS`]
/// operators.
pub fn check(text: &str, lang: Language) -> Result<()> {
    if text.len() > MAX_QUERY_LEN {
        return Err(QueryError::Parse(format!(
            "query is {} bytes long; the limit is {MAX_QUERY_LEN}",
            text.len()
        )));
    }
    let m = measure(text, lang);
    if m.depth > MAX_DEPTH {
        return Err(QueryError::Parse(format!(
            "query nests {} levels deep; the limit is {MAX_DEPTH}",
            m.depth
        )));
    }
    if m.operators > MAX_OPERATORS {
        return Err(QueryError::Parse(format!(
            "query has {} operators or pipeline stages; the limit is {MAX_OPERATORS}",
            m.operators
        )));
    }
    Ok(())
}

/// Measures `text` in one pass without recursion. An unterminated string literal ends the
/// scan (the language's lexer refuses such a text anyway).
pub fn measure(text: &str, lang: Language) -> Measure {
    let b = text.as_bytes();
    let mut m = Measure {
        len: b.len(),
        ..Measure::default()
    };
    if lang == Language::Logfmt {
        return m;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' | b'`' if is_quote(lang, c) => {
                // A TraceQL attribute name quoted after its `.` has no escapes.
                let escapes = match lang {
                    Language::PromQl => true,
                    _ => c == b'"' && !(lang == Language::TraceQl && i > 0 && b[i - 1] == b'.'),
                };
                match string_end(b, i + 1, c, escapes) {
                    Some(end) => i = end,
                    None => break,
                }
            }
            b'#' if lang != Language::TraceQl => {
                while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                m.depth = m.depth.max(depth);
                if c == b'[' && lang == Language::PromQl {
                    m.operators += 1;
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i + 1 < b.len() && is_word(b[i + 1]) {
                    i += 1;
                }
                if lang != Language::TraceQl && is_keyword_operator(lang, &b[start..=i]) {
                    m.operators += 1;
                }
            }
            _ => {
                if let Some(len) = operator_len(lang, b, i) {
                    m.operators += 1;
                    i += len - 1;
                }
            }
        }
        i += 1;
    }
    m
}

fn is_quote(lang: Language, c: u8) -> bool {
    c == b'"' || c == b'`' || (c == b'\'' && lang == Language::PromQl)
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

/// The index of the closing quote of a string opened before `from`.
fn string_end(b: &[u8], from: usize, quote: u8, escapes: bool) -> Option<usize> {
    let mut j = from;
    while j < b.len() {
        if escapes && b[j] == b'\\' {
            j += 2;
            continue;
        }
        if b[j] == quote {
            return Some(j);
        }
        j += 1;
    }
    None
}

fn is_keyword_operator(lang: Language, word: &[u8]) -> bool {
    let any = |ks: &[&str]| ks.iter().any(|k| word.eq_ignore_ascii_case(k.as_bytes()));
    match lang {
        Language::PromQl => any(&["and", "or", "unless", "atan2"]),
        Language::LogQl => any(&["and", "or", "unless"]),
        Language::TraceQl | Language::Logfmt => false,
    }
}

/// The byte length of the operator starting at `i`, if one does.
fn operator_len(lang: Language, b: &[u8], i: usize) -> Option<usize> {
    let next = b.get(i + 1).copied();
    match lang {
        Language::PromQl | Language::LogQl => match (b[i], next) {
            (b'=', Some(b'=')) | (b'!' | b'<' | b'>' | b'|', Some(b'=' | b'~')) => Some(2),
            (b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'<' | b'>' | b'!' | b'|', _) => Some(1),
            _ => None,
        },
        Language::TraceQl => match (b[i], next) {
            (b'&', Some(b'&')) | (b'|', Some(b'|')) => Some(2),
            (b'|', _) => Some(1),
            _ => None,
        },
        Language::Logfmt => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(text: &str, lang: Language) -> (usize, usize) {
        let r = measure(text, lang);
        (r.depth, r.operators)
    }

    #[test]
    fn counts_depth_and_operators_outside_strings() {
        assert_eq!(
            m(
                r#"sum by (job) (rate(x{a="((("}[5m])) + 1"#,
                Language::PromQl
            ),
            (3, 2)
        );
        assert_eq!(m("a and b OR c unless d", Language::PromQl), (0, 3));
        assert_eq!(m("atan2(a, b) / c", Language::PromQl), (1, 2));
        assert_eq!(m(r#"x{a='(\'('} # ((((( "#, Language::PromQl), (1, 0));
        assert_eq!(
            m(
                r#"{app="a"} |= "x" != `y(` | json | level!="err""#,
                Language::LogQl
            ),
            (1, 5)
        );
        assert_eq!(
            m(
                r#"{ span.a = "&&" && .b = 1 || x } | count()"#,
                Language::TraceQl
            ),
            (1, 3)
        );
        assert_eq!(m(r#"{ span."a\" = 1 && (( }"#, Language::TraceQl), (3, 1));
    }

    #[test]
    fn a_comment_does_not_open_a_string() {
        assert_eq!(m("# \"\n((((1))))", Language::LogQl), (4, 0));
        assert_eq!(m("# '\n((((1))))", Language::PromQl), (4, 0));
    }

    #[test]
    fn refuses_each_limit_with_a_message_naming_it() {
        let deep = format!("{}1{}", "(".repeat(65), ")".repeat(65));
        let chain = vec!["1"; 514].join("+");
        let long = "x".repeat(MAX_QUERY_LEN + 1);
        for (text, want) in [
            (deep, "query nests 65 levels deep; the limit is 64"),
            (
                chain,
                "query has 513 operators or pipeline stages; the limit is 512",
            ),
            (long, "query is 65537 bytes long; the limit is 65536"),
        ] {
            match check(&text, Language::PromQl) {
                Err(QueryError::Parse(msg)) => assert_eq!(msg, want),
                other => panic!("{want}: {other:?}"),
            }
        }
        let at_limit = format!("{}1{}", "(".repeat(64), ")".repeat(64));
        assert!(check(&at_limit, Language::PromQl).is_ok());
        assert!(check(&vec!["1"; 513].join("+"), Language::PromQl).is_ok());
        assert!(check(&"((".repeat(1000), Language::Logfmt).is_ok());
    }
}
