//! Full-text queries: parsed with tantivy's query grammar (`timeout AND "tool call"`,
//! `-debug`, `retr*`, `"big bad wo"*`, `"call failed"~2`, `body:x`), answered from a token
//! index as candidate rows, and evaluated exactly on a body when the index cannot decide.
//!
//! Semantics: words are ANDed unless joined by `OR`; a word that tokenizes into several tokens
//! (`gpt-4o`) is a phrase; a phrase matches its tokens in order at consecutive positions, or
//! with at most `~N` extra positions between them in total; `word*` matches any token starting
//! with `word`, and a phrase ending in `*` lets its last token be such a prefix; a clause of
//! only exclusions (`-debug`, `NOT health`) means every line except those; `*` matches every
//! line; a query whose words hold no token matches nothing.
//!
//! The index knows which rows hold a token but not where, so single tokens, prefixes and their
//! boolean combinations are answered exactly from it, while phrases are answered by the rows
//! holding all their tokens and then checked against the bodies ([`TextQuery::needs_bodies`]).

use roaring::RoaringBitmap;
use tantivy_query_grammar::{Delimiter, Occur, UserInputAst, UserInputLeaf};

use super::bounds;
use super::tokens;
use crate::error::{Result, StorageError};

/// The one field full-text queries may name.
const BODY_FIELD: &str = "body";

/// What a token index answers.
pub trait TermLookup {
    /// Rows holding `term` (a lower-cased token).
    fn term(&self, term: &str) -> Result<RoaringBitmap>;
    /// Rows holding a token that starts with `prefix`.
    fn prefix(&self, prefix: &str) -> Result<RoaringBitmap>;
    /// Rows holding a token that `accept` accepts, or `None` when it accepts more than `limit`
    /// distinct tokens (the caller then takes every row instead of reading their lists).
    fn tokens_where(
        &self,
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
    ) -> Result<Option<RoaringBitmap>>;
    /// Rows holding a token too long to index, or `None` when the index does not list them.
    fn overlong(&self) -> Result<Option<RoaringBitmap>>;
}

/// Rows a query may match, from an index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Candidates {
    /// Every matching row is here.
    pub rows: RoaringBitmap,
    /// Every row here matches (else each must be checked with [`TextQuery::matches`]).
    pub exact: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Node {
    All,
    Term(String),
    Prefix(String),
    /// Tokens with their positions relative to the first (gaps where an overlong token was).
    Phrase {
        terms: Vec<(u32, String)>,
        slop: u32,
        /// The last token is a prefix.
        prefix: bool,
    },
    Bool {
        must: Vec<Node>,
        should: Vec<Node>,
        must_not: Vec<Node>,
    },
}

/// A parsed full-text query, or a literal a body must contain.
#[derive(Clone, Debug)]
pub struct TextQuery {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    /// A query of tantivy's grammar; `None`: no token in it, nothing matches.
    Tokens(Option<Node>),
    /// A literal the body contains, case-sensitively (LogQL's `|= "..."`), with the runs of
    /// token characters that narrow the rows holding it.
    Literal {
        text: String,
        fragments: Vec<tokens::Fragment>,
    },
}

/// Most distinct tokens of one index a literal's fragment may select by suffix or infix before
/// the fragment is given up (every row stays a candidate): a one-letter fragment would
/// otherwise read every row list.
pub const MAX_FRAGMENT_TOKENS: usize = 4096;

fn invalid(query: &str, why: impl std::fmt::Display) -> StorageError {
    StorageError::InvalidQuery(format!("full-text query {query:?}: {why}"))
}

impl TextQuery {
    /// Parses `query` once it is within the [`bounds`].
    pub fn parse(query: &str) -> Result<Self> {
        bounds::check(query)?;
        let ast = tantivy_query_grammar::parse_query(query)
            .map_err(|_| invalid(query, "syntax error"))?;
        Ok(Self {
            kind: Kind::Tokens(compile(query, ast)?),
        })
    }

    /// Bodies that contain `literal` as it is spelled (a substring, case-sensitive; LogQL's
    /// line filter `|=`). The index narrows the rows to those holding its runs of token
    /// characters (whole tokens between separators, and the tokens that may hold the runs at
    /// its ends), and each candidate's body is then checked. A literal longer than
    /// [`bounds::MAX_QUERY_BYTES`] is refused.
    pub fn literal(literal: &str) -> Result<Self> {
        if literal.len() > bounds::MAX_QUERY_BYTES {
            return Err(invalid(
                literal,
                format!("longer than {} bytes", bounds::MAX_QUERY_BYTES),
            ));
        }
        Ok(Self {
            kind: Kind::Literal {
                text: literal.to_owned(),
                fragments: tokens::fragments(literal),
            },
        })
    }

    /// Whether rows answered from an index must still be checked against their bodies (the
    /// query holds a phrase, or is a literal).
    pub fn needs_bodies(&self) -> bool {
        match &self.kind {
            Kind::Tokens(root) => root.as_ref().is_some_and(Node::has_phrase),
            Kind::Literal { .. } => true,
        }
    }

    /// The rows of `idx` (which holds `rows` rows) that may match.
    pub fn candidates(&self, idx: &dyn TermLookup, rows: u32) -> Result<Candidates> {
        match &self.kind {
            Kind::Tokens(None) => Ok(Candidates {
                rows: RoaringBitmap::new(),
                exact: true,
            }),
            Kind::Tokens(Some(n)) => n.candidates(idx, rows),
            Kind::Literal { fragments, .. } => literal_candidates(fragments, idx, rows),
        }
    }

    /// Whether `body` matches.
    pub fn matches(&self, body: &str) -> bool {
        match &self.kind {
            Kind::Tokens(None) => false,
            Kind::Tokens(Some(root)) => root.matches(&tokens::tokens(body)),
            Kind::Literal { text, .. } => body.contains(text.as_str()),
        }
    }
}

/// The rows that may contain a literal with these fragments: each fragment's rows, ANDed; a
/// fragment whose rows the index cannot tell (too many tokens, or overlong tokens not listed)
/// narrows nothing.
fn literal_candidates(
    fragments: &[tokens::Fragment],
    idx: &dyn TermLookup,
    rows: u32,
) -> Result<Candidates> {
    use tokens::Fragment;
    // A fragment at the literal's edge may sit inside a token too long to be indexed: the rows
    // of those tokens, looked up once.
    let overlong = if fragments.iter().all(|f| matches!(f, Fragment::Whole(_))) {
        None
    } else {
        idx.overlong()?
    };
    let or_overlong = |found: Option<RoaringBitmap>| match (found, &overlong) {
        (Some(f), Some(o)) => Some(f | o),
        _ => None,
    };
    let mut acc: Option<RoaringBitmap> = None;
    for f in fragments {
        let found = match f {
            Fragment::Whole(t) => Some(idx.term(t)?),
            Fragment::Prefix(p) => or_overlong(Some(idx.prefix(p)?)),
            Fragment::Suffix(s) => {
                or_overlong(idx.tokens_where(&|t| t.ends_with(s.as_str()), MAX_FRAGMENT_TOKENS)?)
            }
            Fragment::Infix(s) => {
                or_overlong(idx.tokens_where(&|t| t.contains(s.as_str()), MAX_FRAGMENT_TOKENS)?)
            }
            Fragment::Overlong => overlong.clone(),
        };
        let Some(found) = found else { continue };
        let next = match acc {
            Some(a) => a & found,
            None => found,
        };
        let empty = next.is_empty();
        acc = Some(next);
        if empty {
            break;
        }
    }
    Ok(Candidates {
        rows: acc.unwrap_or_else(|| all_rows(rows)),
        exact: false,
    })
}

fn compile(query: &str, ast: UserInputAst) -> Result<Option<Node>> {
    match ast {
        UserInputAst::Boost(inner, _) => compile(query, *inner),
        UserInputAst::Leaf(leaf) => compile_leaf(query, *leaf),
        UserInputAst::Clause(children) => {
            let (mut must, mut should, mut must_not) = (Vec::new(), Vec::new(), Vec::new());
            for (occur, child) in children {
                let Some(node) = compile(query, child)? else {
                    continue;
                };
                match occur.unwrap_or(Occur::Must) {
                    Occur::Must => must.push(node),
                    Occur::Should => should.push(node),
                    Occur::MustNot => must_not.push(node),
                }
            }
            if must.is_empty() && should.is_empty() && must_not.is_empty() {
                return Ok(None);
            }
            if must.len() + should.len() == 1 && must_not.is_empty() {
                return Ok(must.pop().or_else(|| should.pop()));
            }
            Ok(Some(Node::Bool {
                must,
                should,
                must_not,
            }))
        }
    }
}

fn compile_leaf(query: &str, leaf: UserInputLeaf) -> Result<Option<Node>> {
    let lit = match leaf {
        UserInputLeaf::All => return Ok(Some(Node::All)),
        UserInputLeaf::Literal(lit) => lit,
        UserInputLeaf::Range { .. } => return Err(invalid(query, "ranges are not supported")),
        UserInputLeaf::Set { .. } => return Err(invalid(query, "term sets are not supported")),
        UserInputLeaf::Exists { .. } => {
            return Err(invalid(query, "field existence is not supported"));
        }
        UserInputLeaf::Regex { .. } => {
            return Err(invalid(query, "regular expressions are not supported"));
        }
    };
    if let Some(field) = lit.field_name.as_deref().filter(|f| *f != BODY_FIELD) {
        return Err(invalid(
            query,
            format!("unknown field {field:?}; only {BODY_FIELD:?} is searchable"),
        ));
    }
    // An unquoted word ending in `*` is a prefix (the grammar keeps the star in the word).
    let (text, prefix) = match lit.phrase.strip_suffix('*') {
        Some(stem) if lit.delimiter == Delimiter::None => (stem, true),
        _ => (lit.phrase.as_str(), lit.prefix),
    };
    let mut toks = tokens::tokens(text);
    let Some(&(first, _)) = toks.first() else {
        return Ok(None);
    };
    for t in &mut toks {
        t.0 -= first;
    }
    Ok(Some(match (toks.len(), prefix) {
        (1, false) => Node::Term(toks.remove(0).1),
        (1, true) => Node::Prefix(toks.remove(0).1),
        _ => Node::Phrase {
            terms: toks,
            slop: lit.slop,
            prefix,
        },
    }))
}

impl Node {
    fn has_phrase(&self) -> bool {
        match self {
            Node::Phrase { .. } => true,
            Node::Bool {
                must,
                should,
                must_not,
            } => must
                .iter()
                .chain(should)
                .chain(must_not)
                .any(Node::has_phrase),
            _ => false,
        }
    }

    fn candidates(&self, idx: &dyn TermLookup, rows: u32) -> Result<Candidates> {
        let exact = |rows| Candidates { rows, exact: true };
        Ok(match self {
            Node::All => exact(all_rows(rows)),
            Node::Term(t) => exact(idx.term(t)?),
            Node::Prefix(p) => exact(idx.prefix(p)?),
            Node::Phrase { terms, prefix, .. } => {
                let mut acc: Option<RoaringBitmap> = None;
                for (i, (_, t)) in terms.iter().enumerate() {
                    let r = if *prefix && i + 1 == terms.len() {
                        idx.prefix(t)?
                    } else {
                        idx.term(t)?
                    };
                    let next = match acc {
                        Some(a) => a & r,
                        None => r,
                    };
                    let empty = next.is_empty();
                    acc = Some(next);
                    if empty {
                        break;
                    }
                }
                Candidates {
                    rows: acc.unwrap_or_default(),
                    exact: false,
                }
            }
            Node::Bool {
                must,
                should,
                must_not,
            } => {
                let mut out = if !must.is_empty() {
                    let mut acc: Option<Candidates> = None;
                    for n in must {
                        let c = n.candidates(idx, rows)?;
                        let next = match acc {
                            Some(a) => Candidates {
                                rows: a.rows & c.rows,
                                exact: a.exact && c.exact,
                            },
                            None => c,
                        };
                        let empty = next.rows.is_empty();
                        acc = Some(next);
                        if empty {
                            break;
                        }
                    }
                    acc.unwrap_or_default()
                } else if !should.is_empty() {
                    let mut acc = Candidates {
                        rows: RoaringBitmap::new(),
                        exact: true,
                    };
                    for n in should {
                        let c = n.candidates(idx, rows)?;
                        acc.rows |= c.rows;
                        acc.exact &= c.exact;
                    }
                    acc
                } else {
                    exact(all_rows(rows))
                };
                for n in must_not {
                    if out.rows.is_empty() {
                        break;
                    }
                    let c = n.candidates(idx, rows)?;
                    if c.exact {
                        out.rows -= c.rows;
                    } else {
                        // Rows of an inexact exclusion may not match it: keep them, and
                        // check every row against the bodies.
                        out.exact = false;
                    }
                }
                out
            }
        })
    }

    fn matches(&self, toks: &[(u32, String)]) -> bool {
        match self {
            Node::All => true,
            Node::Term(t) => toks.iter().any(|(_, x)| x == t),
            Node::Prefix(p) => toks.iter().any(|(_, x)| x.starts_with(p.as_str())),
            Node::Phrase {
                terms,
                slop,
                prefix,
            } => phrase_matches(toks, terms, *slop, *prefix),
            Node::Bool {
                must,
                should,
                must_not,
            } => {
                let positive = if !must.is_empty() {
                    must.iter().all(|n| n.matches(toks))
                } else if !should.is_empty() {
                    should.iter().any(|n| n.matches(toks))
                } else {
                    true
                };
                positive && !must_not.iter().any(|n| n.matches(toks))
            }
        }
    }
}

fn all_rows(rows: u32) -> RoaringBitmap {
    let mut all = RoaringBitmap::new();
    all.insert_range(0..rows);
    all
}

/// Whether the tokens hold the phrase: its tokens in order, each at least as far after the
/// previous one as in the phrase, and the whole at most `slop` positions longer than the
/// phrase. Taking the earliest occurrence of each next token is optimal (the extra length is
/// the last position's alone), so one pass per start suffices.
fn phrase_matches(
    toks: &[(u32, String)],
    terms: &[(u32, String)],
    slop: u32,
    prefix: bool,
) -> bool {
    let Some(((_, head), rest)) = terms.split_first() else {
        return false;
    };
    let last = terms.len() - 1;
    let is = |i: usize, tok: &str, want: &str| {
        if prefix && i == last {
            tok.starts_with(want)
        } else {
            tok == want
        }
    };
    'starts: for (s, (p0, tok)) in toks.iter().enumerate() {
        if !is(0, tok, head) {
            continue;
        }
        let mut prev_pos = *p0;
        let mut prev_off = 0u32;
        let mut k = s + 1;
        for (j, (off, want)) in rest.iter().enumerate() {
            let need = prev_pos + (off - prev_off);
            loop {
                let Some((p, tok)) = toks.get(k) else {
                    // No later occurrence for this start, nor for any later start.
                    return false;
                };
                k += 1;
                if *p < need || !is(j + 1, tok, want) {
                    continue;
                }
                // Extra length so far: where this token is against where the phrase puts it.
                if p - p0 - off > slop {
                    continue 'starts;
                }
                prev_pos = *p;
                prev_off = *off;
                break;
            }
        }
        return true;
    }
    false
}
