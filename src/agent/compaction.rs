//! Keeping a long conversation inside the model's context window.
//!
//! Before each request the loop estimates its size ([`Estimator`]). When it would pass
//! [`THRESHOLD`] of the window (or the provider refused a request as too long), the older turns
//! are summarised by one tool-less request to the same model, and the conversation goes on
//! from: the user's task, verbatim, with the summary and the current plan after it; then the
//! last few turns, verbatim. A tool call is never parted from its result.
//!
//! The summary request must fit too: its transcript drops the oldest tool outputs first, then
//! (if that is not enough) keeps only the newest part of what is left.

use crate::provider::{Message, Request, ThinkingBlock, ToolSpec};
use crate::tools::PlanStep;
use crate::tools::text::suffix_at_boundary;

/// The share of the window a request may fill before the conversation is compacted: the
/// response and the estimate's error need the rest.
pub(crate) const THRESHOLD: f64 = 0.85;

/// The share of the window the summary request's transcript may fill, leaving room for the
/// instructions and the summary itself.
const TRANSCRIPT_SHARE: f64 = 0.6;

/// How many of the newest turns are kept verbatim when there is room for them.
pub(crate) const KEEP_TURNS: usize = 3;

/// Bytes per token assumed until a response reports how many tokens a request had.
const BYTES_PER_TOKEN: f64 = 4.0;

/// What the model is asked to do with the transcript. Also how a test tells the request apart.
pub(crate) const SUMMARY_INSTRUCTIONS: &str = "Summarize the conversation so far for yourself: \
     it is about to be replaced by your summary to fit your context window. Keep what you need \
     to finish the task: what was asked, what you did and found (files, functions, commands \
     and their results, errors), decisions made, and what is left to do. Be concise and \
     specific; use plain text, no tool calls.";

/// The heading of the summary in the compacted conversation.
const SUMMARY_HEADING: &str = "## Earlier in this conversation (compacted to fit the context \
     window)";

/// Estimates a request's size in tokens: its text length, scaled by how many tokens per byte
/// the provider counted for the last request (so the estimate learns the tokenizer).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Estimator {
    tokens_per_byte: f64,
    /// The bytes of the run's tool definitions, measured once: they do not change.
    tool_bytes: usize,
}

impl Estimator {
    /// An estimator for the requests of a run that offers `tools`.
    pub(crate) fn new(tools: &[ToolSpec]) -> Self {
        Estimator {
            tokens_per_byte: 1.0 / BYTES_PER_TOKEN,
            tool_bytes: tools
                .iter()
                .map(|tool| {
                    tool.name.len() + tool.description.len() + tool.input_schema.to_string().len()
                })
                .sum(),
        }
    }

    /// The estimated tokens of `request`.
    pub(crate) fn tokens(&self, request: &Request) -> u64 {
        (self.bytes(request) as f64 * self.tokens_per_byte).ceil() as u64
    }

    /// Learns from a request of `request` size that the provider counted as `prompt_tokens`.
    pub(crate) fn observe(&mut self, request: &Request, prompt_tokens: u64) {
        let bytes = self.bytes(request);
        if bytes > 0 && prompt_tokens > 0 {
            self.tokens_per_byte = prompt_tokens as f64 / bytes as f64;
        }
    }

    /// The text `request` carries, in bytes: what its tokens are made of.
    fn bytes(&self, request: &Request) -> usize {
        let tools = if request.tools.is_empty() {
            0
        } else {
            self.tool_bytes
        };
        request.system.len() + tools + request.messages.iter().map(message_bytes).sum::<usize>()
    }
}

/// What `message` weighs in the estimate, in bytes of text: an image counts as the text of as
/// many tokens as the API reads for it ([`crate::image::Image::tokens`], the providers'
/// documented estimate), not as its own bytes.
fn message_bytes(message: &Message) -> usize {
    let images = message
        .images()
        .iter()
        .map(|image| image.tokens() as f64 * BYTES_PER_TOKEN)
        .sum::<f64>() as usize;
    images
        + match message {
            Message::User { content, .. } => content.len(),
            Message::Assistant {
                text,
                tool_calls,
                thinking,
            } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|call| call.name.len() + call.arguments.len() + call.id.len())
                        .sum::<usize>()
                    + thinking.iter().map(ThinkingBlock::size).sum::<usize>()
            }
            Message::ToolResult { output, .. } => output.len(),
        }
}

/// Where the verbatim tail of `messages` begins: the start of the oldest of the last `keep`
/// turns at most (an assistant message), so no call is parted from its result. `None` when
/// there is nothing before it to summarise beyond the task itself. A tail that would fill more
/// than half the window (`budget_tokens`, at `estimator`'s rate) keeps fewer turns, down to
/// none.
pub(crate) fn split(
    messages: &[Message],
    keep: usize,
    estimator: &Estimator,
    budget_tokens: u64,
) -> Option<usize> {
    let turn_starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, message)| matches!(message, Message::Assistant { .. }))
        .map(|(index, _)| index)
        .collect();
    let tail_tokens = |from: usize| {
        let bytes: usize = messages[from..].iter().map(message_bytes).sum();
        (bytes as f64 * estimator.tokens_per_byte) as u64
    };
    let keep = (0..=keep.min(turn_starts.len()))
        .rev()
        .find(|&keep| {
            keep == 0 || tail_tokens(turn_starts[turn_starts.len() - keep]) <= budget_tokens / 2
        })
        .unwrap_or(0);
    let split = match keep {
        0 => messages.len(),
        keep => turn_starts[turn_starts.len() - keep],
    };
    // Only the task before the split: nothing to summarise.
    (split > 1).then_some(split)
}

/// The tool-less request that summarises `older` (the messages after the task and before the
/// split), its transcript cut to fit a window of `window_tokens`.
pub(crate) fn summary_request(
    system: &str,
    task: &str,
    older: &[Message],
    estimator: &Estimator,
    window_tokens: u32,
) -> Request {
    let budget = (f64::from(window_tokens) * TRANSCRIPT_SHARE / estimator.tokens_per_byte) as usize;
    let budget = budget.saturating_sub(system.len() + task.len() + SUMMARY_INSTRUCTIONS.len());
    let transcript = transcript(older, budget);
    Request {
        system: system.to_string(),
        messages: vec![Message::user(format!(
            "## The task\n\n{task}\n\n## The conversation so far\n\n{transcript}\n\n\
             ## What to do now\n\n{SUMMARY_INSTRUCTIONS}"
        ))],
        tools: Vec::new(),
        // The summary is prose, whatever shape the final answer must have.
        answer_format: None,
    }
}

/// `messages` as plain text of at most `budget` bytes: the oldest tool outputs are dropped
/// first, then the oldest part of what is left.
fn transcript(messages: &[Message], budget: usize) -> String {
    let mut dropped = vec![false; messages.len()];
    let text_of = |dropped: &[bool]| -> String {
        messages
            .iter()
            .zip(dropped)
            .map(|(message, &dropped)| render(message, dropped))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let mut text = text_of(&dropped);
    for index in 0..messages.len() {
        if text.len() <= budget {
            return text;
        }
        if matches!(messages[index], Message::ToolResult { .. }) {
            dropped[index] = true;
            text = text_of(&dropped);
        }
    }
    if text.len() <= budget {
        return text;
    }
    format!(
        "[the oldest part was left out]\n{}",
        suffix_at_boundary(&text, budget)
    )
}

fn render(message: &Message, dropped: bool) -> String {
    let text = render_text(message, dropped);
    match message.images().len() {
        0 => text,
        count => format!("{text}\n[{count} image(s), not shown here]"),
    }
}

fn render_text(message: &Message, dropped: bool) -> String {
    match message {
        Message::User { content, .. } => format!("[user]\n{content}"),
        Message::Assistant {
            text, tool_calls, ..
        } => {
            let mut out = format!("[assistant]\n{text}");
            for call in tool_calls {
                out.push_str(&format!("\n[tool call {}] {}", call.name, call.arguments));
            }
            out
        }
        Message::ToolResult { name, output, .. } if dropped => {
            format!(
                "[tool result {name}] (output of {} bytes dropped)",
                output.len()
            )
        }
        Message::ToolResult { name, output, .. } => format!("[tool result {name}]\n{output}"),
    }
}

/// The compacted conversation: the task with the summary and the plan after it, then the
/// verbatim tail from `split` on.
pub(crate) fn rebuild(
    messages: &[Message],
    split: usize,
    summary: &str,
    plan: &[PlanStep],
) -> Vec<Message> {
    // The task's images stay with it: they are part of what was asked.
    let (task, images) = match messages.first() {
        Some(Message::User { content, images }) => (content.as_str(), images.clone()),
        _ => ("", Vec::new()),
    };
    let mut first = format!("{task}\n\n{SUMMARY_HEADING}\n\n{}", summary.trim());
    if !plan.is_empty() {
        first.push_str("\n\n## Current plan\n");
        for step in plan {
            first.push_str(&format!(
                "\n- [{}] {}",
                crate::output::word(&step.status),
                step.step
            ));
        }
    }
    let mut rebuilt = vec![Message::User {
        content: first,
        images,
    }];
    rebuilt.extend_from_slice(&messages[split..]);
    rebuilt
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn turn(n: usize, output: &str) -> [Message; 2] {
        [
            Message::Assistant {
                thinking: Vec::new(),
                text: format!("turn {n}"),
                tool_calls: vec![ToolCall {
                    id: format!("c{n}"),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\":\"f{n}\"}}"),
                }],
            },
            Message::ToolResult {
                call_id: format!("c{n}"),
                name: "read_file".into(),
                output: output.into(),
                is_error: false,
                images: Vec::new(),
            },
        ]
    }

    fn conversation(turns: usize, output: &str) -> Vec<Message> {
        let mut messages = vec![Message::User {
            content: "fix it".into(),
            images: Vec::new(),
        }];
        for n in 0..turns {
            messages.extend(turn(n, output));
        }
        messages
    }

    #[test]
    fn an_image_weighs_its_tokens_and_stays_with_the_task_when_compacted() {
        let image = crate::image::Image::new(crate::image::test_png(1500, 1000)).unwrap();
        let request = |images: Vec<crate::image::Image>| Request {
            system: String::new(),
            messages: vec![Message::User {
                content: "look".into(),
                images,
            }],
            tools: Vec::new(),
            answer_format: None,
        };
        let estimator = Estimator::new(&[]);
        let with = estimator.tokens(&request(vec![image.clone()]));
        assert_eq!(with - estimator.tokens(&request(Vec::new())), 1600);

        let messages = request(vec![image.clone()]).messages;
        let rebuilt = rebuild(&messages, 1, "the summary", &[]);
        assert_eq!(rebuilt[0].images(), std::slice::from_ref(&image));
        assert!(render(&messages[0], false).ends_with("[1 image(s), not shown here]"));
    }

    #[test]
    fn the_last_turns_are_kept_whole_and_the_task_stays_first() {
        let messages = conversation(6, "small");
        let split = split(&messages, KEEP_TURNS, &Estimator::new(&[]), 100_000).unwrap();
        // Turns 3, 4 and 5 are kept: each starts with its assistant message.
        assert_eq!(split, 7);
        let rebuilt = rebuild(&messages, split, "did things", &[]);
        assert_eq!(rebuilt.len(), 1 + 6);
        let Message::User { content, .. } = &rebuilt[0] else {
            panic!("{rebuilt:?}")
        };
        assert!(content.starts_with("fix it\n\n## Earlier"), "{content}");
        assert!(content.ends_with("did things"));
        assert_eq!(rebuilt[1..], messages[7..]);
    }

    #[test]
    fn a_tail_too_large_for_the_window_keeps_fewer_turns_and_a_short_one_has_nothing_to_summarise()
    {
        let messages = conversation(4, &"x".repeat(4000));
        // About 1000 tokens a turn, 2500 of budget: only two turns fit in half of it... one.
        assert_eq!(
            split(&messages, KEEP_TURNS, &Estimator::new(&[]), 2500),
            Some(7)
        );
        assert_eq!(split(&messages, 0, &Estimator::new(&[]), 100_000), Some(9));
        assert_eq!(
            split(&messages, KEEP_TURNS, &Estimator::new(&[]), 100),
            Some(9)
        );
        assert_eq!(
            split(&conversation(1, "x"), 1, &Estimator::new(&[]), 100_000),
            None
        );
    }

    #[test]
    fn the_current_plan_follows_the_summary() {
        let plan = [
            PlanStep {
                step: "read the notes".into(),
                status: crate::tools::StepStatus::Completed,
            },
            PlanStep {
                step: "fix the test".into(),
                status: crate::tools::StepStatus::InProgress,
            },
        ];
        let rebuilt = rebuild(&conversation(2, "x"), 3, "read them", &plan);
        let Message::User { content, .. } = &rebuilt[0] else {
            panic!("{rebuilt:?}")
        };
        assert!(
            content.ends_with(
                "read them\n\n## Current plan\n\n- [completed] read the notes\n- \
                 [in_progress] fix the test"
            ),
            "{content}"
        );
    }

    #[test]
    fn the_transcript_drops_the_oldest_tool_outputs_first() {
        let older = conversation(3, &"y".repeat(1000))[1..].to_vec();
        let text = transcript(&older, 1500);
        assert!(text.len() <= 1500, "{}", text.len());
        assert!(text.contains("(output of 1000 bytes dropped)"));
        // The newest output survives whole.
        assert!(text.ends_with(&"y".repeat(1000)), "{text}");
        let tiny = transcript(&older, 100);
        assert!(tiny.starts_with("[the oldest part was left out]"));
    }

    #[test]
    fn the_estimate_learns_the_providers_count() {
        let request = Request {
            system: "s".repeat(1000),
            messages: conversation(1, "z"),
            tools: Vec::new(),
            answer_format: None,
        };
        let mut estimator = Estimator::new(&[]);
        let first = estimator.tokens(&request);
        assert!((250..300).contains(&first), "{first}");
        estimator.observe(&request, first * 2);
        assert!(estimator.tokens(&request).abs_diff(first * 2) <= 1);
    }
}
