//! Running one turn's tool calls: consecutive read-only calls together (bounded), everything
//! else one at a time, results always in the model's order, and every failure — unknown tool,
//! invalid JSON, policy refusal, arguments cut off by the output limit — turned into an error
//! result the model can act on.
//!
//! Identical read-only calls in one batch (same tool, same arguments) run once and each gets
//! that result: a small model that repeats a `read_file` ten times in one response costs one
//! read, not ten. Only within a batch: a write between two reads may change what they see.
//!
//! Every call passes the permission step just before it runs (`permission::decide`: the
//! `--auto` level, the rules, the skills in use, the `pre_tool_use` hooks); a call it refuses gets the refusal's
//! event and an error result. After a call ran, `post_tool_use` hooks may add notes to its
//! result.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

use super::permission::{self, Judges, Refusal};
use crate::hooks::{Before, Call, Hooks};
use crate::output::{CallStatus, EventKind, Output};
use crate::provider::{Loop, Message, ToolCall};
use crate::rules::{Narrowing, RuleSet};
use crate::runtime::Runtime;
use crate::tools::text::{prefix_at_boundary, suffix_at_boundary};
use crate::tools::{SideEffect, ToolContext, ToolError, ToolId, ToolOutput, Toolset};

/// How many read-only calls of one turn run at the same time.
const PARALLEL_READS: usize = 8;

/// A call with its arguments decoded (or the reason they could not be).
struct Prepared<'a> {
    call: &'a ToolCall,
    args: Result<Value, String>,
    /// Safe to run beside its neighbours: a visible read-only tool with valid arguments.
    parallel: bool,
}

/// What came of one call: what its tool returned (or why it could not run), or the permission
/// step's refusal.
#[derive(Clone)]
enum Outcome {
    /// The call went to its tool, or failed before it (invalid arguments, a cancelled run).
    Ran(Result<ToolOutput, ToolError>),
    /// The permission step refused it.
    Refused(Refusal),
}

/// Why a response ended before the model finished it: its last call's arguments may be cut
/// short, and are then explained by what happened rather than as bad JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The output token limit (`--max-output-tokens`) ended it.
    OutputLimit,
    /// zero cut it for repeating one span of its text or reasoning (`provider::repetition`).
    Loop(Loop),
}

impl Cut {
    /// What the model is told about a call whose arguments this cut off.
    fn explanation(self) -> String {
        match self {
            Cut::OutputLimit => "the response reached the output token limit in the middle of \
                 this call's arguments, so the call was not run; make it again with less in one \
                 response (for example, write a large file in parts)"
                .to_owned(),
            Cut::Loop(found) => format!(
                "the response was cut in the middle of this call's arguments because its text \
                 repeated the same {} bytes over and over, so the call was not run; make it \
                 again without repeating yourself",
                found.period
            ),
        }
    }
}

/// The least room one call's result gets however many calls share a turn.
const MIN_RESULT_BYTES: usize = 2048;

/// How many bytes each of a turn's `calls` results may take in a window of `window_tokens`:
/// together about a third of the window (at some 4 bytes a token), so a 16k-token local model
/// is never handed 64 KiB of tool output while a large window keeps each tool's own cap.
pub(crate) fn result_cap(window_tokens: u32, calls: usize) -> usize {
    let turn = window_tokens as usize * 4 / 3;
    (turn / calls.max(1)).max(MIN_RESULT_BYTES)
}

/// What a turn's calls go through: the tools, the context each call gets, the caller's hooks
/// around each one, and the output their events go to.
#[derive(Clone, Copy)]
pub(crate) struct Doors<'a> {
    /// The tools on offer.
    pub(crate) toolset: &'a Toolset,
    /// The caller's permission rules, checked on each call before it runs.
    pub(crate) rules: &'a RuleSet,
    /// The skills in use, whose `allowed-tools` narrow what the rules allow.
    pub(crate) narrowing: &'a Narrowing,
    /// What every call gets.
    pub(crate) context: &'a ToolContext,
    /// The hooks run before and after each call.
    pub(crate) hooks: &'a Hooks,
    /// Where the events go.
    pub(crate) output: &'a Output,
    /// Why the model cannot see images, when it cannot: a tool's image is then left out and
    /// the model told so ([`crate::provider::Provider::cannot_see_images`]).
    pub(crate) blind: Option<&'a str>,
    /// The run's runtime: after a call that may write, the git metadata it guards is put
    /// back ([`Runtime::restore_git`]).
    pub(crate) runtime: &'a Runtime,
}

/// Runs every call of a turn and returns the tool-result messages, in the model's order.
/// `cut` says why the response ended early, when it did: its last call's arguments may be
/// incomplete. Each result is cut to `cap` bytes (see [`result_cap`]).
pub(crate) async fn run_all(
    calls: &[ToolCall],
    cut: Option<Cut>,
    cap: usize,
    doors: Doors<'_>,
) -> Vec<Message> {
    let Doors {
        toolset,
        context,
        output,
        ..
    } = doors;
    let prepared: Vec<Prepared<'_>> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let cut = cut.filter(|_| index + 1 == calls.len());
            prepare(call, cut, toolset)
        })
        .collect();
    let mut results = Vec::with_capacity(calls.len());
    let mut rest = prepared.as_slice();
    while let Some(first) = rest.first() {
        let batch_len = if first.parallel {
            rest.iter().take_while(|p| p.parallel).count()
        } else {
            1
        };
        let (batch, remaining) = rest.split_at(batch_len);
        rest = remaining;
        for item in batch {
            announce(item, toolset, output);
        }
        // Each item's first identical call in the batch (itself, usually): only those run.
        let originals: Vec<usize> = (0..batch.len())
            .map(|index| {
                (0..index)
                    .find(|&earlier| same_read(&batch[earlier], &batch[index]))
                    .unwrap_or(index)
            })
            .collect();
        let distinct = (0..batch.len()).filter(|&index| originals[index] == index);
        let ran: Vec<(usize, Outcome)> = futures_util::stream::iter(distinct)
            .map(|index| async move { (index, execute(&batch[index], doors).await) })
            .buffered(PARALLEL_READS)
            .collect()
            .await;
        let mut outcomes = vec![None; batch.len()];
        for (index, outcome) in ran {
            outcomes[index] = Some(outcome);
        }
        for (item, original) in batch.iter().zip(originals) {
            let outcome = match outcomes[original].clone().expect("every distinct call ran") {
                Outcome::Ran(outcome) => outcome,
                Outcome::Refused(refusal) => {
                    refusal.emit(item.call, output);
                    Err(refusal.into_error())
                }
            };
            results.push(report(item.call, outcome, cap, output, doors.blind));
        }
        if context.cancel.is_cancelled() {
            // Calls the model asked for but that never ran still need an answer each.
            for item in rest {
                announce(item, toolset, output);
                results.push(report(
                    item.call,
                    Err(ToolError::Cancelled),
                    cap,
                    output,
                    None,
                ));
            }
            break;
        }
    }
    results
}

/// A call as a comparable value: its tool's name and its decoded arguments (the raw text when
/// they are not JSON), with whether the tool only reads.
pub(crate) fn identity(call: &ToolCall, toolset: &Toolset) -> (String, Value, bool) {
    let prepared = prepare(call, None, toolset);
    let args = prepared
        .args
        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
    (call.name.clone(), args, prepared.parallel)
}

/// Answers each of `calls` with the error `reason` without running them, with the events a
/// call that ran would have.
pub(crate) fn refuse_all(
    calls: &[ToolCall],
    reason: &str,
    toolset: &Toolset,
    output: &Output,
) -> Vec<Message> {
    calls
        .iter()
        .map(|call| {
            announce(&prepare(call, None, toolset), toolset, output);
            report(
                call,
                Err(ToolError::Failed(reason.to_owned())),
                usize::MAX,
                output,
                None,
            )
        })
        .collect()
}

/// Whether two calls of one read-only batch would give the same result: same tool, equal
/// arguments (as JSON values, so spacing and key order do not matter).
fn same_read(a: &Prepared<'_>, b: &Prepared<'_>) -> bool {
    a.parallel && b.parallel && a.call.name == b.call.name && a.args == b.args
}

/// Decodes a call's arguments; `cut` marks the last call of a response that ended early,
/// whose invalid arguments are explained by the cut rather than as bad JSON.
fn prepare<'a>(call: &'a ToolCall, cut: Option<Cut>, toolset: &Toolset) -> Prepared<'a> {
    let args =
        parse_arguments(&call.arguments).map_err(|invalid| cut.map_or(invalid, Cut::explanation));
    let parallel = args.is_ok()
        && toolset
            .lookup(&call.name)
            .is_ok_and(|tool| tool.side_effect() == SideEffect::Read);
    Prepared {
        call,
        args,
        parallel,
    }
}

/// The arguments as JSON; an empty string means "no arguments".
fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(raw).map_err(|e| format!("the arguments are not valid JSON ({e})"))
}

/// Emits the `tool_call` event.
fn announce(item: &Prepared<'_>, toolset: &Toolset, output: &Output) {
    let call = item.call;
    output.emit(EventKind::ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        args: item
            .args
            .clone()
            .unwrap_or_else(|_| Value::String(call.arguments.clone())),
        side_effect: toolset.side_effect_of(&call.name).into(),
    });
}

/// One call the model made, unless its arguments are invalid or the permission step refuses
/// it, decided just before it runs (a call earlier in the response has run by then).
async fn execute(item: &Prepared<'_>, doors: Doors<'_>) -> Outcome {
    let args = match item.args.clone() {
        Ok(args) => args,
        Err(invalid) => return Outcome::Ran(Err(ToolError::InvalidArguments(invalid))),
    };
    let judges = Judges {
        toolset: doors.toolset,
        rules: doors.rules,
        narrowing: doors.narrowing,
        hooks: doors.hooks,
    };
    match permission::decide(item.call, args, judges).await {
        Ok(args) => Outcome::Ran(run(item.call, args, doors).await),
        Err(refusal) => Outcome::Refused(refusal),
    }
}

/// Runs an allowed call with `args`; `post_tool_use` hooks add their notes to what it
/// returned.
async fn run(call: &ToolCall, args: Value, doors: Doors<'_>) -> Result<ToolOutput, ToolError> {
    let context = doors.context;
    // Kept for the hooks after the call only when there are some: a whole file's content is
    // not copied (nor the file it changes read) for nothing.
    let kept = match doors.hooks.runs_after(&call.name) {
        true => Some((args.clone(), Before::take(&call.name, &args, context).await)),
        false => None,
    };
    let judged = (call.name == ToolId::Bash.name()).then(|| args.clone());
    let started = Instant::now();
    let outcome = tokio::select! {
        result = doors.toolset.call_with_images(&call.name, args, context) => result,
        () = context.cancel.cancelled() => Err(ToolError::Cancelled),
    };
    if let Some(args) = &judged {
        let refused = doors.runtime.take_exec_refusals();
        permission::emit_exec_refusals(call, args, refused, doors.output);
    }
    let outcome = match &kept {
        Some((args, before)) => {
            annotate(call, args, outcome, before, started.elapsed(), doors).await
        }
        None => outcome,
    };
    if matches!(
        doors.toolset.side_effect_of(&call.name),
        Some(SideEffect::Read | SideEffect::None)
    ) {
        return outcome;
    }
    restore_git(call, outcome, doors).await
}

/// After a call that may write: the git metadata the runtime guards put back, the event
/// emitted, and the model told what was undone and how to do what it may have meant.
async fn restore_git(
    call: &ToolCall,
    outcome: Result<ToolOutput, ToolError>,
    doors: Doors<'_>,
) -> Result<ToolOutput, ToolError> {
    let restoration = doors.runtime.restore_git().await;
    let Some(event) = EventKind::git_restored(Some(&call.id), &restoration) else {
        return outcome;
    };
    doors.output.emit(event);
    let mut note = String::from(
        "\n\n[zero] This call changed git metadata that would start a program in the user's \
         own git later; at this permission level zero puts it back as the run found it",
    );
    for path in &restoration.restored {
        note.push_str(&format!("\n  restored: {}", path.display()));
    }
    for (path, error) in &restoration.failed {
        note.push_str(&format!("\n  NOT restored: {}: {error}", path.display()));
    }
    note.push_str(
        "\nGit's configuration, hooks and info/attributes are not yours to change here: \
         pass settings for one command instead (`git -c user.name=… -c user.email=… commit`).",
    );
    match outcome {
        Ok(output) => Ok(ToolOutput {
            text: output.text + &note,
            ..output
        }),
        Err(ToolError::Failed(text)) => Err(ToolError::Failed(text + &note)),
        Err(error) => Err(error),
    }
}

/// A call's `outcome` with the notes of the `post_tool_use` hooks on it. Only a call that
/// succeeded has hooks run after it, as Claude Code runs its `PostToolUse` hooks.
async fn annotate(
    call: &ToolCall,
    args: &Value,
    outcome: Result<ToolOutput, ToolError>,
    before: &Before,
    duration: Duration,
    doors: Doors<'_>,
) -> Result<ToolOutput, ToolError> {
    let Ok(output) = outcome else {
        return outcome;
    };
    let call = Call {
        id: &call.id,
        tool: &call.name,
        arguments: args,
    };
    let notes = doors
        .hooks
        .post_tool_use(call, &output.text, before, duration, doors.context)
        .await;
    let text = notes.iter().fold(output.text, |text, note| {
        format!("{text}\n\n[note from a post_tool_use hook] {note}")
    });
    Ok(ToolOutput { text, ..output })
}

/// Emits the `tool_result` event and builds the message the model gets, cut to `cap` bytes,
/// with the images the tool returned, or instead of them why the model cannot see them
/// (`blind`).
fn report(
    call: &ToolCall,
    outcome: Result<ToolOutput, ToolError>,
    cap: usize,
    output: &Output,
    blind: Option<&str>,
) -> Message {
    let (status, text, images) = match outcome {
        Ok(ToolOutput { text, images }) => match blind {
            Some(reason) if !images.is_empty() => (
                CallStatus::Ok,
                fit(
                    format!("{text}\n\nThe model cannot see images: {reason}; not sent."),
                    cap,
                ),
                Vec::new(),
            ),
            _ => (CallStatus::Ok, fit(text, cap), images),
        },
        Err(error) => (
            CallStatus::Error,
            fit(format!("Error: {error}"), cap),
            Vec::new(),
        ),
    };
    output.emit(EventKind::tool_result(&call.id, &call.name, status, &text));
    Message::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        output: text,
        is_error: status == CallStatus::Error,
        images,
    }
}

/// `text` cut to `cap` bytes: its head and its tail, with a note for the model between them.
fn fit(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let head = prefix_at_boundary(&text, cap * 2 / 3);
    let tail = suffix_at_boundary(&text, cap - head.len());
    let omitted = text.len() - head.len() - tail.len();
    format!(
        "{head}\n[... {omitted} bytes left out to fit the model's context window; ask for less \
         at a time (a line range, a narrower pattern) to see them ...]\n{tail}"
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::output::OutputFormat;
    use crate::tools::policy::Autonomy;
    use crate::tools::{Policy, Registry, Tool, ToolFilter, ToolResult};

    /// A read-only tool that counts its calls and answers with the count so far.
    struct CountingRead(Arc<AtomicUsize>);

    #[async_trait]
    impl Tool for CountingRead {
        fn name(&self) -> &'static str {
            "count"
        }
        fn description(&self) -> &'static str {
            "counts"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn side_effect(&self) -> SideEffect {
            SideEffect::Read
        }
        async fn call(&self, args: Value, _: &ToolContext) -> ToolResult {
            let calls = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(format!("call {calls} for {args}"))
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    async fn run(calls: &[ToolCall], cut: Option<Cut>) -> (Vec<Message>, usize) {
        let counter = Arc::new(AtomicUsize::new(0));
        let runtime = crate::agent::testing::runtime();
        let mut registry = Registry::with_runtime(Arc::clone(&runtime));
        registry.register(Arc::new(CountingRead(Arc::clone(&counter))));
        let root = std::env::temp_dir();
        let policy = Policy::new(Autonomy::Low, false, vec![root.clone()]);
        let toolset = registry.select(&ToolFilter::default(), &policy);
        let context = ToolContext {
            workspace: root,
            policy: Arc::new(policy),
            cancel: CancellationToken::new(),
            plan_updates: None,
        };
        let output = Output::new(OutputFormat::Json, Default::default());
        let doors = Doors {
            toolset: &toolset,
            rules: &RuleSet::default(),
            narrowing: &Narrowing::default(),
            context: &context,
            hooks: &Hooks::none(),
            output: &output,
            blind: None,
            runtime: &runtime,
        };
        let results = run_all(calls, cut, usize::MAX, doors).await;
        (results, counter.load(Ordering::SeqCst))
    }

    fn outputs(results: &[Message]) -> Vec<(&str, &str)> {
        results
            .iter()
            .map(|message| match message {
                Message::ToolResult {
                    call_id, output, ..
                } => (call_id.as_str(), output.as_str()),
                other => panic!("not a tool result: {other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn identical_reads_in_a_batch_run_once_and_each_call_gets_the_result() {
        let calls = [
            call("1", "count", r#"{"a": 1, "b": 2}"#),
            call("2", "count", r#"{"b":2,"a":1}"#),
            call("3", "count", r#"{"a": 3}"#),
            call("4", "count", r#"{"a": 1, "b": 2}"#),
        ];
        let (results, ran) = run(&calls, None).await;
        assert_eq!(
            ran, 2,
            "one run for the repeated arguments, one for the other"
        );
        let outputs = outputs(&results);
        assert_eq!(
            outputs.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            ["1", "2", "3", "4"]
        );
        assert_eq!(outputs[0].1, outputs[1].1);
        assert_eq!(outputs[0].1, outputs[3].1);
        assert_ne!(outputs[0].1, outputs[2].1);
    }

    #[tokio::test]
    async fn reads_on_either_side_of_another_call_both_run() {
        // A write between them could change what the second sees, so both run; `bash` is a
        // call of another kind (refused at this level, but still a barrier).
        let calls = [
            call("1", "count", "{}"),
            call("2", "bash", r#"{"command": "true"}"#),
            call("3", "count", "{}"),
        ];
        let (results, ran) = run(&calls, None).await;
        assert_eq!(ran, 2);
        let outputs = outputs(&results);
        assert_ne!(outputs[0].1, outputs[2].1);
    }

    #[tokio::test]
    async fn only_the_last_call_of_a_cut_response_is_explained_as_cut() {
        let calls = [
            call("1", "count", "{not json"),
            call("2", "count", r#"{"path": "a", "conte"#),
        ];
        let (results, ran) = run(&calls, Some(Cut::OutputLimit)).await;
        assert_eq!(ran, 0);
        let cut = outputs(&results);
        assert!(cut[0].1.contains("not valid JSON"), "{}", cut[0].1);
        assert!(cut[1].1.contains("output token limit"), "{}", cut[1].1);
        let (looped, _) = run(&calls, Some(Cut::Loop(Loop { period: 64 }))).await;
        let looped = &outputs(&looped)[1].1;
        assert!(looped.contains("repeated the same 64 bytes"), "{looped}");
        assert!(!looped.contains("output token limit"), "{looped}");
        let (uncut, _) = run(&calls[1..], None).await;
        assert!(outputs(&uncut)[0].1.contains("not valid JSON"));
    }

    #[tokio::test]
    async fn a_call_the_policy_denies_is_refused_before_it_runs_with_what_would_allow_it() {
        let calls = [
            call("1", "bash", r#"{"command": "true"}"#),
            call("2", "count", "{}"),
        ];
        let (results, ran) = run(&calls, None).await;
        assert_eq!(ran, 1, "only the allowed call ran");
        let outputs = outputs(&results);
        assert!(
            outputs[0].1.starts_with("Error: permission denied:")
                && outputs[0].1.contains("--auto"),
            "{}",
            outputs[0].1
        );
        assert!(outputs[1].1.starts_with("call 1"), "{}", outputs[1].1);
    }

    #[test]
    fn a_small_window_gets_small_results_and_the_cut_keeps_both_ends() {
        // A 16k-token window: a third of it, about 21 KB, for one call, shared among eight.
        assert_eq!(result_cap(16_384, 1), 21_845);
        assert_eq!(result_cap(16_384, 8), 2730);
        assert_eq!(result_cap(1024, 8), MIN_RESULT_BYTES);
        // The default window leaves each tool's own cap (128 KiB at most) in charge.
        assert!(result_cap(128_000, 1) > 128 * 1024);
        let text = format!("{}{}", "a".repeat(40_000), "z".repeat(40_000));
        let cut = fit(text, 3000);
        assert!(cut.len() < 3300, "{}", cut.len());
        assert!(cut.starts_with("aaa") && cut.ends_with("zzz"));
        assert!(cut.contains("77000 bytes left out to fit the model's context window"));
        assert_eq!(fit("short".into(), 3000), "short");
    }
    #[test]
    fn an_image_the_model_cannot_see_is_left_out_with_the_reason() {
        let output = Output::new(OutputFormat::Json, Default::default());
        let image = crate::image::Image::new(crate::image::test_png(2, 2)).unwrap();
        let outcome = || {
            Ok(ToolOutput {
                text: "`a.png`: PNG image".into(),
                images: vec![image.clone()],
            })
        };
        let seen = report(
            &call("1", "read_file", "{}"),
            outcome(),
            1000,
            &output,
            None,
        );
        assert_eq!(seen.images(), std::slice::from_ref(&image));
        let blind = report(
            &call("1", "read_file", "{}"),
            outcome(),
            1000,
            &output,
            Some("text only"),
        );
        assert!(blind.images().is_empty());
        let Message::ToolResult { output: text, .. } = blind else {
            panic!("{blind:?}")
        };
        assert!(
            text.ends_with("The model cannot see images: text only; not sent."),
            "{text}"
        );
    }
}
