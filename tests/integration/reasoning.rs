//! `--reasoning-effort` through the binary, on both wires: what each request body carries, a
//! server that refuses the field, Anthropic's thinking blocks sent back with their signatures
//! (also from a resumed session), and reasoning kept apart from the answer.

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, RecordedRequest, Reply, Route, Script};
use crate::support::zero::{Wire, finished_stream, zero_std_with};

/// `zero exec -o stream-json` against `server` on `wire`, with `flags`; its events, once it
/// exited with `code`.
fn run(server: &FakeModel, wire: Wire, flags: &[&str], code: i32) -> Vec<Value> {
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(server, wire));
    cmd.args(["exec", "-o", "stream-json", "--auto", "low"])
        .args(flags)
        .arg("look around");
    finished_stream(&mut cmd, code)
}

/// The model requests `server` received (the window probes left out).
fn model_requests(server: &FakeModel) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect()
}

fn warnings(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|event| event["type"] == "warning")
        .map(|event| event["message"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn each_wire_carries_the_effort_as_its_api_documents_it() {
    let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
    run(&server, Wire::OpenAi, &["--reasoning-effort", "xhigh"], 0);
    let body = &model_requests(&server)[0].body;
    assert_eq!(body["reasoning_effort"], "xhigh", "{body}");

    let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
    run(&server, Wire::Anthropic, &["--reasoning-effort", "high"], 0);
    let body = &model_requests(&server)[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384})
    );
    // The budget comes on top of the output cap: thinking never eats the answer's room.
    assert_eq!(body["max_tokens"], 8192 + 16384, "{body}");

    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
        run(&server, wire, &[], 0);
        let body = &model_requests(&server)[0].body;
        assert!(body.get("reasoning_effort").is_none(), "{wire:?}: {body}");
        assert!(body.get("thinking").is_none(), "{wire:?}: {body}");
    }
}

#[test]
fn config_toml_sets_the_effort_and_the_flag_wins() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("ok"))
            .reply(Reply::text("ok")),
    );
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("zero")).unwrap();
    std::fs::write(
        home.path().join("zero/config.toml"),
        "reasoning_effort = \"minimal\"\n",
    )
    .unwrap();
    for (flags, expected) in [
        (&[][..], "minimal"),
        (&["--reasoning-effort", "medium"][..], "medium"),
    ] {
        let mut cmd = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi));
        cmd.env("XDG_CONFIG_HOME", home.path())
            .args(["exec", "-o", "stream-json"])
            .args(flags)
            .arg("hi");
        finished_stream(&mut cmd, 0);
        let requests = model_requests(&server);
        assert_eq!(requests.last().unwrap().body["reasoning_effort"], expected);
    }
}

#[test]
fn a_level_that_is_not_one_is_a_usage_error() {
    let server = FakeModel::start(Script::new());
    let output = zero_std_with(&server, Wire::OpenAi)
        .args(["exec", "--reasoning-effort", "extreme", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("minimal, low, medium, high, xhigh"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_server_that_refuses_the_field_is_asked_without_it_for_the_rest_of_the_run() {
    let refusals = [
        (
            Wire::OpenAi,
            "Unrecognized request argument supplied: reasoning_effort",
            "reasoning_effort",
        ),
        (
            Wire::Anthropic,
            "thinking: extended thinking is not supported by this model",
            "thinking",
        ),
    ];
    for (wire, refusal, field) in refusals {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::error(400, refusal))
                .reply(Reply::tool_call("list_directory", json!({"path": "."})))
                .reply(Reply::text("done")),
        );
        let events = run(&server, wire, &["--reasoning-effort", "low"], 0);
        let requests = model_requests(&server);
        assert_eq!(requests.len(), 3, "{wire:?}");
        assert!(requests[0].body.get(field).is_some(), "{wire:?}");
        for later in &requests[1..] {
            assert!(later.body.get(field).is_none(), "{wire:?}: {}", later.body);
        }
        let warnings = warnings(&events);
        assert_eq!(warnings.len(), 1, "{wire:?}: {warnings:?}");
        assert!(warnings[0].contains(&format!("`{field}`")), "{warnings:?}");
        assert!(warnings[0].contains(refusal), "{warnings:?}");
    }
}

#[test]
fn a_400_about_something_else_is_not_taken_for_a_refusal_of_the_field() {
    let server = FakeModel::start(Script::new().reply(Reply::error(400, "messages: bad role")));
    let events = run(&server, Wire::OpenAi, &["--reasoning-effort", "low"], 3);
    assert_eq!(model_requests(&server).len(), 1);
    assert!(warnings(&events).is_empty(), "{events:?}");
}

#[test]
fn anthropic_thinking_blocks_go_back_first_and_unchanged_with_the_calls() {
    let server = FakeModel::start(
        Script::new()
            .reply(
                Reply::tool_call("list_directory", json!({"path": "."}))
                    .with_reasoning("I should look at the files."),
            )
            .reply(Reply::text("done")),
    );
    let events = run(
        &server,
        Wire::Anthropic,
        &["--reasoning-effort", "medium"],
        0,
    );
    let requests = model_requests(&server);
    let assistant = &requests[1].body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "I should look at the files.",
               "signature": "fake-signature"})
    );
    assert_eq!(assistant["content"][1]["type"], "tool_use");
    let reasoning: String = events
        .iter()
        .filter(|event| event["type"] == "reasoning")
        .map(|event| event["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "I should look at the files.");
}

#[test]
fn a_resumed_session_sends_the_thinking_blocks_back_too() {
    let server = FakeModel::start(
        Script::new()
            .reply(
                Reply::tool_call("list_directory", json!({"path": "."}))
                    .with_reasoning("Look first."),
            )
            .reply(Reply::text("done"))
            .reply(Reply::text("still done")),
    );
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for resume in [&[][..], &["--resume", "last"][..]] {
        let mut cmd = assert_cmd::Command::from_std(zero_std_with(&server, Wire::Anthropic));
        cmd.env("XDG_DATA_HOME", data.path())
            .env("ZERO_HOME", data.path().join("zero"))
            .args(["exec", "-o", "stream-json", "--auto", "low", "--cwd"])
            .arg(workspace.path())
            .args(["--reasoning-effort", "low"])
            .args(resume)
            .arg("look");
        finished_stream(&mut cmd, 0);
    }
    let resumed = &model_requests(&server)[2].body;
    assert_eq!(
        resumed["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Look first.", "signature": "fake-signature"}),
        "{resumed}"
    );
}

#[test]
fn reasoning_is_an_event_of_its_own_and_never_reaches_stdout_in_text_mode() {
    let reply = || Reply::reasoning("Secret deliberation.", "The answer.").with_reasoning_tokens(3);
    let server = FakeModel::start(Script::new().reply(reply()));
    let events = run(&server, Wire::OpenAi, &[], 0);
    let reasoning: String = events
        .iter()
        .filter(|event| event["type"] == "reasoning")
        .map(|event| event["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "Secret deliberation.");
    let run_end = events.last().unwrap();
    assert_eq!(run_end["usage"]["reasoningTokens"], 3, "{run_end}");

    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(Script::new().reply(reply()));
        let output = zero_std_with(&server, wire)
            .args(["exec", "hi"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(stdout.trim_end(), "The answer.", "{wire:?}");
        assert!(!stdout.contains("Secret"), "{wire:?}: {stdout}");
    }
}

#[test]
fn a_specialist_reasons_as_its_parent_unless_its_manifest_says_otherwise() {
    let workspace = tempfile::tempdir().unwrap();
    let manifests = workspace.path().join(".zero/specialists");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(
        manifests.join("quick.md"),
        "---\nname: quick\ndescription: Answers quickly.\nreasoning_effort: minimal\n---\n\
         Answer at once.\n",
    )
    .unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(Reply::text("child one"))
                    .reply(Reply::text("child two")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Look around."}),
            ))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "quick", "prompt": "Look quickly."}),
            ))
            .reply(Reply::text("done")),
    );
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi));
    cmd.args(["exec", "-o", "stream-json", "--auto", "medium", "--cwd"])
        .arg(workspace.path())
        .args(["--reasoning-effort", "high", "go"]);
    finished_stream(&mut cmd, 0);
    let efforts: Vec<Value> = model_requests(&server)
        .iter()
        .filter(|request| request.raw_body.contains(CHILD))
        .map(|request| request.body["reasoning_effort"].clone())
        .collect();
    assert_eq!(efforts, [json!("high"), json!("minimal")]);
}
