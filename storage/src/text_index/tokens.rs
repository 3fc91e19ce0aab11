//! The tokenizer of log bodies and of full-text queries, one for both so that a query term is
//! always spelled as the index spells it.
//!
//! A token is a maximal run of alphanumeric characters (`char::is_alphanumeric`, so letters
//! and digits of every script), lower-cased. Tokens of [`MAX_TOKEN_BYTES`] bytes or more (hex
//! dumps, base64 blobs) are left out of the index, but still count as a position, so a phrase
//! around one keeps its gap. These are the rules of tantivy's default text analyzer, which
//! earlier versions of the store used.

/// Tokens this long (in bytes, before lower-casing) or longer are not indexed.
pub const MAX_TOKEN_BYTES: usize = 40;

/// Calls `f(position, token)` for every indexed token of `text`, in order. `position` counts
/// every token, the overlong ones left out too. `scratch` holds a lower-cased token when the
/// text's spelling is not already lower case (its contents on return are unspecified).
pub fn for_each_token(text: &str, scratch: &mut String, f: impl FnMut(u32, &str)) {
    for_each_token_and_overlong(text, scratch, f, || {});
}

/// [`for_each_token`], calling `overlong()` for every token left out for its length.
pub(crate) fn for_each_token_and_overlong(
    text: &str,
    scratch: &mut String,
    mut f: impl FnMut(u32, &str),
    mut overlong: impl FnMut(),
) {
    let bytes = text.as_bytes();
    let mut pos: u32 = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip separators.
        let Some(start) = next_alnum(text, i) else {
            return;
        };
        let (end, lower) = alnum_run_end(text, start);
        let token = &text[start..end];
        if token.len() < MAX_TOKEN_BYTES {
            if lower {
                f(pos, token);
            } else {
                scratch.clear();
                lowercase_into(token, scratch);
                f(pos, scratch);
            }
        } else {
            overlong();
        }
        pos = pos.saturating_add(1);
        i = end;
    }
}

/// The tokens of `text` with their positions, owned.
pub fn tokens(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut scratch = String::new();
    for_each_token(text, &mut scratch, |p, t| out.push((p, t.to_owned())));
    out
}

/// Where a run of token characters of a literal (a substring a body must contain) lies within
/// the body's token that holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fragment {
    /// Separators on both sides: the body holds exactly this token.
    Whole(String),
    /// At the literal's start only: a token of the body ends with it.
    Suffix(String),
    /// At the literal's end only: a token of the body starts with it.
    Prefix(String),
    /// The whole literal is one run: a token of the body contains it.
    Infix(String),
    /// A run of [`MAX_TOKEN_BYTES`] or more: the body's token holding it is not indexed.
    Overlong,
}

/// The runs of token characters of `literal`, lower-cased, each with where it must sit in a
/// token of a body that contains `literal` (case-sensitively). Lower-casing is per character,
/// so a body token holding a run lower-cases to a token holding the lower-cased run.
pub fn fragments(literal: &str) -> Vec<Fragment> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(start) = next_alnum(literal, i) {
        let (end, _) = alnum_run_end(literal, start);
        let run = &literal[start..end];
        let mut lower = String::with_capacity(run.len());
        lowercase_into(run, &mut lower);
        let (at_start, at_end) = (start == 0, end == literal.len());
        out.push(if run.len() >= MAX_TOKEN_BYTES {
            Fragment::Overlong
        } else {
            match (at_start, at_end) {
                (false, false) => Fragment::Whole(lower),
                (true, false) => Fragment::Suffix(lower),
                (false, true) => Fragment::Prefix(lower),
                (true, true) => Fragment::Infix(lower),
            }
        });
        i = end;
    }
    out
}

/// Byte offset of the first alphanumeric character at or after `from`.
fn next_alnum(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if b.is_ascii_alphanumeric() {
                return Some(i);
            }
            i += 1;
        } else {
            let c = text[i..].chars().next()?;
            if c.is_alphanumeric() {
                return Some(i);
            }
            i += c.len_utf8();
        }
    }
    None
}

/// End of the alphanumeric run starting at `start`, and whether it is already lower case.
fn alnum_run_end(text: &str, start: usize) -> (usize, bool) {
    let bytes = text.as_bytes();
    let mut i = start;
    let mut lower = true;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if !b.is_ascii_alphanumeric() {
                break;
            }
            lower &= !b.is_ascii_uppercase();
            i += 1;
        } else {
            let Some(c) = text[i..].chars().next() else {
                break;
            };
            if !c.is_alphanumeric() {
                break;
            }
            // A character whose lower case is itself (most of them) keeps the spelling.
            lower &= !c.is_uppercase() && c.to_lowercase().eq(std::iter::once(c));
            i += c.len_utf8();
        }
    }
    (i, lower)
}

fn lowercase_into(token: &str, out: &mut String) {
    if token.is_ascii() {
        out.extend(token.bytes().map(|b| char::from(b.to_ascii_lowercase())));
    } else {
        out.extend(token.chars().flat_map(char::to_lowercase));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<(u32, String)> {
        tokens(s)
    }

    #[test]
    fn splits_on_non_alphanumerics_and_lower_cases() {
        assert_eq!(
            toks("Tool-call FAILED: timeout after 30s (gpt-4o)"),
            vec![
                (0, "tool".into()),
                (1, "call".into()),
                (2, "failed".into()),
                (3, "timeout".into()),
                (4, "after".into()),
                (5, "30s".into()),
                (6, "gpt".into()),
                (7, "4o".into()),
            ]
        );
        assert!(toks("  ... !!! ").is_empty());
        assert!(toks("").is_empty());
    }

    #[test]
    fn unicode_letters_are_token_characters() {
        assert_eq!(
            toks("Straße ÉTÉ naïve 東京"),
            vec![
                (0, "straße".into()),
                (1, "été".into()),
                (2, "naïve".into()),
                (3, "東京".into()),
            ]
        );
    }

    #[test]
    fn fragments_say_where_a_literal_sits_in_body_tokens() {
        use Fragment::*;
        assert_eq!(
            fragments("ut: Tool call fa"),
            vec![
                Suffix("ut".into()),
                Whole("tool".into()),
                Whole("call".into()),
                Prefix("fa".into())
            ]
        );
        assert_eq!(fragments("Timeout"), vec![Infix("timeout".into())]);
        assert_eq!(fragments(" timeout "), vec![Whole("timeout".into())]);
        assert_eq!(fragments("= -"), vec![]);
        let long = "x".repeat(MAX_TOKEN_BYTES);
        assert_eq!(
            fragments(&format!("a {long} b")),
            vec![Suffix("a".into()), Overlong, Prefix("b".into())]
        );
    }

    #[test]
    fn overlong_tokens_keep_their_position() {
        let long = "a".repeat(MAX_TOKEN_BYTES);
        let just = "b".repeat(MAX_TOKEN_BYTES - 1);
        assert_eq!(
            toks(&format!("x {long} y {just}")),
            vec![(0, "x".into()), (2, "y".into()), (3, just)]
        );
    }
}
