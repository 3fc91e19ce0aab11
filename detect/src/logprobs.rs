//! Serde types for the OpenAI Chat Completions `choices[].logprobs` object, and parsing with
//! typed errors.
//!
//! Shape (OpenAI API reference, "The chat completion object" / `logprobs`):
//! `{"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}],
//!   "refusal": null}`. `bytes` and `top_logprobs` may be `null` or absent. JSON cannot carry
//! NaN or infinities, but values built in code can; [`crate::entropy`] validates every number.

use crate::error::{DetectError, Result};
use serde::{Deserialize, Deserializer, Serialize};

/// Most tokens accepted in one response (a limit on work per request).
pub const MAX_TOKENS: usize = 10_000_000;

fn null_as_empty<'de, D, T>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// One alternative at a token position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    /// The alternative token text.
    pub token: String,
    /// Its natural-log probability (`<= 0`).
    pub logprob: f64,
    /// UTF-8 bytes of the token, when provided.
    #[serde(default)]
    pub bytes: Option<Vec<u8>>,
}

/// One generated token with its log-probability and the top alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The sampled token text.
    pub token: String,
    /// Natural-log probability of the sampled token.
    pub logprob: f64,
    /// UTF-8 bytes of the token, when provided.
    #[serde(default)]
    pub bytes: Option<Vec<u8>>,
    /// Up to `k` most likely tokens at this position (may or may not include the sampled one).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub top_logprobs: Vec<TopLogprob>,
}

impl TokenLogprob {
    /// Whether the sampled token appears among `top_logprobs` (same text, and same bytes when
    /// both are given).
    pub fn sampled_in_top(&self) -> bool {
        self.top_logprobs.iter().any(|t| {
            t.token == self.token
                && match (&t.bytes, &self.bytes) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        })
    }
}

/// The `logprobs` object of one choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChoiceLogprobs {
    /// Per-token log-probabilities of the message content.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub content: Vec<TokenLogprob>,
    /// Per-token log-probabilities of a refusal, when the model refused.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub refusal: Vec<TokenLogprob>,
}

/// Parse a `logprobs` object (`{"content": [...]}`) from JSON text. Also accepts a bare array
/// of token entries (the `content` list itself).
pub fn parse_logprobs(json: &str) -> Result<ChoiceLogprobs> {
    let trimmed = json.trim_start();
    let parsed = if trimmed.starts_with('[') {
        serde_json::from_str::<Vec<TokenLogprob>>(json).map(|content| ChoiceLogprobs {
            content,
            refusal: Vec::new(),
        })
    } else {
        serde_json::from_str::<ChoiceLogprobs>(json)
    };
    let parsed = parsed.map_err(|e| DetectError::json("logprobs", &e))?;
    if parsed.content.len() > MAX_TOKENS {
        return Err(DetectError::InvalidParameter {
            name: "content",
            reason: format!(
                "{} tokens exceed the limit of {MAX_TOKENS}",
                parsed.content.len()
            ),
        });
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in ".{0,300}") {
            let _ = parse_logprobs(&s);
        }

        #[test]
        fn arbitrary_numbers_parse_then_compute_without_panic(
            lps in proptest::collection::vec((-1e6f64..1.0, proptest::collection::vec(-1e6f64..1.0, 0..5)), 0..20)
        ) {
            let content: Vec<String> = lps.iter().map(|(lp, top)| {
                let tops: Vec<String> = top.iter().enumerate().map(|(i, t)| format!(r#"{{"token":"t{i}","logprob":{t}}}"#)).collect();
                format!(r#"{{"token":"x","logprob":{lp},"top_logprobs":[{}]}}"#, tops.join(","))
            }).collect();
            let json = format!(r#"{{"content":[{}]}}"#, content.join(","));
            let parsed = parse_logprobs(&json);
            prop_assert!(parsed.is_ok(), "{:?}", parsed);
            if let Ok(p) = parsed {
                let _ = crate::entropy::response_uncertainty(&p, &crate::entropy::UncertaintyOptions::default());
            }
        }
    }

    #[test]
    fn parses_openai_shape_with_nulls() {
        let json = r#"{"content": [
            {"token": "Hello", "logprob": -0.31, "bytes": [72,101,108,108,111],
             "top_logprobs": [{"token": "Hello", "logprob": -0.31, "bytes": [72,101,108,108,111]},
                              {"token": "Hi", "logprob": -1.4, "bytes": null}]},
            {"token": "!", "logprob": -0.01, "bytes": null, "top_logprobs": null}
        ], "refusal": null}"#;
        let lp = parse_logprobs(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(lp.content.len(), 2);
        assert!(lp.content[0].sampled_in_top());
        assert!(lp.content[1].top_logprobs.is_empty());
        let bare =
            parse_logprobs(r#"[{"token": "a", "logprob": 0}]"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bare.content.len(), 1);
    }

    #[test]
    fn bad_json_is_a_typed_error() {
        for bad in [
            "",
            "{",
            r#"{"content": [{"token": "a"}]}"#,
            r#"{"content": [{"token": "a", "logprob": "x"}]}"#,
            r#"{"content": [{"token": "a", "logprob": 1e999}]}"#,
            r#"{"content": [{"token": "a", "logprob": -1, "bytes": [300]}]}"#,
        ] {
            assert!(
                matches!(parse_logprobs(bad), Err(DetectError::InvalidJson { .. })),
                "{bad}"
            );
        }
    }
}
