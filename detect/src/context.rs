//! Context-expansion rate: how fast a conversation's input (prompt) grows across turns,
//! relative to what the model wrote.
//!
//! Per conversation (turns ordered by timestamp, ties by input order):
//! `expansion_rate = (input_last - input_first) / sum_{i < last} output_i`.
//! An app that resends the whole history grows its input by each previous answer plus the new
//! user message, so the rate is a little above 1; well above 1 means context is added faster
//! than the model writes (tool results, retrieved documents, system prompts re-injected);
//! below 1 means truncation or summarisation. Per model/route the rate is pooled (sum of
//! growth over sum of prior output, i.e. weighted by output tokens) and summarised by the
//! median and p90 of the per-conversation rates. A conversation is attributed to the route of
//! its first turn; conversations that switch routes are listed.

use crate::error::{DetectError, Result};
use crate::stats::quantile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most turns in one request (a limit on memory per call).
pub const MAX_TURNS: usize = 10_000_000;

/// One LLM call within a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Conversation (session/thread) id.
    pub conversation_id: String,
    /// Request time, milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
    /// Model or route name.
    pub route: String,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's KV/prompt cache, when reported.
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

/// Expansion of one conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationExpansion {
    /// Conversation id.
    pub conversation_id: String,
    /// Route of its first turn.
    pub route: String,
    /// Number of turns.
    pub turns: usize,
    /// Input tokens of the first turn.
    pub first_input_tokens: u64,
    /// Input tokens of the last turn.
    pub last_input_tokens: u64,
    /// Output tokens of all turns but the last (what could have been fed back).
    pub prior_output_tokens: u64,
    /// `(last - first) / prior_output`; `None` when no prior output.
    pub expansion_rate: Option<f64>,
    /// Mean growth of input tokens per turn.
    pub mean_input_growth_per_turn: f64,
}

/// Expansion aggregated over the conversations of one route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteExpansion {
    /// Route or model.
    pub route: String,
    /// Conversations with at least two turns.
    pub conversations: usize,
    /// Turns in those conversations.
    pub turns: usize,
    /// Sum of input growth over sum of prior output tokens.
    pub pooled_rate: Option<f64>,
    /// Median per-conversation rate.
    pub median_rate: Option<f64>,
    /// 90th percentile per-conversation rate.
    pub p90_rate: Option<f64>,
}

/// Result of [`context_expansion`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextExpansionReport {
    /// Per conversation with at least two turns, sorted by id.
    pub conversations: Vec<ConversationExpansion>,
    /// Per route, sorted by name.
    pub routes: Vec<RouteExpansion>,
    /// Conversations with a single turn (no expansion defined).
    pub single_turn_conversations: usize,
    /// Conversations whose turns use more than one route.
    pub mixed_route_conversations: Vec<String>,
}

/// Group turns by conversation, each sorted by time (stable on ties).
pub(crate) fn by_conversation(turns: &[Turn]) -> Result<BTreeMap<&str, Vec<&Turn>>> {
    if turns.is_empty() {
        return Err(DetectError::Empty { what: "turns" });
    }
    if turns.len() > MAX_TURNS {
        return Err(DetectError::InvalidParameter {
            name: "turns",
            reason: format!("more than {MAX_TURNS}"),
        });
    }
    let mut groups: BTreeMap<&str, Vec<&Turn>> = BTreeMap::new();
    for t in turns {
        groups
            .entry(t.conversation_id.as_str())
            .or_default()
            .push(t);
    }
    for g in groups.values_mut() {
        g.sort_by_key(|t| t.timestamp_ms);
    }
    Ok(groups)
}

/// Compute per-conversation and per-route context expansion (see module docs).
pub fn context_expansion(turns: &[Turn]) -> Result<ContextExpansionReport> {
    let groups = by_conversation(turns)?;
    let mut conversations = Vec::new();
    let mut single = 0;
    let mut mixed = Vec::new();
    for (id, g) in &groups {
        let (Some(first), Some(last)) = (g.first(), g.last()) else {
            continue;
        };
        if g.iter().any(|t| t.route != first.route) {
            mixed.push((*id).to_string());
        }
        if g.len() < 2 {
            single += 1;
            continue;
        }
        let prior: u64 = g[..g.len() - 1]
            .iter()
            .map(|t| t.output_tokens)
            .fold(0u64, u64::saturating_add);
        let growth = last.input_tokens as f64 - first.input_tokens as f64;
        conversations.push(ConversationExpansion {
            conversation_id: (*id).to_string(),
            route: first.route.clone(),
            turns: g.len(),
            first_input_tokens: first.input_tokens,
            last_input_tokens: last.input_tokens,
            prior_output_tokens: prior,
            expansion_rate: (prior > 0).then(|| growth / prior as f64),
            mean_input_growth_per_turn: growth / (g.len() - 1) as f64,
        });
    }
    let mut per_route: BTreeMap<&str, Vec<&ConversationExpansion>> = BTreeMap::new();
    for c in &conversations {
        per_route.entry(c.route.as_str()).or_default().push(c);
    }
    let routes = per_route
        .into_iter()
        .map(|(route, cs)| {
            let growth: f64 = cs
                .iter()
                .map(|c| c.last_input_tokens as f64 - c.first_input_tokens as f64)
                .sum();
            let prior: f64 = cs.iter().map(|c| c.prior_output_tokens as f64).sum();
            let rates: Vec<f64> = cs.iter().filter_map(|c| c.expansion_rate).collect();
            RouteExpansion {
                route: route.to_string(),
                conversations: cs.len(),
                turns: cs.iter().map(|c| c.turns).sum(),
                pooled_rate: (prior > 0.0).then(|| growth / prior),
                median_rate: quantile(&rates, 0.5),
                p90_rate: quantile(&rates, 0.9),
            }
        })
        .collect();
    Ok(ContextExpansionReport {
        conversations,
        routes,
        single_turn_conversations: single,
        mixed_route_conversations: mixed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn turn(
        c: &str,
        t: i64,
        route: &str,
        input: u64,
        output: u64,
        cached: Option<u64>,
    ) -> Turn {
        Turn {
            conversation_id: c.into(),
            timestamp_ms: t,
            route: route.into(),
            input_tokens: input,
            output_tokens: output,
            cache_read_input_tokens: cached,
        }
    }

    #[test]
    fn full_history_resend_has_rate_near_one() {
        // each turn: previous input + previous output + 20 new user tokens
        let mut turns = Vec::new();
        let (mut input, out) = (100u64, 50u64);
        for i in 0..5 {
            turns.push(turn("c1", 1000 * i, "gpt", input, out, None));
            input += out + 20;
        }
        // a RAG conversation that appends 300 retrieved tokens per turn, listed out of order
        turns.push(turn("c2", 2000, "rag", 800, 40, None));
        turns.push(turn("c2", 1000, "rag", 400, 40, None));
        turns.push(turn("c3", 5, "gpt", 10, 10, None));
        let r = context_expansion(&turns).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.conversations.len(), 2);
        let c1 = &r.conversations[0];
        assert_eq!(c1.expansion_rate, Some(4.0 * 70.0 / 200.0));
        let c2 = &r.conversations[1];
        assert_eq!(c2.expansion_rate, Some(10.0));
        assert_eq!(r.single_turn_conversations, 1);
        assert_eq!(r.routes.len(), 2);
        assert_eq!(r.routes[0].route, "gpt");
        assert_eq!(r.routes[0].pooled_rate, Some(1.4));
        assert!(context_expansion(&[]).is_err());
    }
}
