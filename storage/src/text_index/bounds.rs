//! Size limits checked on a full-text query before tantivy parses it. Tantivy's query parser
//! recurses once per parenthesis and per `NOT`, so a deeply nested query would overflow the
//! stack of the thread parsing it and abort the process; these checks make such a query an
//! [`StorageError::InvalidQuery`] instead.

use crate::error::{Result, StorageError};

/// Longest full-text query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;

/// Deepest nesting of parentheses accepted outside quoted phrases.
pub const MAX_QUERY_DEPTH: usize = 32;

/// Most terms, phrases and operators (`AND`, `OR`, `NOT`, ...) accepted outside quoted phrases;
/// a phrase counts as one.
pub const MAX_QUERY_CLAUSES: usize = 256;

/// Deepest nesting of parentheses accepted anywhere in the query, inside phrases included.
/// A safety net under [`MAX_QUERY_DEPTH`] for constructs where tantivy and this check might
/// disagree on where a phrase begins (quotes inside ranges or regular expressions); tantivy
/// parses at least eight times this depth on a 256 KiB stack.
pub const MAX_QUERY_RAW_DEPTH: usize = 2 * MAX_QUERY_DEPTH;

fn refuse(what: String) -> StorageError {
    StorageError::InvalidQuery(format!("full-text query {what}"))
}

/// Refuses `query` if it passes any of the limits above.
pub(crate) fn check(query: &str) -> Result<()> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(refuse(format!(
            "is {} bytes long; the limit is {MAX_QUERY_BYTES} bytes",
            query.len()
        )));
    }
    let mut phrase: Option<char> = None;
    let mut escaped = false;
    let mut in_token = false;
    let (mut depth, mut max_depth) = (0usize, 0usize);
    let (mut raw_depth, mut max_raw_depth) = (0usize, 0usize);
    let mut clauses = 0usize;
    for c in query.chars() {
        // Every parenthesis counts towards the raw depth, escaped or quoted or not.
        match c {
            '(' => {
                raw_depth += 1;
                max_raw_depth = max_raw_depth.max(raw_depth);
            }
            ')' => raw_depth = raw_depth.saturating_sub(1),
            _ => {}
        }
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            if phrase.is_none() && !in_token {
                in_token = true;
                clauses += 1;
            }
            continue;
        }
        if let Some(delim) = phrase {
            if c == delim {
                phrase = None;
            }
            continue;
        }
        match c {
            '(' => {
                in_token = false;
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            ')' => {
                in_token = false;
                depth = depth.saturating_sub(1);
            }
            '"' | '\'' if !in_token => {
                phrase = Some(c);
                clauses += 1;
            }
            c if c.is_whitespace() => in_token = false,
            _ => {
                if !in_token {
                    in_token = true;
                    clauses += 1;
                }
            }
        }
    }
    if max_depth > MAX_QUERY_DEPTH {
        return Err(refuse(format!(
            "nests parentheses {max_depth} deep; the limit is {MAX_QUERY_DEPTH}"
        )));
    }
    if max_raw_depth > MAX_QUERY_RAW_DEPTH {
        return Err(refuse(format!(
            "nests parentheses {max_raw_depth} deep counting those inside phrases; the limit is \
             {MAX_QUERY_RAW_DEPTH}"
        )));
    }
    if clauses > MAX_QUERY_CLAUSES {
        return Err(refuse(format!(
            "has {clauses} terms and operators; the limit is {MAX_QUERY_CLAUSES}"
        )));
    }
    // `NOT` nests like a parenthesis; count it wherever it appears.
    let nots = query
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '"' | '\''))
        .filter(|w| *w == "NOT")
        .count();
    if nots > MAX_QUERY_CLAUSES {
        return Err(refuse(format!(
            "has {nots} NOT operators; the limit is {MAX_QUERY_CLAUSES}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(q: &str) -> String {
        match check(q) {
            Err(StorageError::InvalidQuery(m)) => m,
            other => panic!("{q:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn counts_outside_phrases_only() {
        assert!(check("a AND (b OR c)").is_ok());
        // Parentheses and words inside a phrase are literal text.
        let deep_phrase = format!("\"{}\"", "(".repeat(MAX_QUERY_DEPTH + 5));
        assert!(check(&deep_phrase).is_ok());
        let many_words = format!("'{}'", "w ".repeat(MAX_QUERY_CLAUSES + 10));
        assert!(check(&many_words).is_ok());
        // An escaped quote does not open a phrase, so what follows it is counted.
        let escaped = format!("\\\"{}a", "(".repeat(MAX_QUERY_DEPTH + 1));
        assert!(refused(&escaped).contains("33 deep"));
    }

    #[test]
    fn limits_are_inclusive() {
        let at = format!(
            "{}a{}",
            "(".repeat(MAX_QUERY_DEPTH),
            ")".repeat(MAX_QUERY_DEPTH)
        );
        assert!(check(&at).is_ok());
        let over = format!("({at})");
        assert!(refused(&over).contains(&format!("the limit is {MAX_QUERY_DEPTH}")));
        let terms = |n: usize| {
            (0..n)
                .map(|i| format!("t{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(check(&terms(MAX_QUERY_CLAUSES)).is_ok());
        assert!(
            refused(&terms(MAX_QUERY_CLAUSES + 1))
                .contains(&format!("the limit is {MAX_QUERY_CLAUSES}"))
        );
        assert!(check(&"a".repeat(MAX_QUERY_BYTES)).is_ok());
        assert!(
            refused(&"a".repeat(MAX_QUERY_BYTES + 1))
                .contains(&format!("the limit is {MAX_QUERY_BYTES} bytes"))
        );
    }

    #[test]
    fn a_phrase_cannot_hide_deep_nesting() {
        // A quote tantivy reads as part of a range bound is no phrase to it; the raw depth
        // still bounds what it parses.
        let q = format!(
            "[a TO 'b] {}x{} '",
            "(".repeat(MAX_QUERY_RAW_DEPTH + 1),
            ")".repeat(MAX_QUERY_RAW_DEPTH + 1)
        );
        assert!(refused(&q).contains(&format!("the limit is {MAX_QUERY_RAW_DEPTH}")));
        let nots = format!("\"{}\"", "NOT ".repeat(MAX_QUERY_CLAUSES + 1));
        assert!(refused(&nots).contains("NOT operators"));
    }
}
