//! The simulated application: a RAG support/sales chat for a software shop. Its catalogue
//! (routes, models, providers), its knowledge base (documents with numbers and product names,
//! so grounding can be checked), and how one model call answers: a grounded answer copies facts
//! from a retrieved document; a hallucinated one changes a number or invents a product. Token
//! log-probabilities follow: confident on copied facts, uncertain where the model made
//! something up (OpenAI `logprobs` shape, top-3 alternatives).

use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

/// One model the router can call.
#[derive(Clone, Copy, Debug)]
pub struct Model {
    /// `gen_ai.request.model`.
    pub name: &'static str,
    /// `gen_ai.response.model` in normal operation.
    pub version: &'static str,
    /// `gen_ai.provider.name`.
    pub provider: &'static str,
    /// Base share of answers that are hallucinated.
    pub base_hallucination: f64,
    /// Median time to first token, seconds.
    pub ttft_s: f64,
    /// Seconds per output token.
    pub per_token_s: f64,
    /// Whether the provider reports prompt-cache reads.
    pub prompt_cache: bool,
    /// Dollars per 1M input / output tokens.
    pub price: (f64, f64),
}

/// The models, in router order.
pub const MODELS: [Model; 4] = [
    Model {
        name: "gpt-4o",
        version: "gpt-4o-2024-11-20",
        provider: "openai",
        base_hallucination: 0.06,
        ttft_s: 0.45,
        per_token_s: 0.012,
        prompt_cache: true,
        price: (2.5, 10.0),
    },
    Model {
        name: "gpt-4o-mini",
        version: "gpt-4o-mini-2024-07-18",
        provider: "openai",
        base_hallucination: 0.10,
        ttft_s: 0.30,
        per_token_s: 0.007,
        prompt_cache: true,
        price: (0.15, 0.6),
    },
    Model {
        name: "claude-sonnet-4",
        version: "claude-sonnet-4-20250514",
        provider: "anthropic",
        base_hallucination: 0.05,
        ttft_s: 0.60,
        per_token_s: 0.014,
        prompt_cache: true,
        price: (3.0, 15.0),
    },
    Model {
        name: "gemini-2.5-flash",
        version: "gemini-2.5-flash-001",
        provider: "gcp.gemini",
        base_hallucination: 0.08,
        ttft_s: 0.35,
        per_token_s: 0.006,
        prompt_cache: false,
        price: (0.3, 2.5),
    },
];

/// The version rolled out during the model-rollout incident.
pub const ROLLOUT_VERSION: &str = "gpt-4o-2026-11-20";

/// A chat route of the gateway (`app.route`) and the models it routes to, with weights.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    /// `app.route`.
    pub path: &'static str,
    /// Share of conversations.
    pub share: f64,
    /// `(index into MODELS, weight)`.
    pub models: &'static [(usize, f64)],
    /// System prompt size in tokens.
    pub system_tokens: u64,
}

/// The routes.
pub const ROUTES: [Route; 3] = [
    Route {
        path: "/chat/support",
        share: 0.5,
        models: &[(0, 0.6), (2, 0.4)],
        system_tokens: 420,
    },
    Route {
        path: "/chat/sales",
        share: 0.3,
        models: &[(0, 0.5), (1, 0.5)],
        system_tokens: 350,
    },
    Route {
        path: "/chat/docs",
        share: 0.2,
        models: &[(1, 0.5), (3, 0.5)],
        system_tokens: 300,
    },
];

const PRODUCTS: [&str; 6] = ["Starter", "Team", "Business", "Enterprise", "Scale", "Edge"];
const INVENTED: [&str; 5] = ["Ultimate", "Platinum", "Quantum", "Infinity", "Titan"];
const FEATURES: [&str; 6] = [
    "single sign-on",
    "audit logs",
    "priority support",
    "custom domains",
    "data export",
    "usage alerts",
];

/// One knowledge-base document with the facts it states.
#[derive(Clone, Debug)]
pub struct Document {
    /// Id as the retriever reports it.
    pub id: String,
    /// The product it describes.
    pub product: &'static str,
    /// Monthly price in dollars.
    pub price: u32,
    /// Seats included.
    pub seats: u32,
    /// Feature it highlights.
    pub feature: &'static str,
    /// Its text.
    pub text: String,
}

/// The knowledge base: one document per product and feature pairing.
pub fn corpus() -> Vec<Document> {
    let mut docs = Vec::new();
    for (i, product) in PRODUCTS.iter().enumerate() {
        for (j, feature) in FEATURES
            .iter()
            .enumerate()
            .filter(|(j, _)| (i + j) % 2 == 0)
        {
            let price = 19 + 30 * i as u32 + 5 * j as u32;
            let seats = 3 + 4 * i as u32 + j as u32;
            let text = format!(
                "The {product} plan costs {price} dollars per month and includes {seats} seats. \
                 {product} customers get {feature} at no extra charge. Billing is monthly and \
                 can be cancelled at any time from the account page."
            );
            docs.push(Document {
                id: format!("kb-{:03}", i * 10 + j),
                product,
                price,
                seats,
                feature,
                text,
            });
        }
    }
    docs
}

/// What a model call produced.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The answer text.
    pub text: String,
    /// OpenAI-shaped logprobs (`{"content": [...]}`).
    pub logprobs: Value,
    /// Number of output tokens.
    pub output_tokens: u64,
    /// Whether the generator made it up (ground truth; never sent).
    pub hallucinated: bool,
}

fn sample_alternatives(rng: &mut StdRng, token: &str, p: f64, pool: &[&str]) -> Value {
    // Top-3: the sampled token plus two alternatives sharing part of the remaining mass.
    let rest = 1.0 - p;
    let a = rest * rng.random_range(0.3..0.7);
    let b = (rest - a) * rng.random_range(0.2..0.6);
    let alt1 = pool[rng.random_range(0..pool.len())];
    let alt2 = pool[rng.random_range(0..pool.len())];
    let mut top = vec![
        (token.to_owned(), p),
        (format!(" {alt1}"), a),
        (format!(" {alt2}"), b),
    ];
    top.sort_by(|x, y| y.1.total_cmp(&x.1));
    top.dedup_by(|x, y| x.0 == y.0);
    Value::Array(
        top.into_iter()
            .map(|(t, p)| json!({"token": t, "logprob": p.max(1e-9).ln()}))
            .collect(),
    )
}

/// The answer of one call, given the retrieved documents and whether it hallucinates.
pub fn answer(rng: &mut StdRng, docs: &[&Document], hallucinate: bool, noise: f64) -> Answer {
    let Some(d) = docs.first() else {
        return Answer {
            text: "I could not find anything about that.".into(),
            logprobs: json!({"content": []}),
            output_tokens: 8,
            hallucinated: false,
        };
    };
    // Which facts are wrong: a changed price, seat count, or an invented product.
    let kind = rng.random_range(0..3);
    let (product, price, seats) = if hallucinate {
        match kind {
            0 => (d.product, d.price + 10 * rng.random_range(1..6), d.seats),
            1 => (d.product, d.price, d.seats + rng.random_range(3..20)),
            _ => (
                INVENTED[rng.random_range(0..INVENTED.len())],
                d.price + 100,
                d.seats * 3,
            ),
        }
    } else {
        (d.product, d.price, d.seats)
    };
    let text = format!(
        "The {product} plan costs {price} dollars per month and includes {seats} seats. \
         It comes with {} and you can cancel at any time.",
        d.feature
    );
    let made_up: Vec<String> = if hallucinate {
        match kind {
            0 => vec![price.to_string()],
            1 => vec![seats.to_string()],
            _ => vec![product.to_owned(), price.to_string(), seats.to_string()],
        }
    } else {
        Vec::new()
    };
    let pool = [
        "plan", "costs", "seats", "month", "the", "and", "includes", "dollars",
    ];
    let mut content = Vec::new();
    for (i, word) in text.split(' ').enumerate() {
        let token = if i == 0 {
            word.to_owned()
        } else {
            format!(" {word}")
        };
        let bare = word.trim_end_matches(['.', ',']);
        let uncertain = made_up.iter().any(|m| m == bare);
        let p = if uncertain {
            rng.random_range(0.25..0.55)
        } else {
            (1.0 - rng.random_range(0.0..0.08) - noise * rng.random_range(0.0..0.2)).max(0.3)
        };
        let top = sample_alternatives(rng, &token, p, &pool);
        content
            .push(json!({"token": token, "logprob": p.ln(), "bytes": null, "top_logprobs": top}));
    }
    let output_tokens = content.len() as u64 + rng.random_range(40..220);
    Answer {
        text,
        logprobs: json!({"content": content, "refusal": null}),
        output_tokens,
        hallucinated: hallucinate,
    }
}

/// A user question about `doc`.
pub fn question(rng: &mut StdRng, doc: &Document) -> String {
    match rng.random_range(0..3) {
        0 => format!("How much does the {} plan cost?", doc.product),
        1 => format!("How many seats come with {}?", doc.product),
        _ => format!("Which plan includes {}?", doc.feature),
    }
}

/// Picks an index by weight.
pub fn pick<T>(rng: &mut StdRng, items: &[(T, f64)]) -> usize {
    let total: f64 = items.iter().map(|(_, w)| w).sum();
    let mut x = rng.random_range(0.0..total.max(f64::MIN_POSITIVE));
    for (i, (_, w)) in items.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    items.len().saturating_sub(1)
}
