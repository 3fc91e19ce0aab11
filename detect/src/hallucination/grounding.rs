//! Grounding of an answer in retrieved documents, sentence by sentence, with evidence.
//!
//! Each answer sentence is reduced to *claim units* (in the spirit of the unit-level support
//! checks of FActScore, Min et al. 2023, and the n-gram overlap of ROUGE, Lin 2004, with
//! numbers and entities weighted up as in entity-level hallucination metrics, Nan et al.
//! 2021):
//!
//! | unit | what | weight |
//! |---|---|---|
//! | number | canonical number text | 3 |
//! | entity | capitalised non-initial word (or run of them) | 2 |
//! | bigram | two consecutive content words (stop words removed, stemmed) | 1 |
//! | word | content word (stemmed, >= 3 letters) | 1 |
//!
//! Documents are cut into sentences, and every single sentence and every pair of adjacent
//! sentences is a *window*. A sentence's coverage by a window is the weighted share of its
//! units found in that window; the best window is its evidence (document id, byte and char
//! span). Requiring the units to co-occur in one window is what catches a correct number
//! attached to the wrong entity, which a bag-of-words over all documents would miss. A
//! sentence is `supported` when its best coverage reaches the threshold.

use super::text::{SentenceSpan, TokenKind, char_offset, split_sentences, tokenize};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Unit weights (see the module table).
const W_NUMBER: f64 = 3.0;
const W_ENTITY: f64 = 2.0;
const W_BIGRAM: f64 = 1.0;
const W_WORD: f64 = 1.0;

/// A retrieved document carried on the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievedDocument {
    /// Document id as the retriever reported it.
    pub id: String,
    /// Document text (the chunk given to the model).
    pub text: String,
}

/// A span of a text in bytes (for Rust/UTF-8 consumers) and Unicode scalar values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextSpan {
    /// First byte.
    pub start_byte: usize,
    /// One past the last byte.
    pub end_byte: usize,
    /// First character.
    pub start_char: usize,
    /// One past the last character.
    pub end_char: usize,
}

impl TextSpan {
    fn new(text: &str, start: usize, end: usize) -> Self {
        Self {
            start_byte: start,
            end_byte: end,
            start_char: char_offset(text, start),
            end_char: char_offset(text, end),
        }
    }
}

/// The best supporting passage for one answer sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Support {
    /// Index of the document in the request.
    pub document_index: usize,
    /// Its id.
    pub document_id: String,
    /// The passage (one or two document sentences).
    pub span: TextSpan,
    /// Weighted share of the sentence's units found in the passage, in [0, 1].
    pub coverage: f64,
}

/// Evidence for one answer sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentenceEvidence {
    /// Position of the sentence in the answer.
    pub sentence_index: usize,
    /// Its span in the answer.
    pub span: TextSpan,
    /// Best passage, when the sentence has any checkable unit and some document exists.
    pub best: Option<Support>,
    /// Whether the best coverage reaches the support threshold.
    pub supported: bool,
    /// Units of the sentence not found in the best passage (numbers and entities first).
    pub unsupported_units: Vec<String>,
    /// Total unit weight of the sentence (0: nothing checkable, e.g. "Sure!").
    pub weight: f64,
}

/// Answer-level grounding summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grounding {
    /// Per-sentence evidence.
    pub sentences: Vec<SentenceEvidence>,
    /// Weighted share of answer units not covered by their sentence's best passage, in [0, 1].
    pub unsupported_share: f64,
    /// `1 - min` sentence coverage over sentences with units, in [0, 1].
    pub worst_sentence_gap: f64,
    /// Share of answer numbers missing from their sentence's best passage (`None`: no numbers).
    pub number_gap: Option<f64>,
    /// Share of answer entities missing from their sentence's best passage.
    pub entity_gap: Option<f64>,
    /// Weighted share of answer units found in no document at all.
    pub novelty: f64,
    /// Share of sentences (with units) that are not supported.
    pub unsupported_sentence_share: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Unit {
    Number(String),
    Entity(Vec<String>),
    Bigram(String, String),
    Word(String),
}

impl Unit {
    fn weight(&self) -> f64 {
        match self {
            Unit::Number(_) => W_NUMBER,
            Unit::Entity(_) => W_ENTITY,
            Unit::Bigram(..) => W_BIGRAM,
            Unit::Word(_) => W_WORD,
        }
    }

    fn label(&self) -> String {
        match self {
            Unit::Number(n) => n.clone(),
            Unit::Entity(e) => e.join(" "),
            Unit::Bigram(a, b) => format!("{a} {b}"),
            Unit::Word(w) => w.clone(),
        }
    }
}

/// Words seen capitalised somewhere other than at a sentence start: proper names.
fn proper_names(texts: &[&str], out: &mut HashSet<String>) {
    for text in texts {
        for span in split_sentences(text) {
            for t in tokenize(&text[span.start..span.end]).into_iter().skip(1) {
                if t.capitalized && !t.stop && t.kind == TokenKind::Word {
                    out.insert(t.norm);
                }
            }
        }
    }
}

/// Claim units of a sentence, deduplicated, in a deterministic order. A capitalised word
/// opening the sentence is an entity only when it is a known proper name.
fn units(sentence: &str, proper: &HashSet<String>) -> Vec<Unit> {
    let toks = tokenize(sentence);
    let mut out: Vec<Unit> = Vec::new();
    let mut entity: Vec<String> = Vec::new();
    let mut prev_content: Option<String> = None;
    for (i, t) in toks.iter().enumerate() {
        match t.kind {
            TokenKind::Number => {
                out.push(Unit::Number(t.norm.clone()));
                if !entity.is_empty() {
                    out.push(Unit::Entity(std::mem::take(&mut entity)));
                }
                prev_content = None;
            }
            TokenKind::Word => {
                let is_entity_tok = t.capitalized && !t.stop && (i > 0 || proper.contains(&t.norm));
                if is_entity_tok {
                    entity.push(t.norm.clone());
                } else if !entity.is_empty() {
                    out.push(Unit::Entity(std::mem::take(&mut entity)));
                }
                if t.stop || t.norm.chars().count() < 3 {
                    prev_content = None;
                    continue;
                }
                out.push(Unit::Word(t.norm.clone()));
                if let Some(p) = prev_content.replace(t.norm.clone()) {
                    out.push(Unit::Bigram(p, t.norm.clone()));
                }
            }
        }
    }
    if !entity.is_empty() {
        out.push(Unit::Entity(entity));
    }
    out.sort();
    out.dedup();
    out
}

/// What a passage contains, for membership tests.
#[derive(Debug, Default)]
struct Bag {
    words: HashSet<String>,
    numbers: HashSet<String>,
    bigrams: HashSet<(String, String)>,
}

impl Bag {
    fn of(text: &str) -> Self {
        let mut bag = Bag::default();
        bag.add(text);
        bag
    }

    fn add(&mut self, text: &str) {
        let mut prev: Option<String> = None;
        for t in tokenize(text) {
            match t.kind {
                TokenKind::Number => {
                    self.numbers.insert(t.norm);
                    prev = None;
                }
                TokenKind::Word => {
                    self.words.insert(t.norm.clone());
                    if t.stop || t.norm.chars().count() < 3 {
                        prev = None;
                        continue;
                    }
                    if let Some(p) = prev.replace(t.norm.clone()) {
                        self.bigrams.insert((p, t.norm));
                    }
                }
            }
        }
    }

    fn contains(&self, u: &Unit) -> bool {
        match u {
            Unit::Number(n) => self.numbers.contains(n),
            Unit::Entity(parts) => parts.iter().all(|p| self.words.contains(p)),
            Unit::Bigram(a, b) => self.bigrams.contains(&(a.clone(), b.clone())),
            Unit::Word(w) => self.words.contains(w),
        }
    }
}

struct Window {
    doc: usize,
    start: usize,
    end: usize,
    bag: Bag,
}

/// Most document sentences considered per request (a limit on quadratic work).
pub const MAX_DOCUMENT_SENTENCES: usize = 20_000;

/// Ground `answer` in `documents` (see module docs). `support_threshold` is the coverage at
/// which a sentence counts as supported.
pub(crate) fn ground(
    answer: &str,
    documents: &[RetrievedDocument],
    support_threshold: f64,
) -> Grounding {
    let mut windows = Vec::new();
    let mut all = Bag::default();
    let mut budget = MAX_DOCUMENT_SENTENCES;
    for (d, doc) in documents.iter().enumerate() {
        let mut sents: Vec<SentenceSpan> = split_sentences(&doc.text);
        sents.truncate(budget);
        budget -= sents.len();
        all.add(&doc.text);
        for (i, s) in sents.iter().enumerate() {
            windows.push(Window {
                doc: d,
                start: s.start,
                end: s.end,
                bag: Bag::of(&doc.text[s.start..s.end]),
            });
            if let Some(next) = sents.get(i + 1) {
                windows.push(Window {
                    doc: d,
                    start: s.start,
                    end: next.end,
                    bag: Bag::of(&doc.text[s.start..next.end]),
                });
            }
        }
    }

    let mut proper = HashSet::new();
    let mut texts: Vec<&str> = documents.iter().map(|d| d.text.as_str()).collect();
    texts.push(answer);
    proper_names(&texts, &mut proper);

    let mut sentences = Vec::new();
    let (mut total_w, mut missing_w, mut novel_w) = (0.0, 0.0, 0.0);
    let (mut nums, mut nums_missing, mut ents, mut ents_missing) = (0usize, 0usize, 0usize, 0usize);
    let mut min_cov: Option<f64> = None;
    let (mut checked, mut unsupported_sents) = (0usize, 0usize);
    for (si, span) in split_sentences(answer).iter().enumerate() {
        let us = units(&answer[span.start..span.end], &proper);
        let weight: f64 = us.iter().map(Unit::weight).sum();
        let mut best: Option<(f64, &Window)> = None;
        for w in &windows {
            let got: f64 = us
                .iter()
                .filter(|u| w.bag.contains(u))
                .map(Unit::weight)
                .sum();
            let cov = if weight > 0.0 { got / weight } else { 0.0 };
            // strictly greater: the first (earliest document, shortest window) wins ties
            if best.is_none_or(|(b, _)| cov > b) {
                best = Some((cov, w));
            }
        }
        let coverage = best.map_or(0.0, |(c, _)| c);
        let mut unsupported: Vec<&Unit> = us
            .iter()
            .filter(|u| !best.is_some_and(|(_, w)| w.bag.contains(u)))
            .collect();
        unsupported.sort_by_key(|u| match u {
            Unit::Number(_) => 0,
            Unit::Entity(_) => 1,
            Unit::Bigram(..) => 3,
            Unit::Word(_) => 2,
        });
        for u in &us {
            let found = best.is_some_and(|(_, w)| w.bag.contains(u));
            match u {
                Unit::Number(_) => {
                    nums += 1;
                    nums_missing += usize::from(!found);
                }
                Unit::Entity(_) => {
                    ents += 1;
                    ents_missing += usize::from(!found);
                }
                _ => {}
            }
            if !all.contains(u) {
                novel_w += u.weight();
            }
        }
        total_w += weight;
        missing_w += weight * (1.0 - coverage);
        let supported = weight > 0.0 && coverage >= support_threshold;
        if weight > 0.0 {
            checked += 1;
            unsupported_sents += usize::from(!supported);
            min_cov = Some(min_cov.map_or(coverage, |m: f64| m.min(coverage)));
        }
        sentences.push(SentenceEvidence {
            sentence_index: si,
            span: TextSpan::new(answer, span.start, span.end),
            best: best.filter(|_| weight > 0.0).map(|(c, w)| Support {
                document_index: w.doc,
                document_id: documents[w.doc].id.clone(),
                span: TextSpan::new(&documents[w.doc].text, w.start, w.end),
                coverage: c,
            }),
            supported,
            unsupported_units: unsupported.iter().map(|u| u.label()).collect(),
            weight,
        });
    }
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    Grounding {
        sentences,
        unsupported_share: if total_w > 0.0 {
            (missing_w / total_w).clamp(0.0, 1.0)
        } else {
            0.0
        },
        worst_sentence_gap: 1.0 - min_cov.unwrap_or(1.0),
        number_gap: ratio(nums_missing, nums),
        entity_gap: ratio(ents_missing, ents),
        novelty: if total_w > 0.0 {
            (novel_w / total_w).clamp(0.0, 1.0)
        } else {
            0.0
        },
        unsupported_sentence_share: ratio(unsupported_sents, checked).unwrap_or(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> Vec<RetrievedDocument> {
        vec![
            RetrievedDocument {
                id: "a".into(),
                text: "Veltora was founded in 1998 in Lisbon. It employs 12,400 people.".into(),
            },
            RetrievedDocument {
                id: "b".into(),
                text: "Quinmark, a rival, was founded in 2004. Its CEO is Dana Okafor.".into(),
            },
        ]
    }

    #[test]
    fn supported_sentence_points_to_its_passage() {
        let answer = "Veltora was founded in 1998. The company has 12,400 employees.";
        let g = ground(answer, &docs(), 0.6);
        assert_eq!(g.sentences.len(), 2);
        let s0 = &g.sentences[0];
        assert!(s0.supported, "{s0:?}");
        let best = s0.best.as_ref().unwrap_or_else(|| panic!("no support"));
        assert_eq!(best.document_id, "a");
        let text = &docs()[0].text;
        assert!(
            text[best.span.start_byte..best.span.end_byte]
                .starts_with("Veltora was founded in 1998")
        );
        assert_eq!(g.number_gap, Some(0.0));
    }

    #[test]
    fn swapped_number_is_caught_even_though_it_appears_elsewhere() {
        // 2004 is in the documents, but as Quinmark's founding year
        let g = ground("Veltora was founded in 2004 in Lisbon.", &docs(), 0.6);
        assert_eq!(g.number_gap, Some(1.0));
        assert!(g.unsupported_share > 0.2);
        assert_eq!(g.novelty, 0.0);
        assert_eq!(
            g.sentences[0].unsupported_units.first().map(String::as_str),
            Some("2004")
        );
    }

    #[test]
    fn no_documents_means_nothing_supported() {
        let g = ground("Zorvex acquired Brightwell in 2019.", &[], 0.6);
        assert!(g.sentences[0].best.is_none());
        assert_eq!(g.unsupported_share, 1.0);
        let g = ground("", &docs(), 0.6);
        assert!(g.sentences.is_empty());
    }
}
