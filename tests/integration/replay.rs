//! Every request zero sends is valid for its wire whatever the model produced: a tool call cut
//! at the output cap, malformed or non-object arguments, a call without a name are replayed in
//! a shape the server takes, while the model is told what was wrong with its call. The fake
//! server refuses what llama.cpp and Anthropic refuse (`Script::strict_replay`).

use serde_json::Value;

use crate::support::fake_model::{FakeModel, RecordedRequest, Reply, Script};
use crate::support::zero::{Wire, finished_stream, tool_outputs, zero_std_with};

const BOTH: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// `zero exec --auto medium -o stream-json go` against `server` in a fresh workspace; checks
/// it exits `code` and returns its events.
fn run(server: &FakeModel, wire: Wire, code: i32) -> Vec<Value> {
    let workspace = tempfile::tempdir().unwrap();
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(server, wire));
    finished_stream(
        cmd.current_dir(workspace.path())
            .env("ZERO_MAX_ATTEMPTS", "2")
            .args(["exec", "--auto", "medium", "-o", "stream-json", "go"]),
        code,
    )
}

/// The arguments of every tool call `request` replays, as its wire carries them: the
/// `function.arguments` string (OpenAI), or the `input` value written out (Anthropic).
fn replayed_arguments(request: &RecordedRequest) -> Vec<String> {
    let messages = request.body["messages"].as_array().unwrap();
    let openai = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|call| call["function"]["arguments"].as_str().unwrap().to_owned());
    let anthropic = messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|block| block["type"] == "tool_use")
        .map(|block| block["input"].to_string());
    openai.chain(anthropic).collect()
}

#[test]
fn a_tool_call_cut_at_the_output_cap_is_replayed_as_an_object_and_the_model_told() {
    for wire in BOTH {
        let cut = r#"{"path": "poem.md", "content": "Roses are red,\nthe borrow"#;
        let server = FakeModel::start(
            Script::new()
                .strict_replay()
                .reply(Reply::tool_call_raw("write_file", cut).max_tokens())
                .reply(Reply::text("I will write it in parts.")),
        );
        let events = run(&server, wire, 0);
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{wire:?}: {events:?}");
        assert_eq!(replayed_arguments(&requests[1]), ["{}"], "{wire:?}");
        let outputs = tool_outputs(&events);
        assert_eq!(outputs.len(), 1, "{wire:?}");
        assert!(
            outputs[0].contains("reached the output token limit in the middle of this call"),
            "{wire:?}: {}",
            outputs[0]
        );
        // What the model is told is the result in the next request, as it was reported.
        assert!(
            requests[1].raw_body.contains("in the middle of this call"),
            "{wire:?}"
        );
        assert!(
            events.iter().any(|e| e["type"] == "warning"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("output token limit"))),
            "{wire:?}"
        );
        assert!(
            events
                .iter()
                .any(|e| e["type"] == "final" && e["text"] == "I will write it in parts."),
            "{wire:?}"
        );
    }
}

#[test]
fn malformed_non_object_and_nameless_calls_are_replayed_in_a_shape_the_server_takes() {
    for wire in BOTH {
        let server = FakeModel::start(
            Script::new()
                .strict_replay()
                .reply(Reply::tool_call_raw("read_file", r#"["a.rs"]"#))
                .reply(Reply::tool_call_raw("read_file", r#"{"path": oops}"#))
                .reply(Reply::tool_call_raw("", r#"{"path": "a.rs"}"#))
                .reply(Reply::text("done")),
        );
        let events = run(&server, wire, 0);
        let requests = server.requests();
        assert_eq!(requests.len(), 4, "{wire:?}: {events:?}");
        let last = replayed_arguments(&requests[3]);
        assert_eq!(last.len(), 3, "{wire:?}");
        for arguments in &last[..2] {
            assert_eq!(arguments, "{}", "{wire:?}");
        }
        let third: Value = serde_json::from_str(&last[2]).unwrap();
        assert_eq!(
            third["path"], "a.rs",
            "{wire:?}: a valid object is sent as it is"
        );
        // Each call was answered with an error saying what was wrong with it.
        let outputs = tool_outputs(&events);
        assert_eq!(outputs.len(), 3, "{wire:?}");
        assert!(
            outputs.iter().all(|o| o.starts_with("Error")),
            "{outputs:?}"
        );
        assert!(outputs[1].contains("not valid JSON"), "{}", outputs[1]);
    }
}
