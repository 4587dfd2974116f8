//! Prompt caching as a server sees it: every turn's request starts with the previous turn's
//! request, byte for byte, so llama.cpp can reuse its KV cache and the hosted APIs their
//! prompt caches. Through the real binary, on both wires.

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{Wire, zero_std_with};

/// The request text up to the end of its last message: what the next request must start with.
fn through_last_message(body: &str) -> &str {
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        messages: Vec<&'a RawValue>,
    }
    let parsed: Body = serde_json::from_str(body).unwrap();
    let last = parsed.messages.last().unwrap().get();
    let end = last.as_ptr() as usize - body.as_ptr() as usize + last.len();
    &body[..end]
}

#[test]
fn each_request_starts_with_the_one_before_it_byte_for_byte() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("notes.txt"), "one\ntwo\n").unwrap();
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::tool_call("glob", json!({"pattern": "*"})))
                .reply(Reply::tool_calls(vec![
                    ("read_file", json!({"path": "notes.txt"})),
                    ("grep", json!({"pattern": "two"})),
                ]))
                .reply(Reply::text("done")),
        );
        let output = zero_std_with(&server, wire)
            .args(["exec", "-C"])
            .arg(workspace.path())
            .arg("look around")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{wire:?}: {output:?}");
        // Anthropic's cache breakpoint moves to the newest message each turn; the marker is
        // not part of the cached text, everything else is.
        let bodies: Vec<String> = server
            .requests()
            .iter()
            .map(|r| {
                r.raw_body
                    .replace(r#","cache_control":{"type":"ephemeral"}"#, "")
            })
            .collect();
        assert_eq!(bodies.len(), 3, "{wire:?}");
        for pair in bodies.windows(2) {
            let prefix = through_last_message(&pair[0]);
            assert!(
                pair[1].starts_with(prefix),
                "{wire:?}: the next request does not start with\n{prefix}\nit is\n{}",
                pair[1]
            );
        }
    }
}
