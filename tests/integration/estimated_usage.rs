//! A response cut off mid-stream spent what it streamed: usage and the budget count it — the
//! wire's own counts where they came, an estimate marked `estimated` where they did not.

use serde_json::Value;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{Wire, finished_stream, zero_std_with};

const BOTH: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// Some 4 KB of answer: about a thousand tokens.
fn long_answer() -> String {
    "the borrow checker rejects this ".repeat(125)
}

/// A server that streams [`long_answer`] and drops the connection before it says how many
/// tokens that was (no `usage` chunk, no `message_delta`).
fn cutting_server() -> FakeModel {
    FakeModel::start(Script::new().reply(Reply::text(&long_answer()).cut()))
}

/// `zero exec -o stream-json hi` with `flags` against `server`; checks it exits `code`.
fn run(server: &FakeModel, wire: Wire, flags: &[&str], code: i32) -> Vec<Value> {
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(server, wire));
    finished_stream(
        cmd.args(["exec", "-o", "stream-json"])
            .args(flags)
            .arg("hi"),
        code,
    )
}

fn error_code(events: &[Value]) -> &Value {
    &events
        .iter()
        .find(|e| e["type"] == "error")
        .expect("an error")["code"]
}

#[test]
fn a_stream_cut_mid_answer_counts_an_estimate_of_what_it_streamed() {
    for wire in BOTH {
        let server = cutting_server();
        let events = run(&server, wire, &[], 3);
        assert_eq!(error_code(&events), "network", "{wire:?}");
        let usage = &events.last().unwrap()["usage"];
        let output = usage["completionTokens"].as_u64().unwrap();
        // 4000 bytes at some 4 bytes a token.
        assert!((900..=1100).contains(&output), "{wire:?}: {usage}");
        assert_eq!(usage["estimated"], true, "{wire:?}: {usage}");
        assert!(
            usage["promptTokens"].as_u64().unwrap() > 0,
            "{wire:?}: {usage}"
        );
        assert_eq!(
            usage["totalTokens"].as_u64().unwrap(),
            usage["promptTokens"].as_u64().unwrap() + output
        );
        if let Wire::Anthropic = wire {
            // The input count came at the start (`message_start`): it is the wire's own.
            assert_eq!(usage["promptTokens"], 10, "{usage}");
        }
        let reported = events.iter().find(|e| e["type"] == "usage").expect("usage");
        assert_eq!(reported["estimated"], true, "{reported}");
    }
}

#[test]
fn a_cut_stream_past_the_token_budget_ends_the_run_for_the_budget() {
    for wire in BOTH {
        let server = cutting_server();
        let events = run(&server, wire, &["--max-tokens", "300"], 4);
        assert_eq!(error_code(&events), "token_budget", "{wire:?}");
        let end = events.last().unwrap();
        assert_eq!(end["status"], "incomplete", "{end}");
        assert!(end["usage"]["totalTokens"].as_u64().unwrap() > 300, "{end}");
        assert_eq!(end["usage"]["estimated"], true, "{end}");
    }
}

#[test]
fn counts_the_wire_reported_are_not_marked_estimated() {
    for wire in BOTH {
        let server = FakeModel::start(Script::new().reply(Reply::text("fine").with_usage(42, 7)));
        let events = run(&server, wire, &[], 0);
        let usage = &events.last().unwrap()["usage"];
        assert_eq!(usage["completionTokens"], 7, "{wire:?}: {usage}");
        assert!(usage.get("estimated").is_none(), "{wire:?}: {usage}");
    }
}
