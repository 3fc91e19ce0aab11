//! Lightweight English text handling for grounding: sentence spans, tokens, stop words,
//! a crude suffix stemmer and number normalisation. Deliberately simple and deterministic
//! (no models, no dictionaries beyond a stop-word list); all spans are byte offsets into the
//! original text, always on UTF-8 character boundaries.

/// A sentence as a byte range of its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SentenceSpan {
    pub start: usize,
    pub end: usize,
}

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Word,
    Number,
}

/// A token with its normalised form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    /// Lower-cased, stemmed word, or canonical number text.
    pub norm: String,
    pub kind: TokenKind,
    /// Starts with an upper-case letter (or is an all-caps acronym).
    pub capitalized: bool,
    /// In the stop-word list.
    pub stop: bool,
}

const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "inc", "ltd", "co", "corp", "st", "vs", "e.g", "i.e", "etc",
    "jr", "sr", "no",
];

/// Sentence boundaries: `.`, `!`, `?` followed by whitespace or the end, or a line break;
/// a period after a known abbreviation or a single capital letter does not end a sentence.
pub(crate) fn split_sentences(text: &str) -> Vec<SentenceSpan> {
    let mut spans = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(pos, c)) in chars.iter().enumerate() {
        let next_is_space = chars.get(i + 1).is_none_or(|(_, n)| n.is_whitespace());
        let boundary = match c {
            '\n' => true,
            '!' | '?' => next_is_space,
            '.' => next_is_space && !ends_with_abbreviation(&text[start..pos]),
            _ => false,
        };
        if boundary {
            push_trimmed(text, start, pos + c.len_utf8(), &mut spans);
            start = pos + c.len_utf8();
        }
    }
    push_trimmed(text, start, text.len(), &mut spans);
    spans
}

fn ends_with_abbreviation(before: &str) -> bool {
    let word: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if word.chars().count() == 1 && word.chars().all(|c| c.is_uppercase()) {
        return true; // initials: "J. Smith"
    }
    ABBREVIATIONS.contains(&word.to_lowercase().as_str())
}

fn push_trimmed(text: &str, start: usize, end: usize, out: &mut Vec<SentenceSpan>) {
    let slice = &text[start..end];
    let lead = slice.len() - slice.trim_start().len();
    let trail = slice.len() - slice.trim_end().len();
    let (s, e) = (start + lead, end - trail);
    if e > s && text[s..e].chars().any(char::is_alphanumeric) {
        out.push(SentenceSpan { start: s, end: e });
    }
}

/// Tokenise: words are runs of letters/digits/apostrophes (numbers may contain `.`/`,`
/// between digits, e.g. `1,200.5`); everything else separates tokens.
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            let mut j = i;
            let mut raw = String::new();
            while j < chars.len() {
                let d = chars[j];
                let separator =
                    (d == '.' || d == ',') && chars.get(j + 1).is_some_and(char::is_ascii_digit);
                if !(d.is_ascii_digit() || separator) {
                    break;
                }
                raw.push(d);
                j += 1;
            }
            out.push(Token {
                norm: normalize_number(&raw),
                kind: TokenKind::Number,
                capitalized: false,
                stop: false,
            });
            i = j;
        } else if c.is_alphabetic() {
            let mut j = i;
            while j < chars.len()
                && (chars[j].is_alphanumeric()
                    || (chars[j] == '\'' && chars.get(j + 1).is_some_and(|n| n.is_alphabetic())))
            {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            let lower = word.to_lowercase();
            let stop = is_stop_word(&lower);
            out.push(Token {
                norm: stem(&lower),
                kind: TokenKind::Word,
                capitalized: c.is_uppercase(),
                stop,
            });
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Canonical text of a number: thousands separators dropped, trailing fractional zeros removed
/// (`"1,200.50"` -> `"1200.5"`). A comma followed by exactly three digits is a thousands
/// separator; any other comma acts as a decimal point.
pub(crate) fn normalize_number(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    let parts: Vec<&str> = raw.split(',').collect();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            let digits = p.chars().take_while(char::is_ascii_digit).count();
            if digits != 3 {
                s.push('.');
            }
        }
        s.push_str(p);
    }
    if let Some(dot) = s.find('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').to_string();
        if trimmed.len() >= dot {
            return trimmed;
        }
    }
    s
}

/// Crude English suffix stripping (a tiny subset of Porter 1980) so that "founded"/"founding"
/// and "employees"/"employee" meet.
pub(crate) fn stem(word: &str) -> String {
    let n = word.chars().count();
    if n <= 3 || !word.is_ascii() {
        return word.to_string();
    }
    for (suffix, replacement, min_len) in [
        ("ies", "y", 5),
        ("ing", "", 6),
        ("ed", "", 5),
        ("es", "", 5),
        ("ly", "", 5),
        ("s", "", 4),
    ] {
        if n >= min_len && word.ends_with(suffix) && !word.ends_with("ss") {
            return format!("{}{}", &word[..word.len() - suffix.len()], replacement);
        }
    }
    word.to_string()
}

const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "according",
    "around",
    "approximately",
    "roughly",
    "nearly",
    "about",
    "its",
    "currently",
    "today",
    "which",
    "there",
    "one",
];

/// Whether `lower` (lower-cased) is an English stop word.
pub(crate) fn is_stop_word(lower: &str) -> bool {
    STOP_WORDS.contains(&lower)
}

/// Convert a byte offset into a character offset.
pub(crate) fn char_offset(text: &str, byte: usize) -> usize {
    text.get(..byte).map_or(0, |s| s.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_respect_decimals_and_abbreviations() {
        let t = "Revenue was 3.5 billion. Dr. Smith joined Acme Inc. in 2019! Why?\nNext line";
        let s: Vec<&str> = split_sentences(t)
            .iter()
            .map(|s| &t[s.start..s.end])
            .collect();
        assert_eq!(
            s,
            vec![
                "Revenue was 3.5 billion.",
                "Dr. Smith joined Acme Inc. in 2019!",
                "Why?",
                "Next line"
            ]
        );
        assert!(split_sentences("  ...  ").is_empty());
        assert_eq!(split_sentences("héllo wörld. ünïcode").len(), 2);
    }

    #[test]
    fn tokens_numbers_and_stems() {
        let toks = tokenize("Founded in 1998, Veltora employs 12,400 people; revenue grew 3.50%.");
        let norms: Vec<&str> = toks.iter().map(|t| t.norm.as_str()).collect();
        assert_eq!(
            norms,
            vec![
                "found", "in", "1998", "veltora", "employ", "12400", "people", "revenue", "grew",
                "3.5"
            ]
        );
        assert!(toks[3].capitalized && !toks[3].stop && toks[1].stop);
        assert_eq!(normalize_number("3,5"), "3.5");
        assert_eq!(normalize_number("100"), "100");
        assert_eq!(normalize_number("2.000"), "2");
        assert_eq!(stem("companies"), "company");
    }
}
