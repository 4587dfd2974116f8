//! `--output-schema`: the final answer is one JSON value that satisfies the schema, or the
//! run exits 4. Through the real binary, against the fake model.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, RecordedRequest, Reply, Route, Script};
use crate::support::zero::{
    Wire, assert_flag_rejected, assert_stream_contract, events, stream_of, zero, zero_anthropic,
    zero_openai, zero_std_with,
};

/// A review verdict, the schema the tests' answers must satisfy.
fn verdict_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "verdict": {"enum": ["approve", "request_changes"]},
            "findings": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["verdict", "findings"],
        "additionalProperties": false
    })
}

const VALID: &str = r#"{"verdict": "approve", "findings": []}"#;
/// [`VALID`] as zero prints it: compact, one line.
const VALID_COMPACT: &str = r#"{"findings":[],"verdict":"approve"}"#;
const WRONG_VERDICT: &str = r#"{"verdict": "maybe", "findings": []}"#;

/// A scratch directory holding `verdict.json` (the schema) and a workspace.
struct Job {
    dir: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("verdict.json"),
            verdict_schema().to_string(),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("workspace")).unwrap();
        Job { dir }
    }

    fn schema(&self) -> PathBuf {
        self.dir.path().join("verdict.json")
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    /// `zero exec` on `wire` with the schema, `flags` and the prompt "review".
    fn run(&self, server: &FakeModel, wire: Wire, flags: &[&str]) -> std::process::Output {
        let mut command = match wire {
            Wire::OpenAi => zero_openai(server),
            Wire::Anthropic => zero_anthropic(server),
        };
        command
            .args(["exec", "--output-schema"])
            .arg(self.schema())
            .arg("-C")
            .arg(self.workspace())
            .args(flags)
            .arg("review")
            .output()
            .unwrap()
    }

    /// [`Job::run`] with `-o stream-json`: the exit code and the events, checked.
    fn stream(&self, server: &FakeModel, wire: Wire, flags: &[&str]) -> (i32, Vec<Value>) {
        let mut flags = flags.to_vec();
        flags.extend(["-o", "stream-json"]);
        let output = self.run(server, wire, &flags);
        let (code, events) = stream_of(&output);
        (code, events)
    }
}

fn stdout(output: &std::process::Output) -> &str {
    std::str::from_utf8(&output.stdout).unwrap()
}

/// The system prompt of an OpenAI-wire request.
fn system_prompt(request: &RecordedRequest) -> &str {
    request.body["messages"][0]["content"].as_str().unwrap()
}

/// The text of the last message of an OpenAI-wire request.
fn last_message(request: &RecordedRequest) -> &str {
    let messages = request.body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"].as_str().unwrap()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_valid_first_answer_is_printed_compact_and_alone() {
    let server = FakeModel::start(Script::new().reply(Reply::text(VALID)));
    let job = Job::new();
    let output = job.run(&server, Wire::OpenAi, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout(&output), format!("{VALID_COMPACT}\n"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    // The model is told the schema, and a copy of the API is not asked to constrain the first
    // request, which must stay free to call tools.
    let system = system_prompt(&requests[0]);
    assert!(system.contains("Final answer format"), "{system}");
    assert!(
        system.contains(r#""enum":["approve","request_changes"]"#),
        "{system}"
    );
    assert!(requests[0].body.get("response_format").is_none());
}

#[test]
fn a_fenced_answer_is_accepted() {
    let fenced = format!("```json\n{VALID}\n```");
    let server = FakeModel::start(Script::new().reply(Reply::text(&fenced)));
    let output = Job::new().run(&server, Wire::OpenAi, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout(&output), format!("{VALID_COMPACT}\n"));
}

#[test]
fn the_errors_go_back_to_the_model_until_it_answers_in_shape() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::text("Looks fine to me."))
                .reply(Reply::text(WRONG_VERDICT))
                .reply(Reply::text(VALID)),
        );
        let (code, events) = Job::new().stream(&server, wire, &[]);
        assert_eq!(code, 0, "{wire:?}: {events:?}");
        let finals = of_type(&events, "final");
        assert_eq!(finals.len(), 1, "{events:?}");
        assert_eq!(
            finals[0]["structured"],
            serde_json::from_str::<Value>(VALID).unwrap()
        );
        assert_eq!(of_type(&events, "warning").len(), 2, "{events:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{wire:?}");
        let feedback: Vec<String> = requests[1..]
            .iter()
            .map(|request| request.raw_body.clone())
            .collect();
        assert!(
            feedback[0].contains("is not one JSON value"),
            "{}",
            feedback[0]
        );
        assert!(
            feedback[1].contains(r#"- at /verdict: \"maybe\" is not one of"#),
            "{}",
            feedback[1]
        );
        if let Wire::OpenAi = wire {
            // The answer is due: a server that can hold it to the schema is asked to.
            assert!(requests[0].body.get("response_format").is_none());
            for retry in &requests[1..] {
                let format = &retry.body["response_format"];
                assert_eq!(format["type"], "json_schema", "{format}");
                assert_eq!(format["json_schema"]["schema"], verdict_schema());
                assert_eq!(format["json_schema"]["strict"], false);
            }
            assert!(last_message(&requests[2]).contains("Reply with the corrected final answer"));
        }
    }
}

#[test]
fn an_answer_that_never_fits_exits_4_with_the_errors() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text(WRONG_VERDICT))
            .reply(Reply::text(WRONG_VERDICT))
            .reply(Reply::text(r#"{"verdict": "maybe"}"#)),
    );
    let (code, events) = Job::new().stream(&server, Wire::OpenAi, &[]);
    assert_eq!(code, 4, "{events:?}");
    assert_eq!(server.requests().len(), 3, "the default is 2 retries");
    assert!(of_type(&events, "final").is_empty(), "{events:?}");
    let error = of_type(&events, "error")[0];
    assert_eq!(error["code"], "schema_unsatisfied");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("after 2 retries"),
        "{error}"
    );
    let paths: Vec<&str> = error["schemaErrors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["", "/verdict"], "{error}");
    assert!(
        error["schemaErrors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("\"findings\" is a required property"),
        "{error}"
    );
    assert_eq!(events.last().unwrap()["status"], "incomplete");
}

#[test]
fn in_text_mode_a_failed_schema_prints_nothing_on_stdout() {
    let server = FakeModel::start(Script::new().reply(Reply::text("no JSON here")));
    let job = Job::new();
    let last = job.dir.path().join("last.json");
    let output = job.run(
        &server,
        Wire::OpenAi,
        &[
            "--schema-retries",
            "0",
            "--output-last-message",
            last.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    assert_eq!(stdout(&output), "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("does not satisfy --output-schema"),
        "{stderr}"
    );
    assert!(stderr.contains("is not one JSON value"), "{stderr}");
    assert!(!last.exists(), "no answer, no file");
    assert_eq!(server.requests().len(), 1, "--schema-retries 0");
}

#[test]
fn the_object_is_in_every_output_format_and_the_last_message_file() {
    let expected: Value = serde_json::from_str(VALID).unwrap();
    let job = Job::new();
    // -o json: structuredOutput beside the text.
    let server = FakeModel::start(Script::new().reply(Reply::text(VALID)));
    let output = job.run(&server, Wire::OpenAi, &["-o", "json"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["structuredOutput"], expected, "{summary}");
    assert_eq!(summary["finalText"], VALID);
    // stream-json: the final event carries it.
    let server = FakeModel::start(Script::new().reply(Reply::text(VALID)));
    let (code, events) = job.stream(&server, Wire::OpenAi, &[]);
    assert_eq!(code, 0);
    assert_eq!(of_type(&events, "final")[0]["structured"], expected);
    // --output-last-message: the compact JSON, in any format.
    let server =
        FakeModel::start(Script::new().reply(Reply::text(&format!("```json\n{VALID}\n```"))));
    let last = job.dir.path().join("verdict-out.json");
    let (code, _) = job.stream(
        &server,
        Wire::OpenAi,
        &["--output-last-message", last.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read_to_string(&last).unwrap(),
        format!("{VALID_COMPACT}\n")
    );
    // Without a schema nothing changes: no structured fields at all.
    let server = FakeModel::start(Script::new().reply(Reply::text(VALID)));
    let output = zero_openai(&server)
        .args(["exec", "-o", "json", "-C"])
        .arg(job.workspace())
        .arg("review")
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(summary.get("structuredOutput").is_none(), "{summary}");
}

#[test]
fn a_server_that_refuses_response_format_is_asked_again_without_it() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text(WRONG_VERDICT))
            .reply(Reply::error(400, "unknown field: response_format"))
            .reply(Reply::text(WRONG_VERDICT))
            .reply(Reply::text(VALID)),
    );
    let (code, events) = Job::new().stream(&server, Wire::OpenAi, &[]);
    assert_eq!(code, 0, "{events:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests[1].body.get("response_format").is_some());
    // Refused once: the rest of the run leaves the schema to zero's own check.
    assert!(requests[2].body.get("response_format").is_none());
    assert!(requests[3].body.get("response_format").is_none());
    assert_eq!(requests[1].body["messages"], requests[2].body["messages"]);
}

#[test]
fn tool_calls_work_as_usual_before_the_answer() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("glob", json!({"pattern": "*"})))
            .reply(Reply::text(VALID)),
    );
    let (code, events) = Job::new().stream(&server, Wire::OpenAi, &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(of_type(&events, "tool_result").len(), 1);
    assert!(server.requests()[1].body.get("response_format").is_none());
}

/// `zero exec --output-schema PATH hi`: a usage error whose message contains each of `needles`,
/// before any model request.
fn assert_schema_rejected(path: &Path, needles: &[&str]) {
    let server = FakeModel::start(Script::new());
    let mut command = zero_std_with(&server, Wire::OpenAi);
    let output = command
        .args(["exec", "-o", "stream-json", "--output-schema"])
        .arg(path)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", path.display());
    let events = events(&output.stdout);
    let error = of_type(&events, "error")[0];
    assert_eq!(error["code"], "usage_error");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(&path.display().to_string()), "{message}");
    for needle in needles {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn each_kind_of_bad_schema_is_a_usage_error_that_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    assert_schema_rejected(
        &dir.path().join("missing.json"),
        &["cannot read it", "No such file"],
    );
    assert_schema_rejected(dir.path(), &["cannot read it"]);
    assert_schema_rejected(
        &file(
            "broken.json",
            "{\n  \"type\": \"object\",\n  \"required\": [\"a\"\n}\n",
        ),
        &["not JSON", "line 4 column 1"],
    );
    assert_schema_rejected(&file("empty.json", ""), &["not JSON"]);
    assert_schema_rejected(
        &file(
            "bad-type.json",
            r#"{"properties": {"n": {"type": "integr"}}}"#,
        ),
        &["not a valid JSON Schema", "at /properties/n/type"],
    );
    assert_schema_rejected(
        &file("bad-pattern.json", r#"{"type": "string", "pattern": "(["}"#),
        &["at /pattern"],
    );
    assert_schema_rejected(
        &file(
            "draft.json",
            r#"{"$schema": "https://example.com/mine", "type": "object"}"#,
        ),
        &["at /$schema", "not a JSON Schema draft zero knows"],
    );
    assert_schema_rejected(
        &file(
            "remote.json",
            r#"{"$ref": "https://example.com/verdict.json"}"#,
        ),
        &["fetches no schema"],
    );
    assert_flag_rejected("--schema-retries", &["-1", "two"]);
    // Retries mean nothing without a schema.
    let output = zero()
        .args(["exec", "--schema-retries", "1", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--output-schema"));
}

#[test]
fn a_specialist_returns_a_typed_answer_to_its_parent() {
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(Reply::text("I approve."))
                    .reply(Reply::text(&format!("```json\n{VALID}\n```"))),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({
                    "name": "code-review",
                    "prompt": "Review the change.",
                    "output_schema": verdict_schema(),
                }),
            ))
            .reply(Reply::tool_call(
                "Task",
                json!({
                    "name": "code-review",
                    "prompt": "Review the change.",
                    "output_schema": {"type": "objekt"},
                }),
            ))
            .reply(Reply::text("The reviewer approved.")),
    );
    let workspace = tempfile::tempdir().unwrap();
    let output = zero_openai(&server)
        .args(["exec", "-o", "stream-json", "-C"])
        .arg(workspace.path())
        .arg("get the change reviewed")
        .output()
        .unwrap();
    let events = events(&output.stdout);
    assert_stream_contract(&events, 0);
    let results: Vec<&Value> = of_type(&events, "tool_result");
    assert_eq!(results[0]["status"], "ok", "{results:?}");
    let answer = results[0]["output"].as_str().unwrap();
    assert!(
        answer.ends_with(&format!("\n\n{VALID_COMPACT}")),
        "{answer}"
    );
    // A schema that is not one is the caller's error, and nothing is launched for it.
    assert_eq!(results[1]["status"], "error");
    let refused = results[1]["output"].as_str().unwrap();
    assert!(
        refused.contains("`output_schema` is not a valid JSON Schema"),
        "{refused}"
    );
    let child_requests: Vec<RecordedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| r.raw_body.contains(CHILD))
        .collect();
    assert_eq!(child_requests.len(), 2, "one try and one retry");
    assert!(system_prompt(&child_requests[0]).contains("Final answer format"));
    assert!(
        last_message(&child_requests[1]).contains("does not satisfy the output schema"),
        "{}",
        last_message(&child_requests[1])
    );
}
