//! Deterministic generator of labelled RAG examples for evaluating the hallucination index.
//!
//! How a set is built (labels are known by construction):
//!
//! 1. A small *world* per example: 3-5 fictitious companies with attributes (founding year,
//!    headquarters city, employees, revenue, CEO, flagship product and launch year, growth),
//!    names drawn from syllable and name lists.
//! 2. *Retrieved documents*: 3-5 passages, each describing one or two companies with varied
//!    templates, plus generic filler sentences. The question's target company appears in at
//!    least one passage; the others are distractors with the same attribute types, so the
//!    same kinds of numbers and names appear everywhere (realistic lexical overlap).
//! 3. *Answer* (2-4 claim sentences about the target, optionally a generic filler sentence
//!    that is not a hallucination but is not lexically supported either), written with
//!    *different* templates from the documents (paraphrase: "established" vs "founded").
//!    - grounded: every claim is a fact shown in the documents;
//!    - hallucinated: 1 (sometimes 2) claims are corrupted, by one of: a number swapped with
//!      another company's value that *is* in the documents; a fresh plausible number; a
//!      person/city swapped with another company's (present in the documents); a fresh
//!      name; a fabricated event (acquisition, award, new office); or a true world fact that
//!      the retrieved documents do not show (unsupported by the context).
//! 4. *Synthetic logprobs* (top-20 plus a tail): per-token confidence depends on token type
//!    and a per-example "style" latent independent of the label. Only in ~55% of
//!    hallucinated examples is the model "aware" (higher entropy on the corrupted claim), and
//!    ~20% of grounded examples get the same bump on a random claim, so uncertainty
//!    correlates only partially with the label.
//!
//! The [`Difficulty::Hard`] variant uses only swaps with values present in the documents,
//! more filler and paraphrase, and a weaker uncertainty signal.

use crate::entropy::UncertaintyOptions;
use crate::hallucination::{HallucinationOptions, HallucinationRequest, RetrievedDocument};
use crate::logprobs::{ChoiceLogprobs, TokenLogprob, TopLogprob};
use serde::{Deserialize, Serialize};

/// SplitMix64 (Steele et al. 2014): tiny, fast and stable across versions, so the generated
/// sets never change under a dependency upgrade.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `lo..hi` (`hi > lo`).
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi.saturating_sub(lo).max(1) as u64)) as usize
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-300);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.range(0, items.len())]
    }
}

/// How hard the set is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    /// All corruption kinds, moderate uncertainty signal.
    Standard,
    /// Swaps with values present in the documents only, more filler, weaker uncertainty.
    Hard,
}

/// Generator settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GeneratorConfig {
    /// Seed.
    pub seed: u64,
    /// Number of examples.
    pub examples: usize,
    /// Share of hallucinated examples.
    pub hallucination_rate: f64,
    /// Difficulty.
    pub difficulty: Difficulty,
}

/// One labelled example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelledExample {
    /// Stable id (`<seed>-<index>`).
    pub id: String,
    /// The request to score.
    pub request: HallucinationRequest,
    /// Ground truth.
    pub hallucinated: bool,
    /// How the answer was built (`grounded`, `number_swap`, `fresh_number`, ...).
    pub kind: String,
}

const PREFIX: &[&str] = &[
    "Vel", "Quin", "Bright", "Nor", "Cal", "Ter", "Lum", "Sol", "Mar", "Ost", "Kel", "Dra", "Fen",
    "Hal", "Jor", "Pra", "Rho", "Zen", "Ard", "Cor",
];
const SUFFIX: &[&str] = &[
    "tora", "mark", "well", "vex", "dyn", "ics", "ora", "lith", "gen", "pulse", "core", "ware",
    "aris", "ton", "field",
];
const FIRST: &[&str] = &[
    "Dana", "Marcus", "Priya", "Elena", "Tomas", "Aiko", "Samuel", "Ingrid", "Rafael", "Chen",
    "Amara", "Jonas", "Leila", "Victor", "Nadia", "Oscar",
];
const LAST: &[&str] = &[
    "Okafor",
    "Lindqvist",
    "Raman",
    "Petrova",
    "Alvarez",
    "Tanaka",
    "Brooks",
    "Haugen",
    "Moreau",
    "Wei",
    "Mensah",
    "Keller",
    "Haddad",
    "Novak",
    "Ibsen",
    "Duarte",
];
const CITIES: &[&str] = &[
    "Lisbon",
    "Rotterdam",
    "Austin",
    "Osaka",
    "Nairobi",
    "Krakow",
    "Montreal",
    "Valencia",
    "Tallinn",
    "Denver",
    "Lyon",
    "Seoul",
    "Porto",
    "Leeds",
    "Perth",
    "Bergen",
];
const PRODUCT: &[&str] = &[
    "Atlas", "Beacon", "Cinder", "Drift", "Ember", "Flux", "Glint", "Harbor", "Ion", "Juniper",
    "Keystone", "Lattice",
];
const AWARDS: &[&str] = &[
    "Global Innovation",
    "Sustainable Enterprise",
    "Design Excellence",
    "Industry Leadership",
];
const DOC_FILLER: &[&str] = &[
    "The sector has seen steady consolidation over the past decade.",
    "Industry observers expect demand to remain strong in the coming years.",
    "Competition in the market has intensified as new entrants appear.",
    "Regulators have recently paid closer attention to the industry.",
];
const ANSWER_FILLER: &[&str] = &[
    "This makes it a significant player in its market.",
    "Overall, the company has a solid reputation in the industry.",
    "Analysts generally view it as a stable business.",
    "It remains one of the better known names in its field.",
];

#[derive(Debug, Clone)]
struct Company {
    name: String,
    founded: u32,
    city: String,
    employees: u32,
    revenue: f64,
    ceo: String,
    product: String,
    launch: u32,
    growth: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attr {
    Founded,
    City,
    Employees,
    Revenue,
    Ceo,
    Product,
    Growth,
}

const ATTRS: [Attr; 7] = [
    Attr::Founded,
    Attr::City,
    Attr::Employees,
    Attr::Revenue,
    Attr::Ceo,
    Attr::Product,
    Attr::Growth,
];

fn company(rng: &mut SplitMix64, used: &mut Vec<String>) -> Company {
    let mut name = format!("{}{}", rng.pick(PREFIX), rng.pick(SUFFIX));
    while used.contains(&name) {
        name = format!("{}{}", rng.pick(PREFIX), rng.pick(SUFFIX));
    }
    used.push(name.clone());
    let founded = 1950 + rng.range(0, 70) as u32;
    Company {
        name,
        founded,
        city: rng.pick(CITIES).to_string(),
        employees: (2 + rng.range(0, 900)) as u32 * 100,
        revenue: (5 + rng.range(0, 400)) as f64 / 10.0,
        ceo: format!("{} {}", rng.pick(FIRST), rng.pick(LAST)),
        product: format!(
            "{} {}",
            rng.pick(PRODUCT),
            rng.pick(&["One", "Pro", "Cloud", "Edge", "Suite"])
        ),
        launch: founded + 5 + rng.range(0, 20) as u32,
        growth: 2 + rng.range(0, 30) as u32,
    }
}

fn fmt_thousands(n: u32) -> String {
    if n >= 1000 {
        format!("{},{:03}", n / 1000, n % 1000)
    } else {
        n.to_string()
    }
}

/// A fact sentence in document style.
fn doc_sentence(rng: &mut SplitMix64, c: &Company, a: Attr) -> String {
    let e = &c.name;
    match a {
        Attr::Founded => match rng.range(0, 3) {
            0 => format!("{e} was founded in {}.", c.founded),
            1 => format!("Founded in {}, {e} started as a small workshop.", c.founded),
            _ => format!(
                "{e} traces its origins to {}, when a group of engineers set it up.",
                c.founded
            ),
        },
        Attr::City => match rng.range(0, 3) {
            0 => format!("{e} is headquartered in {}.", c.city),
            1 => format!("The headquarters of {e} are located in {}.", c.city),
            _ => format!("{e} operates from its main campus in {}.", c.city),
        },
        Attr::Employees => match rng.range(0, 3) {
            0 => format!("{e} employs {} people.", fmt_thousands(c.employees)),
            1 => format!(
                "{e} has a workforce of about {} employees.",
                fmt_thousands(c.employees)
            ),
            _ => format!(
                "As of last year, {e} had {} staff members.",
                fmt_thousands(c.employees)
            ),
        },
        Attr::Revenue => match rng.range(0, 2) {
            0 => format!(
                "{e} reported revenue of {:.1} billion dollars last year.",
                c.revenue
            ),
            _ => format!("Annual revenue at {e} reached {:.1} billion.", c.revenue),
        },
        Attr::Ceo => match rng.range(0, 3) {
            0 => format!("The chief executive of {e} is {}.", c.ceo),
            1 => format!("{} has led {e} as CEO since taking over the role.", c.ceo),
            _ => format!("{e} is run by {}, its chief executive.", c.ceo),
        },
        Attr::Product => match rng.range(0, 2) {
            0 => format!("{e} launched {} in {}.", c.product, c.launch),
            _ => format!(
                "The flagship product of {e}, {}, was introduced in {}.",
                c.product, c.launch
            ),
        },
        Attr::Growth => match rng.range(0, 2) {
            0 => format!(
                "Sales at {e} grew {} percent over the previous year.",
                c.growth
            ),
            _ => format!("{e} posted growth of {} percent.", c.growth),
        },
    }
}

/// A claim sentence in answer style (paraphrased; sometimes without the company name).
fn answer_sentence(rng: &mut SplitMix64, c: &Company, a: Attr) -> String {
    let e = &c.name;
    match a {
        Attr::Founded => match rng.range(0, 3) {
            0 => format!("{e} was established in {}.", c.founded),
            1 => format!("{e} dates back to {}.", c.founded),
            _ => format!("{e} was founded in {}.", c.founded),
        },
        Attr::City => match rng.range(0, 3) {
            0 => format!("It is based in {}.", c.city),
            1 => format!("{e} has its headquarters in {}.", c.city),
            _ => format!("The company is based in {}.", c.city),
        },
        Attr::Employees => match rng.range(0, 3) {
            0 => format!(
                "The company has roughly {} employees.",
                fmt_thousands(c.employees)
            ),
            1 => format!("{e} employs about {} people.", c.employees),
            _ => format!("Its staff numbers around {}.", fmt_thousands(c.employees)),
        },
        Attr::Revenue => match rng.range(0, 2) {
            0 => format!(
                "Its annual revenue is about {:.1} billion dollars.",
                c.revenue
            ),
            _ => format!(
                "{e} generated {:.1} billion in revenue last year.",
                c.revenue
            ),
        },
        Attr::Ceo => match rng.range(0, 3) {
            0 => format!("{} serves as chief executive.", c.ceo),
            1 => format!("The company is led by {}.", c.ceo),
            _ => format!("The CEO of {e} is {}.", c.ceo),
        },
        Attr::Product => match rng.range(0, 2) {
            0 => format!("{e} introduced {} in {}.", c.product, c.launch),
            _ => format!(
                "Its best-known product, {}, came out in {}.",
                c.product, c.launch
            ),
        },
        Attr::Growth => match rng.range(0, 2) {
            0 => format!("Sales rose {} percent year over year.", c.growth),
            _ => format!("{e} grew by {} percent last year.", c.growth),
        },
    }
}

fn attr_value(c: &Company, a: Attr) -> String {
    match a {
        Attr::Founded => c.founded.to_string(),
        Attr::City => c.city.clone(),
        Attr::Employees => c.employees.to_string(),
        Attr::Revenue => format!("{:.1}", c.revenue),
        Attr::Ceo => c.ceo.clone(),
        Attr::Product => c.launch.to_string(),
        Attr::Growth => c.growth.to_string(),
    }
}

fn set_from(c: &mut Company, donor: &Company, a: Attr) {
    match a {
        Attr::Founded => c.founded = donor.founded,
        Attr::City => c.city.clone_from(&donor.city),
        Attr::Employees => c.employees = donor.employees,
        Attr::Revenue => c.revenue = donor.revenue,
        Attr::Ceo => c.ceo.clone_from(&donor.ceo),
        Attr::Product => c.launch = donor.launch,
        Attr::Growth => c.growth = donor.growth,
    }
}

fn set_fresh(rng: &mut SplitMix64, c: &mut Company, a: Attr) {
    let delta = 1 + rng.range(0, 6) as u32;
    match a {
        Attr::Founded => c.founded = c.founded.saturating_sub(delta),
        Attr::City => c.city = rng.pick(CITIES).to_string(),
        Attr::Employees => c.employees += 100 * (3 + rng.range(0, 40) as u32),
        Attr::Revenue => c.revenue = ((c.revenue * (1.2 + rng.unit())) * 10.0).round() / 10.0 + 0.3,
        Attr::Ceo => c.ceo = format!("{} {}", rng.pick(FIRST), rng.pick(LAST)),
        Attr::Product => c.launch += delta,
        Attr::Growth => c.growth += delta + 3,
    }
}

/// Corrupt attribute `a` of the target: swap in a distractor company's value (which is in the
/// documents) or invent a fresh one; the value always differs from the truth.
fn corrupt(
    rng: &mut SplitMix64,
    target: &Company,
    others: &[Company],
    a: Attr,
    hard: bool,
) -> (Company, &'static str) {
    let numeric = !matches!(a, Attr::Ceo | Attr::City);
    let truth = attr_value(target, a);
    if hard || rng.chance(0.5) {
        let start = rng.range(0, others.len());
        for k in 0..others.len() {
            let donor = &others[(start + k) % others.len()];
            if attr_value(donor, a) != truth {
                let mut c = target.clone();
                set_from(&mut c, donor, a);
                return (
                    c,
                    if numeric {
                        "number_swap"
                    } else {
                        "entity_swap"
                    },
                );
            }
        }
    }
    let mut c = target.clone();
    for _ in 0..16 {
        set_fresh(rng, &mut c, a);
        if attr_value(&c, a) != truth {
            break;
        }
    }
    (
        c,
        if numeric {
            "fresh_number"
        } else {
            "fresh_entity"
        },
    )
}

fn fabricated_event(rng: &mut SplitMix64, c: &Company) -> String {
    let year = c.founded + 10 + rng.range(0, 25) as u32;
    match rng.range(0, 3) {
        0 => format!(
            "{} acquired {}{} in {year}.",
            c.name,
            rng.pick(PREFIX),
            rng.pick(&["ix", "lane", "hub", "tek"])
        ),
        1 => format!("{} won the {} award in {year}.", c.name, rng.pick(AWARDS)),
        _ => format!(
            "In {year} {} opened a second headquarters in {}.",
            c.name,
            rng.pick(CITIES)
        ),
    }
}

/// Generate one set (see module docs).
pub fn generate(cfg: &GeneratorConfig) -> Vec<LabelledExample> {
    let mut rng = SplitMix64::new(cfg.seed);
    let hard = cfg.difficulty == Difficulty::Hard;
    let mut out = Vec::with_capacity(cfg.examples);
    for idx in 0..cfg.examples {
        let mut used = Vec::new();
        let n_companies = 3 + rng.range(0, 3);
        let companies: Vec<Company> = (0..n_companies)
            .map(|_| company(&mut rng, &mut used))
            .collect();
        let target = &companies[0];
        let others = &companies[1..];

        // which target facts the documents show: 4-6 of 7
        let mut shown: Vec<Attr> = ATTRS.to_vec();
        while shown.len() > 4 + rng.range(0, 3) {
            let i = rng.range(0, shown.len());
            shown.remove(i);
        }
        let hidden: Vec<Attr> = ATTRS
            .iter()
            .copied()
            .filter(|a| !shown.contains(a))
            .collect();

        // documents: target facts split over 1-2 passages, distractors in the rest
        let mut docs: Vec<Vec<String>> = vec![Vec::new(); 3 + rng.range(0, 3)];
        let target_docs = 1 + rng.range(0, 2);
        for a in &shown {
            let d = rng.range(0, target_docs);
            let s = doc_sentence(&mut rng, target, *a);
            docs[d].push(s);
        }
        for (i, o) in others.iter().enumerate() {
            for a in ATTRS {
                if rng.chance(0.6) {
                    let d = rng.range(0, docs.len());
                    let s = doc_sentence(&mut rng, o, a);
                    docs[d].push(s);
                }
            }
            let d = (i + target_docs) % docs.len();
            let s = doc_sentence(&mut rng, o, Attr::Founded);
            docs[d].push(s);
        }
        for d in docs.iter_mut() {
            d.push(rng.pick(DOC_FILLER).to_string());
            // light shuffle keeps the target's facts from always leading
            let n = d.len();
            for i in (1..n).rev() {
                let j = rng.range(0, i + 1);
                d.swap(i, j);
            }
        }
        let documents: Vec<RetrievedDocument> = docs
            .iter()
            .enumerate()
            .map(|(i, s)| RetrievedDocument {
                id: format!("doc-{i}"),
                text: s.join(" "),
            })
            .collect();

        // answer
        let hallucinated = rng.chance(cfg.hallucination_rate);
        let n_claims = (2 + rng.range(0, 3)).min(shown.len());
        let mut claims: Vec<Attr> = shown.clone();
        while claims.len() > n_claims {
            let i = rng.range(0, claims.len());
            claims.remove(i);
        }
        let mut sentences: Vec<String> = Vec::new();
        let mut corrupted: Vec<usize> = Vec::new();
        let mut kind = "grounded";
        let n_bad = if hallucinated {
            1 + usize::from(rng.chance(0.25))
        } else {
            0
        };
        let bad: Vec<usize> = {
            let mut v: Vec<usize> = (0..claims.len()).collect();
            for i in (1..v.len()).rev() {
                let j = rng.range(0, i + 1);
                v.swap(i, j);
            }
            v.truncate(n_bad);
            v
        };
        for (ci, a) in claims.iter().enumerate() {
            if bad.contains(&ci) {
                corrupted.push(sentences.len());
                let mode = if hard { 0 } else { rng.range(0, 10) };
                match mode {
                    0..=5 => {
                        let (c, k) = corrupt(&mut rng, target, others, *a, hard);
                        kind = k;
                        sentences.push(answer_sentence(&mut rng, &c, *a));
                    }
                    6 | 7 => {
                        kind = "fabricated_event";
                        sentences.push(fabricated_event(&mut rng, target));
                    }
                    _ => {
                        kind = "not_in_context";
                        let a2 = hidden.first().copied().unwrap_or(*a);
                        let (c, _) = if hidden.is_empty() {
                            corrupt(&mut rng, target, others, a2, false)
                        } else {
                            (target.clone(), "")
                        };
                        sentences.push(answer_sentence(&mut rng, &c, a2));
                    }
                }
            } else {
                sentences.push(answer_sentence(&mut rng, target, *a));
            }
        }
        if rng.chance(if hard { 0.6 } else { 0.35 }) {
            let pos = rng.range(1, sentences.len() + 1);
            sentences.insert(pos, rng.pick(ANSWER_FILLER).to_string());
            for c in corrupted.iter_mut() {
                if *c >= pos {
                    *c += 1;
                }
            }
        }
        let logprobs = synthetic_logprobs(&mut rng, &sentences, &corrupted, hallucinated, hard);
        out.push(LabelledExample {
            id: format!("{}-{idx}", cfg.seed),
            request: HallucinationRequest {
                answer: sentences.join(" "),
                documents,
                logprobs: Some(logprobs),
                options: HallucinationOptions {
                    uncertainty: UncertaintyOptions::default(),
                    ..Default::default()
                },
            },
            hallucinated,
            kind: kind.to_string(),
        });
    }
    out
}

/// Top-20 logprobs for whitespace tokens of the answer (see module docs, step 4).
fn synthetic_logprobs(
    rng: &mut SplitMix64,
    sentences: &[String],
    corrupted: &[usize],
    hallucinated: bool,
    hard: bool,
) -> ChoiceLogprobs {
    let style = rng.normal() * 0.8; // per-example, label-independent
    let aware_p = if hard { 0.35 } else { 0.55 };
    let aware = if hallucinated {
        rng.chance(aware_p)
    } else {
        rng.chance(0.2)
    };
    let bumped: Option<usize> = if !aware {
        None
    } else if hallucinated {
        corrupted.first().copied()
    } else {
        Some(rng.range(0, sentences.len().max(1)))
    };
    let mut content = Vec::new();
    for (si, s) in sentences.iter().enumerate() {
        for word in s.split_whitespace() {
            let salient = word.chars().any(|c| c.is_ascii_digit())
                || word.chars().next().is_some_and(char::is_uppercase);
            // logit of the sampled token's probability: high = confident
            let mut logit = 3.0 - style + rng.normal() * 1.2 - if salient { 1.2 } else { 0.0 };
            if bumped == Some(si) {
                logit -= if salient { 2.0 + rng.unit() * 1.5 } else { 0.8 };
            }
            let p_top = 1.0 / (1.0 + (-logit).exp());
            content.push(token_entry(rng, word, p_top));
        }
    }
    ChoiceLogprobs {
        content,
        refusal: Vec::new(),
    }
}

fn token_entry(rng: &mut SplitMix64, word: &str, p_top: f64) -> TokenLogprob {
    let rest = 1.0 - p_top;
    let tail = rest * (0.05 + 0.25 * rng.unit());
    let ratio = 0.55 + 0.3 * rng.unit();
    let raw: Vec<f64> = (0..19).map(|i| ratio.powi(i)).collect();
    let norm: f64 = raw.iter().sum();
    let alts: Vec<f64> = raw.iter().map(|r| r / norm * (rest - tail)).collect();
    // usually the sampled token is the most likely one; sometimes sampling picked the second
    let sampled_is_top = alts.first().is_none_or(|a| p_top >= *a) || rng.chance(0.5);
    let round = |p: f64| (p.max(1e-12).ln() * 1e6).round() / 1e6; // APIs round logprobs
    let sampled_lp = round(p_top);
    let mut top = vec![TopLogprob {
        token: word.to_string(),
        logprob: sampled_lp,
        bytes: Some(word.as_bytes().to_vec()),
    }];
    top.extend(alts.iter().enumerate().map(|(i, p)| TopLogprob {
        token: format!("alt{i}"),
        logprob: round(*p),
        bytes: None,
    }));
    if !sampled_is_top {
        top.swap(0, 1);
    }
    TokenLogprob {
        token: word.to_string(),
        logprob: sampled_lp,
        bytes: Some(word.as_bytes().to_vec()),
        top_logprobs: top,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_labelled() {
        let cfg = GeneratorConfig {
            seed: 7,
            examples: 40,
            hallucination_rate: 0.4,
            difficulty: Difficulty::Standard,
        };
        let a = generate(&cfg);
        let b = generate(&cfg);
        assert_eq!(a, b);
        assert_eq!(a.len(), 40);
        let pos = a.iter().filter(|e| e.hallucinated).count();
        assert!(pos > 5 && pos < 30, "{pos}");
        for e in &a {
            assert_eq!(e.hallucinated, e.kind != "grounded", "{}", e.kind);
            assert!(e.request.documents.len() >= 3);
            let lp = e.request.logprobs.as_ref().map_or(0, |l| l.content.len());
            assert_eq!(lp, e.request.answer.split_whitespace().count());
        }
    }
}
