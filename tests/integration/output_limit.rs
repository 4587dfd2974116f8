//! The per-response output cap, through the binary: every request carries it in the field the
//! endpoint honours, a response cut by it is reported and does not end the run, and a model
//! that repeats one read in a response gets one answer for each call.

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Route, Script};
use crate::support::wait::DEADLINE;
use crate::support::zero::{Wire, assert_stream_contract, events, zero_std_with};

/// `zero exec -o stream-json <args>` against `server` in a fresh workspace; returns the exit
/// code and the events.
fn exec(
    server: &FakeModel,
    wire: Wire,
    workspace: &std::path::Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> (i32, Vec<Value>, String) {
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(server, wire));
    cmd.current_dir(workspace)
        .args(["exec", "-o", "stream-json"])
        .args(args)
        .timeout(DEADLINE);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd.output().unwrap();
    let code = output.status.code().expect("an exit code");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (code, events(&output.stdout), stderr)
}

/// The output cap a recorded request carried, by wire.
fn cap_of(body: &Value) -> &Value {
    &body["max_tokens"]
}

/// One way of setting the cap: the environment, the flags, and the cap every request carries.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], u64);

#[test]
fn every_request_carries_the_cap_from_the_flag_the_variable_the_file_or_the_default() {
    let workspace = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("zero")).unwrap();
    std::fs::write(
        config.path().join("zero/config.toml"),
        "max_output_tokens = 777\n",
    )
    .unwrap();
    let xdg = config.path().to_str().unwrap();
    let cases: [Case; 4] = [
        (&[], &[], 8192),
        (&[("XDG_CONFIG_HOME", xdg)], &[], 777),
        (
            &[("XDG_CONFIG_HOME", xdg), ("ZERO_MAX_OUTPUT_TOKENS", "555")],
            &[],
            555,
        ),
        (
            &[("XDG_CONFIG_HOME", xdg), ("ZERO_MAX_OUTPUT_TOKENS", "555")],
            &["--max-output-tokens", "333"],
            333,
        ),
    ];
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        for (env, flags, expected) in cases {
            let server = FakeModel::start(Script::new().reply(Reply::text("ok")));
            let args: Vec<&str> = flags.iter().copied().chain(["hi"]).collect();
            let (code, _, stderr) = exec(&server, wire, workspace.path(), env, &args);
            assert_eq!(code, 0, "{wire:?} {env:?} {flags:?}: {stderr}");
            let body = &server.requests()[0].body;
            assert_eq!(cap_of(body), expected, "{wire:?} {env:?} {flags:?}: {body}");
            assert!(body.get("max_completion_tokens").is_none(), "{body}");
        }
    }
}

#[test]
fn a_specialist_gets_its_parents_cap() {
    let workspace = tempfile::tempdir().unwrap();
    let child = Route::body_contains("## Assigned task").reply(Reply::text("child done"));
    let server = FakeModel::start(
        Script::new()
            .route(child)
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Say done."}),
            ))
            .reply(Reply::text("parent done")),
    );
    let args = ["--auto", "medium", "--max-output-tokens", "444", "go"];
    let (code, _, stderr) = exec(&server, Wire::OpenAi, workspace.path(), &[], &args);
    assert_eq!(code, 0, "{stderr}");
    let requests = server.requests();
    let from_child: Vec<_> = requests
        .iter()
        .filter(|r| r.raw_body.contains("## Assigned task"))
        .collect();
    assert_eq!(from_child.len(), 1, "{requests:?}");
    assert_eq!(cap_of(&from_child[0].body), 444);
    for request in &requests {
        assert_eq!(cap_of(&request.body), 444, "{}", request.raw_body);
    }
}

#[test]
fn an_unusable_cap_is_refused_before_any_request() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(Script::new());
    for flag in ["0", "-1", "lots"] {
        let flag = format!("--max-output-tokens={flag}");
        let args = [flag.as_str(), "hi"];
        let (code, events, stderr) = exec(&server, Wire::OpenAi, workspace.path(), &[], &args);
        assert_eq!(code, 2, "{flag}: {stderr}");
        assert_stream_contract(&events, 2);
        assert!(stderr.contains("--max-output-tokens"), "{flag}: {stderr}");
    }
    let env = [("ZERO_MAX_OUTPUT_TOKENS", "0")];
    let (code, events, stderr) = exec(&server, Wire::OpenAi, workspace.path(), &env, &["hi"]);
    assert_eq!(code, 3, "a configuration error: {stderr}");
    assert_stream_contract(&events, 3);
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("ZERO_MAX_OUTPUT_TOKENS = \"0\" is not valid"),
        "{error}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_tool_call_cut_mid_arguments_gets_an_error_result_and_the_run_goes_on() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let workspace = tempfile::tempdir().unwrap();
        let cut = r#"{"path": "notes.txt", "content": "the first half of a long"#;
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::tool_call_raw("write_file", cut).max_tokens())
                .reply(Reply::text("I will write it in parts.")),
        );
        let args = ["--auto", "medium", "write notes"];
        let (code, events, stderr) = exec(&server, wire, workspace.path(), &[], &args);
        assert_eq!(code, 0, "{wire:?}: {stderr}");
        assert_stream_contract(&events, 0);
        let warnings: Vec<_> = events.iter().filter(|e| e["type"] == "warning").collect();
        assert_eq!(warnings.len(), 1, "{wire:?}: {events:?}");
        assert!(
            warnings[0]["message"]
                .as_str()
                .unwrap()
                .contains("cut off at the output token limit"),
            "{}",
            warnings[0]
        );
        let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
        assert_eq!(result["status"], "error", "{result}");
        let output = result["output"].as_str().unwrap();
        assert!(
            output.contains("reached the output token limit in the middle of this call"),
            "{output}"
        );
        assert!(!workspace.path().join("notes.txt").exists());
        // The model is told, in the next request.
        let next = &server.requests()[1].raw_body;
        assert!(
            next.contains("in the middle of this call"),
            "{wire:?}: {next}"
        );
        assert_eq!(events.last().unwrap()["status"], "success");
    }
}

#[test]
fn a_text_answer_cut_by_the_cap_ends_the_run_with_a_warning() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(Script::new().reply(Reply::text("half an answ").max_tokens()));
    let (code, events, stderr) = exec(&server, Wire::OpenAi, workspace.path(), &[], &["hi"]);
    assert_eq!(code, 0, "{stderr}");
    let warning = events.iter().find(|e| e["type"] == "warning").unwrap();
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("cut off at the output token limit"),
        "{warning}"
    );
}

#[test]
fn identical_reads_in_one_response_each_get_the_one_result() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(workspace.path().join("b.txt"), "beta\n").unwrap();
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::tool_calls(vec![
                    ("read_file", json!({"path": "a.txt"})),
                    ("read_file", json!({"path": "a.txt"})),
                    ("read_file", json!({"path": "b.txt"})),
                    ("read_file", json!({"path": "a.txt"})),
                ]))
                .reply(Reply::text("read")),
        );
        let (code, events, stderr) = exec(&server, wire, workspace.path(), &[], &["read"]);
        assert_eq!(code, 0, "{wire:?}: {stderr}");
        assert_stream_contract(&events, 0);
        let results: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "tool_result")
            .collect();
        assert_eq!(results.len(), 4, "{wire:?}: {events:?}");
        let ids: std::collections::BTreeSet<&str> =
            results.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 4, "every call keeps its own id: {results:?}");
        let outputs: Vec<&str> = results
            .iter()
            .map(|r| r["output"].as_str().unwrap())
            .collect();
        assert!(outputs[0].contains("alpha"), "{}", outputs[0]);
        assert_eq!(outputs[0], outputs[1]);
        assert_eq!(outputs[0], outputs[3]);
        assert!(outputs[2].contains("beta"), "{}", outputs[2]);
        // Each call is answered in the next request, under its own id.
        let next = &server.requests()[1].raw_body;
        for result in &results {
            let id = result["id"].as_str().unwrap();
            assert!(next.contains(id), "{wire:?}: {id} not answered: {next}");
        }
    }
}
