//! What an answer was grounded on, read from its trace: the context an LLM span's answer is
//! scored against, and the dimensions its evaluation is grouped by (route, prompt template).
//!
//! The context of an LLM span `L`, in this order (a tie between passages goes to the first):
//! 1. **retrieved documents** of every other span of the trace that started no later than `L`
//!    and is not one of `L`'s descendants (its ancestors, its earlier siblings and what they
//!    contain: a LangChain retriever under a chain span, next to the SDK's chat span), with
//!    the retriever's score when it gave one;
//! 2. **tool results**: tool spans under the same rule ([`prompt::tool_span_result`]), then the
//!    tool messages of `L`'s own input;
//! 3. **system instructions** of `L` (RAG applications often put the retrieved passages
//!    there).
//!
//! An answer is scored only when its context holds a retrieved document or a tool result:
//! system instructions alone ("You are a helpful assistant") are no evidence to ground on.
//! `L`'s events include the GenAI log records correlated to it ([`log_events`]).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use sightline_detect::hallucination::RetrievedDocument;
use sightline_storage::{LogRecord, SpanEvent, SpanId, SpanRecord};

use super::evaluate::EVALUATION_SPAN;
use crate::otlp::genai::content::{has_documents, scored_documents};
use crate::otlp::genai::evidence::route_of;
pub use crate::otlp::genai::evidence::{ContextItem, ContextKind};
use crate::otlp::genai::log_events::log_event;
use crate::otlp::genai::prompt::{self, prompt_context, template_name, tool_span_result};

/// Id of the context item holding `L`'s system instructions.
pub const SYSTEM_INSTRUCTIONS_ID: &str = "system_instructions";

/// One trace as the assembler reads it: its spans and, per span, the GenAI events of the log
/// records correlated to it.
pub struct TraceContent<'a> {
    spans: &'a [SpanRecord],
    by_id: HashMap<SpanId, &'a SpanRecord>,
    log_events: HashMap<SpanId, Vec<SpanEvent>>,
}

impl<'a> TraceContent<'a> {
    /// Indexes `spans` and the GenAI events among `logs`.
    pub fn new(spans: &'a [SpanRecord], logs: &[LogRecord]) -> Self {
        let mut log_events: HashMap<SpanId, Vec<SpanEvent>> = HashMap::new();
        for l in logs {
            if let (Some(span), Some(e)) = (l.span_id, log_event(l)) {
                log_events.entry(span).or_default().push(e);
            }
        }
        for events in log_events.values_mut() {
            events.sort_by_key(|e| e.time);
        }
        Self {
            spans,
            by_id: spans.iter().map(|s| (s.span_id, s)).collect(),
            log_events,
        }
    }

    /// The spans of the trace.
    pub fn spans(&self) -> &'a [SpanRecord] {
        self.spans
    }

    /// `s`'s events followed by those of its correlated log records (borrowed when it has
    /// no such records, the common case).
    pub fn events_of<'s>(&self, s: &'s SpanRecord) -> Cow<'s, [SpanEvent]> {
        match self.log_events.get(&s.span_id) {
            Some(more) => Cow::Owned(s.events.iter().chain(more).cloned().collect()),
            None => Cow::Borrowed(&s.events),
        }
    }

    /// Whether `s` descends from `target` (walks up, bounded by the trace's size, so a cycle
    /// in parent ids cannot loop).
    fn descends(&self, s: &SpanRecord, target: &SpanRecord) -> bool {
        let mut cur = s.parent_span_id;
        for _ in 0..self.spans.len() {
            match cur {
                Some(p) if p == target.span_id => return true,
                Some(p) => cur = self.by_id.get(&p).and_then(|x| x.parent_span_id),
                None => return false,
            }
        }
        false
    }

    /// `target`'s ancestors, nearest first (bounded by the trace's size).
    fn ancestors(&self, target: &SpanRecord) -> Vec<&'a SpanRecord> {
        let mut out = Vec::new();
        let mut cur = target.parent_span_id;
        while let Some(p) = cur {
            if out.len() >= self.spans.len() {
                break;
            }
            match self.by_id.get(&p) {
                Some(s) => {
                    out.push(*s);
                    cur = s.parent_span_id;
                }
                None => break,
            }
        }
        out
    }

    /// Spans of the trace that started no later than `target` and are neither `target`,
    /// its descendants nor evaluations, oldest first.
    fn before(&self, target: &SpanRecord) -> Vec<&'a SpanRecord> {
        let mut out: Vec<&SpanRecord> = self
            .spans
            .iter()
            .filter(|s| s.span_id != target.span_id && s.name != EVALUATION_SPAN)
            .filter(|s| s.start <= target.start && !self.descends(s, target))
            .collect();
        out.sort_by_key(|s| (s.start, s.span_id));
        out
    }

    /// `target`'s context (see the module docs); `events` are its events with its log
    /// records'.
    pub fn context(&self, target: &SpanRecord, events: &[SpanEvent]) -> Vec<ContextItem> {
        let before = self.before(target);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut push = |item: ContextItem, out: &mut Vec<ContextItem>| {
            // The same passage retrieved twice counts once.
            if seen.insert((item.doc.id.clone(), item.doc.text.len())) {
                out.push(item);
            }
        };
        for s in before.iter().filter(|s| has_documents(&s.attributes)) {
            for (doc, score) in scored_documents(&s.attributes) {
                let item = ContextItem {
                    doc,
                    kind: ContextKind::Document,
                    source: s.span_id,
                    score,
                };
                push(item, &mut out);
            }
        }
        for s in &before {
            if let Some((name, text)) =
                tool_span_result(&s.attributes, s.gen_ai.operation_name.as_deref())
            {
                let item = ContextItem {
                    doc: RetrievedDocument {
                        id: format!("tool:{name}"),
                        text,
                    },
                    kind: ContextKind::ToolResult,
                    source: s.span_id,
                    score: None,
                };
                push(item, &mut out);
            }
        }
        let own = prompt_context(&target.attributes, events);
        for (i, (call, text)) in own.tool_results.into_iter().enumerate() {
            let id = match call {
                Some(c) => format!("tool:{c}"),
                None => format!("tool:{i}"),
            };
            let item = ContextItem {
                doc: RetrievedDocument { id, text },
                kind: ContextKind::ToolResult,
                source: target.span_id,
                score: None,
            };
            push(item, &mut out);
        }
        if !out
            .iter()
            .any(|c| c.kind != ContextKind::SystemInstructions)
        {
            return Vec::new();
        }
        if let Some(text) = own.system_instructions {
            let item = ContextItem {
                doc: RetrievedDocument {
                    id: SYSTEM_INSTRUCTIONS_ID.into(),
                    text,
                },
                kind: ContextKind::SystemInstructions,
                source: target.span_id,
                score: None,
            };
            push(item, &mut out);
        }
        out
    }

    /// The route `target` served: `app.route` or `http.route` of `target` or its nearest
    /// ancestor that has one.
    pub fn route(&self, target: &SpanRecord) -> Option<String> {
        std::iter::once(target)
            .chain(self.ancestors(target))
            .find_map(|s| route_of(&s.attributes))
    }

    /// The prompt template `target` was made from: from `target`, its ancestors, then the
    /// latest earlier span that names one ([`template_name`]).
    pub fn prompt_template(&self, target: &SpanRecord) -> Option<String> {
        let mut earlier = self.before(target);
        earlier.reverse();
        std::iter::once(target)
            .chain(self.ancestors(target))
            .chain(earlier)
            .find_map(|s| template_name(&s.attributes))
    }
}

/// Whether a span is a piece of context the assembler waits for: retrieved documents, a tool
/// result, or tool messages in its input (`events` include its log records').
pub fn has_context(s: &SpanRecord, events: &[SpanEvent]) -> bool {
    has_documents(&s.attributes)
        || tool_span_result(&s.attributes, s.gen_ai.operation_name.as_deref()).is_some()
        || prompt::has_tool_results(&s.attributes, events)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::assembly::test_spans::{s, span};
    use sightline_storage::{AttrValue, TraceId, UnixNanos};

    #[test]
    fn documents_then_tools_then_system_instructions() {
        let spans = vec![
            span(1, None, 0, vec![("http.route", s("/ask"))]),
            span(
                2,
                Some(1),
                1,
                vec![
                    (
                        "gen_ai.retrieval.documents",
                        s(r#"[{"id":"d1","text":"Alpha.","score":0.8}]"#),
                    ),
                    ("llm.prompt_template.template", s("Answer: {q}")),
                    ("llm.prompt_template.version", s("v3")),
                ],
            ),
            span(
                3,
                Some(1),
                2,
                vec![
                    ("gen_ai.operation.name", s("execute_tool")),
                    ("gen_ai.tool.name", s("weather")),
                    ("gen_ai.tool.call.result", s("Sunny.")),
                ],
            ),
            span(
                4,
                Some(1),
                3,
                vec![(
                    "gen_ai.input.messages",
                    s(
                        r#"[{"role":"system","parts":[{"type":"text","content":"Be exact."}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"c7","response":"42"}]}]"#,
                    ),
                )],
            ),
        ];
        let t = TraceContent::new(&spans, &[]);
        let target = &spans[3];
        let ctx = t.context(target, &t.events_of(target));
        let got: Vec<(&str, ContextKind, Option<f64>)> = ctx
            .iter()
            .map(|c| (c.doc.id.as_str(), c.kind, c.score))
            .collect();
        assert_eq!(
            got,
            [
                ("d1", ContextKind::Document, Some(0.8)),
                ("tool:weather", ContextKind::ToolResult, None),
                ("tool:c7", ContextKind::ToolResult, None),
                (
                    SYSTEM_INSTRUCTIONS_ID,
                    ContextKind::SystemInstructions,
                    None
                ),
            ]
        );
        assert_eq!(t.route(target).as_deref(), Some("/ask"));
        assert_eq!(t.prompt_template(target).as_deref(), Some("Answer: {q}@v3"));
    }

    #[test]
    fn system_instructions_alone_are_no_context() {
        let spans = vec![span(
            1,
            None,
            0,
            vec![("gen_ai.system_instructions", s("You are helpful."))],
        )];
        let t = TraceContent::new(&spans, &[]);
        assert!(t.context(&spans[0], &[]).is_empty());
        assert_eq!(t.route(&spans[0]), None);
        assert_eq!(t.prompt_template(&spans[0]), None);
    }

    #[test]
    fn correlated_log_records_are_the_spans_events() {
        let spans = vec![span(4, None, 3, vec![])];
        let log = LogRecord {
            time: UnixNanos(4),
            observed_time: UnixNanos(4),
            severity_number: 9,
            severity_text: String::new(),
            body: AttrValue::KvList(vec![
                ("content".into(), s("tool output")),
                ("id".into(), s("call_1")),
            ]),
            trace_id: Some(TraceId([9; 16])),
            span_id: Some(SpanId([4; 8])),
            flags: 0,
            service_name: "rag".into(),
            scope_name: String::new(),
            event_name: "gen_ai.tool.message".into(),
            resource_attributes: Vec::new(),
            attributes: Vec::new(),
        };
        let t = TraceContent::new(&spans, &[log]);
        let events = t.events_of(&spans[0]);
        assert_eq!(events.len(), 1);
        assert!(has_context(&spans[0], &events));
        let ctx = t.context(&spans[0], &events);
        assert_eq!(ctx[0].doc.id, "tool:call_1");
    }
}
