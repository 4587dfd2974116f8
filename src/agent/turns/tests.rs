//! The loop's steps, each driven through the whole loop by a scripted provider: what the model
//! is sent, and how the run ends.

use serde_json::json;

use crate::agent::repeats::{ANSWER_NOW_REQUEST, REPEATED_CALL};
use crate::agent::testing::{Harness, answer, calling, spending};
use crate::agent::{Ending, Stuck};
use crate::provider::{Completion, ErrorClass, Message, ProviderError, Request};
use crate::structured::OutputSchema;
use crate::usage::Exceeded;

const READ_NOTES: (&str, &str) = ("read_file", r#"{"path": "notes.txt"}"#);
const WRITTEN_READ: &str = r#"{"name": "read_file", "arguments": {"path": "notes.txt"}}"#;

/// The text of the last message of `request`.
fn last_text(request: &Request) -> &str {
    match request.messages.last().expect("a message") {
        Message::User { content, .. } => content,
        Message::Assistant { text, .. } => text,
        Message::ToolResult { output, .. } => output,
    }
}

/// The answer `ending` gives, or a panic saying what it is instead.
fn answered(ending: &Ending) -> &str {
    match ending {
        Ending::Answered(answer) => &answer.text,
        other => panic!("not answered: {other:?}"),
    }
}

#[tokio::test]
async fn an_answer_without_calls_ends_the_run() {
    let harness = Harness::new(vec![Ok(answer("done"))]);
    let report = harness.run("do it").await;
    assert_eq!(answered(&report.ending), "done");
    assert_eq!(report.turns, 1);
}

#[tokio::test]
async fn calls_run_and_their_results_go_with_the_next_request() {
    let harness = Harness::new(vec![Ok(calling(&[READ_NOTES])), Ok(answer("done"))]);
    let report = harness.run("read the notes").await;
    assert_eq!(answered(&report.ending), "done");
    assert_eq!(report.turns, 2);
    assert!(last_text(&harness.provider.requests()[1]).contains("the notes"));
}

#[tokio::test]
async fn the_files_the_prompt_names_are_read_first_and_known_to_the_repeat_guard() {
    let mut harness = Harness::new(vec![Ok(calling(&[READ_NOTES])), Ok(answer("done"))]);
    harness.first_reads = vec!["notes.txt".into()];
    let report = harness.run("what do notes.txt say?").await;
    assert_eq!(answered(&report.ending), "done");
    let requests = harness.provider.requests();
    assert!(
        matches!(&requests[0].messages[1], Message::Assistant { tool_calls, .. }
            if tool_calls[0].id == "zero_read_1"),
        "{:?}",
        requests[0].messages
    );
    assert!(last_text(&requests[0]).contains("the notes"));
    // The model's own read of the same file is one it already has the result of.
    assert!(last_text(&requests[1]).contains(REPEATED_CALL));
}

#[tokio::test]
async fn a_written_call_goes_back_once_and_a_second_in_a_row_is_stuck() {
    let harness = Harness::new(vec![Ok(answer(WRITTEN_READ)), Ok(answer(WRITTEN_READ))]);
    let report = harness.run("read the notes").await;
    assert!(
        matches!(&report.ending, Ending::Stuck(Stuck::WritingCalls(tool)) if tool == "read_file"),
        "{:?}",
        report.ending
    );
    let note = last_text(&harness.provider.requests()[1]).to_string();
    assert!(
        note.starts_with("That was not run: it is a call of `read_file`"),
        "{note}"
    );
}

#[tokio::test]
async fn a_real_call_between_written_calls_starts_their_count_over() {
    let harness = Harness::new(vec![
        Ok(answer(WRITTEN_READ)),
        Ok(calling(&[READ_NOTES])),
        Ok(answer(WRITTEN_READ)),
        Ok(answer("done")),
    ]);
    let report = harness.run("read the notes").await;
    assert_eq!(answered(&report.ending), "done");
    assert_eq!(report.turns, 4);
}

#[tokio::test]
async fn a_written_call_the_schema_accepts_is_the_answer() {
    let mut harness = Harness::new(vec![Ok(answer(WRITTEN_READ))]);
    let schema = json!({"type": "object", "required": ["name", "arguments"]});
    harness.schema = Some((OutputSchema::new(schema).unwrap(), 1));
    let report = harness.run("which call reads the notes?").await;
    match report.ending {
        Ending::Answered(answer) => {
            assert_eq!(answer.structured.unwrap()["name"], "read_file");
        }
        other => panic!("{other:?}"),
    }
}

/// The script of a model that reads the notes three times, then responds with `last`.
fn repeating_then(last: Completion) -> Vec<Result<Completion, ProviderError>> {
    let read = || Ok(calling(&[READ_NOTES]));
    vec![read(), read(), read(), Ok(last)]
}

#[tokio::test]
async fn a_repeated_turn_is_refused_and_the_next_one_asks_for_the_answer_without_tools() {
    let harness = Harness::new(repeating_then(answer("done")));
    let report = harness.run("read the notes").await;
    assert_eq!(answered(&report.ending), "done");
    assert_eq!(report.turns, 4);
    let requests = harness.provider.requests();
    assert!(last_text(&requests[2]).contains(REPEATED_CALL));
    assert_eq!(last_text(&requests[3]), ANSWER_NOW_REQUEST);
    assert!(requests[3].tools.is_empty());
}

#[tokio::test]
async fn asked_for_its_answer_a_model_that_writes_a_call_is_stuck_repeating() {
    let harness = Harness::new(repeating_then(answer(WRITTEN_READ)));
    let report = harness.run("read the notes").await;
    assert!(
        matches!(report.ending, Ending::Stuck(Stuck::Repeating)),
        "{:?}",
        report.ending
    );
}

#[tokio::test]
async fn an_answer_that_misses_the_schema_goes_back_as_due_until_the_retries_are_spent() {
    let mut harness = Harness::new(vec![Ok(answer("{}")), Ok(answer("still not"))]);
    let schema = json!({"type": "object", "required": ["verdict"]});
    harness.schema = Some((OutputSchema::new(schema).unwrap(), 1));
    let report = harness.run("judge it").await;
    match report.ending {
        Ending::SchemaUnsatisfied {
            violations,
            retries,
        } => {
            assert_eq!(retries, 1);
            assert!(violations[0].message.contains("JSON"), "{violations:?}");
        }
        other => panic!("{other:?}"),
    }
    let requests = harness.provider.requests();
    assert!(!requests[0].answer_format.as_ref().unwrap().answer_now);
    assert!(requests[1].answer_format.as_ref().unwrap().answer_now);
    assert!(last_text(&requests[1]).contains("does not satisfy the output schema"));
}

#[tokio::test]
async fn spent_turns_end_with_a_summary_asked_for_without_tools() {
    let mut harness = Harness::new(vec![Ok(calling(&[READ_NOTES])), Ok(answer("summary"))]);
    harness.max_turns = 1;
    let report = harness.run("read the notes").await;
    assert!(
        matches!(&report.ending, Ending::OutOfTurns(text) if text == "summary"),
        "{:?}",
        report.ending
    );
    assert_eq!(report.turns, 2);
    let summary = &harness.provider.requests()[1];
    assert!(summary.tools.is_empty() && summary.answer_format.is_none());
}

#[tokio::test]
async fn a_response_past_the_budget_ends_the_run_and_its_calls_do_not_run() {
    let write = ("write_file", r#"{"path": "out.txt", "content": "x"}"#);
    let mut harness = Harness::new(vec![Ok(spending(calling(&[write]), 100))]);
    harness.limits.tokens = Some(10);
    let report = harness.run("write it").await;
    assert!(
        matches!(
            report.ending,
            Ending::OverBudget(Exceeded::Tokens { limit: 10, .. }, None)
        ),
        "{:?}",
        report.ending
    );
    assert!(!harness.workspace.path().join("out.txt").exists());
}

#[tokio::test]
async fn a_request_refused_as_too_long_is_compacted_with_the_plan_and_sent_again() {
    let plan = (
        "update_plan",
        r#"{"plan": [{"step": "read the notes", "status": "in_progress"}]}"#,
    );
    let too_long = ProviderError {
        class: ErrorClass::ContextLength,
        status: Some(400),
        message: "too long".into(),
        retryable: false,
        usage: None,
    };
    let harness = Harness::new(vec![
        Ok(calling(&[plan])),
        Ok(calling(&[READ_NOTES])),
        Err(too_long),
        Ok(answer("the model's summary")),
        Ok(answer("done")),
    ]);
    let report = harness.run("read the notes").await;
    assert_eq!(answered(&report.ending), "done");
    // The summary and the request sent again are not turns of their own.
    assert_eq!(report.turns, 3);
    let requests = harness.provider.requests();
    assert!(requests[3].tools.is_empty(), "the summary request");
    let Message::User { content, .. } = &requests[4].messages[0] else {
        panic!("{:?}", requests[4].messages)
    };
    assert!(
        content.starts_with("read the notes\n\n## Earlier"),
        "{content}"
    );
    assert!(
        content
            .ends_with("the model's summary\n\n## Current plan\n\n- [in_progress] read the notes"),
        "{content}"
    );
}

#[tokio::test]
async fn a_run_cancelled_while_its_calls_run_ends_cancelled() {
    let harness = Harness::new(vec![Ok(calling(&[READ_NOTES]))]);
    harness.cancel.cancel();
    let report = harness.run("read the notes").await;
    assert!(
        matches!(report.ending, Ending::Cancelled),
        "{:?}",
        report.ending
    );
}

#[tokio::test]
async fn a_second_refusal_as_too_long_ends_the_run_naming_the_window_the_server_named() {
    let too_long = || ProviderError {
        class: ErrorClass::ContextLength,
        status: Some(400),
        message: "request (42888 tokens) exceeds the available context size (16384 tokens)".into(),
        retryable: false,
        usage: None,
    };
    let harness = Harness::new(vec![
        Ok(calling(&[READ_NOTES])),
        Err(too_long()),
        Ok(answer("the model's summary")),
        Err(too_long()),
    ]);
    let report = harness.run("read the notes").await;
    let Ending::Failed(error) = &report.ending else {
        panic!("{:?}", report.ending)
    };
    assert_eq!(error.class, ErrorClass::ContextLength);
    assert!(
        error
            .message
            .ends_with("does not fit the model's context window of 16384 tokens, even compacted)"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_response_cut_for_repeating_itself_is_no_answer_and_the_turn_goes_on() {
    let looping = Completion {
        stop: crate::provider::StopReason::Repeating(crate::provider::Loop { period: 64 }),
        ..answer("I will fix it. ")
    };
    let harness = Harness::new(vec![Ok(looping), Ok(answer("fixed"))]);
    let report = harness.run("fix it").await;
    assert_eq!(answered(&report.ending), "fixed");
    assert_eq!(report.turns, 2);
    let requests = harness.provider.requests();
    assert!(
        last_text(&requests[1]).starts_with("Your last response repeated the same text"),
        "{:?}",
        requests[1].messages
    );
}
