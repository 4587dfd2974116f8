//! `--max-tokens` and `--max-cost-usd`: one budget for the run and the specialists it
//! launches. Through the real binary, against a fake model that reports usage per response.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, DEFAULT_USAGE, FakeModel, Reply, Route, Script};
use crate::support::procs::{KillOnDrop, assert_gone_soon, nonce};
use crate::support::zero::{assert_flag_rejected, stream_of, zero_openai};
use crate::tasks::sleeping_child;

/// `zero exec --auto medium -o stream-json` against `server` with `flags` and the config
/// directory `config` (which may hold a `zero/config.toml`); the exit code and the events.
fn run(server: &FakeModel, config: &Path, flags: &[&str]) -> (i32, Vec<Value>) {
    let workspace = tempfile::tempdir().unwrap();
    let output = zero_openai(server)
        .env("XDG_CONFIG_HOME", config)
        .args(["exec", "--auto", "medium", "-o", "stream-json", "-C"])
        .arg(workspace.path())
        .args(flags)
        .arg("go")
        .output()
        .unwrap();
    let (code, events) = stream_of(&output);
    (code, events)
}

/// A config directory whose `zero/config.toml` holds `text`.
fn config(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("zero")).unwrap();
    std::fs::write(dir.path().join("zero/config.toml"), text).unwrap();
    dir
}

fn glob() -> Reply {
    Reply::tool_call("glob", json!({"pattern": "*"}))
}

fn error_of(events: &[Value]) -> &Value {
    events.iter().find(|e| e["type"] == "error").unwrap()
}

#[test]
fn the_response_that_passes_the_token_budget_ends_the_run_and_its_calls_are_not_run() {
    let server = FakeModel::start(
        Script::new()
            .reply(glob().with_usage(400, 100))
            .reply(glob().with_usage(400, 100))
            .reply(glob().with_usage(400, 100))
            .reply(Reply::text("never asked for")),
    );
    let none = tempfile::tempdir().unwrap();
    let (code, events) = run(&server, none.path(), &["--max-tokens", "1200"]);
    assert_eq!(code, 4, "{events:?}");
    let error = error_of(&events);
    assert_eq!(error["code"], "token_budget");
    assert!(
        error["message"].as_str().unwrap().contains("1500 tokens"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3);
    let calls = events.iter().filter(|e| e["type"] == "tool_call").count();
    assert_eq!(
        calls, 2,
        "the third response's call must not run: {events:?}"
    );
    let end = events.last().unwrap();
    assert_eq!(end["status"], "incomplete");
    assert_eq!(end["usage"]["totalTokens"], 1500);
    assert_eq!(end["childUsage"]["totalTokens"], 0);
    assert!(end.get("costUsd").is_none(), "{end}");
}

#[test]
fn a_specialists_tokens_count_toward_the_budget_and_are_shown_apart() {
    let server = FakeModel::start(
        Script::new()
            .route(Route::body_contains(CHILD).reply(Reply::text("found it").with_usage(700, 50)))
            .reply(
                Reply::tool_call(
                    "Task",
                    json!({"name": "explorer", "prompt": "Look around."}),
                )
                .with_usage(100, 10),
            )
            .reply(glob().with_usage(100, 10))
            .reply(glob().with_usage(100, 10))
            .reply(Reply::text("never asked for")),
    );
    let none = tempfile::tempdir().unwrap();
    let (code, events) = run(&server, none.path(), &["--max-tokens", "1000"]);
    // 110 + 750 (the specialist) + 110 = 970 fits; the next 110 does not.
    assert_eq!(code, 4, "{events:?}");
    assert_eq!(error_of(&events)["code"], "token_budget");
    let end = events.last().unwrap();
    assert_eq!(end["usage"]["totalTokens"], 1080, "{end}");
    assert_eq!(end["usage"]["promptTokens"], 1000, "{end}");
    assert_eq!(end["childUsage"]["totalTokens"], 750, "{end}");
    let parent_requests = server
        .requests()
        .iter()
        .filter(|r| !r.raw_body.contains(CHILD))
        .count();
    assert_eq!(parent_requests, 3);
}

#[test]
fn a_specialists_tokens_and_cost_are_counted_without_a_budget() {
    let prices = config("[prices.\"fake-model\"]\ninput = 1.0\noutput = 1.0\n");
    let server = FakeModel::start(
        Script::new()
            .route(Route::body_contains(CHILD).reply(Reply::text("found it").with_usage(7000, 70)))
            .reply(
                Reply::tool_call(
                    "Task",
                    json!({"name": "explorer", "prompt": "Look around."}),
                )
                .with_usage(300, 3),
            )
            .reply(Reply::text("done").with_usage(300, 3)),
    );
    let (code, events) = run(&server, prices.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    let end = events.last().unwrap();
    assert_eq!(end["childUsage"]["totalTokens"], 7070, "{end}");
    assert_eq!(end["usage"]["totalTokens"], 7676, "{end}");
    assert_eq!(end["usage"]["promptTokens"], 7600, "{end}");
    // A dollar a million tokens, the specialist's included.
    let cost = end["costUsd"].as_f64().unwrap();
    assert!((cost - 0.007676).abs() < 1e-9, "{end}");
}

#[test]
fn a_background_specialist_stopped_at_close_still_counts() {
    let marker = nonce();
    let _cleanup = KillOnDrop(marker.clone());
    // The specialist answers its first request with a long `sleep` and is still in it when
    // the run ends; the close stops it. (The run is reminded of it once before it may end.)
    let server = FakeModel::start(
        sleeping_child(&marker)
            .reply(Reply::text("leaving it"))
            .reply(Reply::text("leaving it, yes")),
    );
    let none = tempfile::tempdir().unwrap();
    let (code, events) = run(&server, none.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    let finished = events
        .iter()
        .find(|e| e["type"] == "task_finished")
        .unwrap();
    assert_eq!(finished["status"], "killed", "{finished}");
    let (prompt, completion) = DEFAULT_USAGE;
    let end = events.last().unwrap();
    assert_eq!(
        end["childUsage"]["totalTokens"],
        prompt + completion,
        "{end}"
    );
    assert_eq!(
        end["usage"]["totalTokens"],
        5 * (prompt + completion),
        "four responses of the run and one of the specialist: {end}"
    );
    assert_gone_soon(&marker);
}

#[test]
fn a_specialist_gets_what_is_left_of_the_budget_and_stops_itself_there() {
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(glob().with_usage(500, 0))
                    .reply(glob().with_usage(500, 0))
                    .reply(Reply::text("never asked for")),
            )
            .reply(
                Reply::tool_call(
                    "Task",
                    json!({"name": "explorer", "prompt": "Look around."}),
                )
                .with_usage(200, 0),
            )
            .reply(Reply::text("the specialist ran out").with_usage(10, 0)),
    );
    let none = tempfile::tempdir().unwrap();
    let (code, events) = run(&server, none.path(), &["--max-tokens", "1000"]);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["name"] == "Task")
        .unwrap();
    assert_eq!(result["status"], "error", "{result}");
    let output = result["output"].as_str().unwrap();
    assert!(output.contains("past the budget of 800"), "{output}");
    let child_requests = server
        .requests()
        .iter()
        .filter(|r| r.raw_body.contains(CHILD))
        .count();
    assert_eq!(child_requests, 2);
    // The tree spent 1210: the parent's last response passed the budget too.
    assert_eq!(code, 4, "{events:?}");
    assert_eq!(error_of(&events)["code"], "token_budget");
    assert_eq!(events.last().unwrap()["childUsage"]["totalTokens"], 1000);
}

#[test]
fn prices_give_the_cost_and_the_cost_budget_stops_the_run() {
    let prices =
        config("[prices.\"fake-model\"]\ninput = 2.0\ncached_input = 0.5\noutput = 10.0\n");
    let server = FakeModel::start(
        Script::new()
            .reply(glob().with_usage(1000, 100).with_cached_tokens(600))
            .reply(Reply::text("done").with_usage(1000, 100)),
    );
    let (code, events) = run(&server, prices.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    // (400 × 2 + 600 × 0.5 + 100 × 10) + (1000 × 2 + 100 × 10), per million tokens.
    let cost = events.last().unwrap()["costUsd"].as_f64().unwrap();
    assert!((cost - 0.0051).abs() < 1e-9, "{cost}");

    let server = FakeModel::start(
        Script::new()
            .reply(glob().with_usage(1000, 100))
            .reply(glob().with_usage(1000, 100))
            .reply(Reply::text("never asked for")),
    );
    let (code, events) = run(&server, prices.path(), &["--max-cost-usd", "0.005"]);
    assert_eq!(code, 4, "{events:?}");
    assert_eq!(error_of(&events)["code"], "cost_budget");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_cost_budget_without_a_price_for_the_model_is_a_usage_error_naming_the_table() {
    let server = FakeModel::start(Script::new().reply(Reply::text("never asked for")));
    let other = config("[prices.\"other-model\"]\ninput = 1.0\noutput = 1.0\n");
    let (code, events) = run(&server, other.path(), &["--max-cost-usd", "1"]);
    assert_eq!(code, 2, "{events:?}");
    let message = error_of(&events)["message"].as_str().unwrap().to_string();
    assert!(message.contains("[prices.\"fake-model\"]"), "{message}");
    assert!(server.requests().is_empty());
}

#[test]
fn the_budget_can_come_from_the_config_file() {
    let budget = config("max_tokens = 100\n");
    let server = FakeModel::start(
        Script::new()
            .reply(glob().with_usage(90, 20))
            .reply(Reply::text("never asked for")),
    );
    let (code, events) = run(&server, budget.path(), &[]);
    assert_eq!(code, 4, "{events:?}");
    assert_eq!(error_of(&events)["code"], "token_budget");
}

#[test]
fn budgets_that_are_not_positive_are_usage_errors() {
    assert_flag_rejected("--max-tokens", &["0", "-5", "many"]);
    assert_flag_rejected("--max-cost-usd", &["0", "-1", "free"]);
}
