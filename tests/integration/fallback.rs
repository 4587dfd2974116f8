//! `--fallback-model` through the binary, on both wires: an overloaded model hands the run to
//! the next one (a `model_switch`, the cost of each model at its own price), a refused request
//! does not, an exhausted chain names every model, and a specialist gets the chain.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, Reply, Route, Script};
use crate::support::zero::{Wire, finished_stream, zero_std_with};

/// How many attempts each model's request gets in these tests.
const ATTEMPTS: usize = 3;

/// Serves the requests naming `model`.
fn model(name: &str) -> Route {
    Route::body_contains(&format!("\"model\":\"{name}\""))
}

/// `route` answering `status` to every attempt of one request.
fn failing(mut route: Route, status: u16, message: &str) -> Route {
    for _ in 0..ATTEMPTS {
        route = route.reply(Reply::error(status, message));
    }
    route
}

/// A config directory whose config.toml prices `big` and `small`.
fn priced() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("zero")).unwrap();
    std::fs::write(
        dir.path().join("zero/config.toml"),
        "[prices.big]\ninput = 1000.0\noutput = 2000.0\n\n\
         [prices.small]\ninput = 1.0\noutput = 1.0\n",
    )
    .unwrap();
    dir
}

/// `zero exec -o stream-json` on `wire` with the model `big` and the config directory
/// `config`, flags and prompt still to come.
fn command(server: &FakeModel, wire: Wire, config: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(server, wire));
    cmd.env("ZERO_MODEL", "big")
        .env("ZERO_MAX_ATTEMPTS", ATTEMPTS.to_string())
        .env("XDG_CONFIG_HOME", config)
        .args(["exec", "-o", "stream-json"]);
    cmd
}

/// [`command`] with [`priced`] models and `flags`; its events once it exited with `code`.
fn run(server: &FakeModel, wire: Wire, flags: &[&str], code: i32) -> Vec<Value> {
    let config = priced();
    let mut cmd = command(server, wire, config.path());
    cmd.args(flags).arg("look around");
    finished_stream(&mut cmd, code)
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

/// How many model requests named `name`.
fn asked(server: &FakeModel, name: &str) -> usize {
    let needle = format!("\"model\":\"{name}\"");
    server
        .requests()
        .iter()
        .filter(|request| request.raw_body.contains(&needle))
        .count()
}

#[test]
fn an_overloaded_model_hands_the_run_to_the_next_and_each_is_priced_at_its_own() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let big = model("big").reply(Reply::tool_call("list_directory", json!({"path": "."})));
        let server = FakeModel::start(
            Script::new()
                .route(failing(big, 529, "Overloaded"))
                .route(model("small").reply(Reply::text("done"))),
        );
        let events = run(&server, wire, &["--fallback-model", "small"], 0);
        let switches = of_type(&events, "model_switch");
        assert_eq!(switches.len(), 1, "{wire:?}: {events:?}");
        assert_eq!(switches[0]["from"], "big");
        assert_eq!(switches[0]["to"], "small");
        assert_eq!(switches[0]["code"], "unavailable");
        assert!(
            switches[0]["reason"].as_str().unwrap().contains("529"),
            "{}",
            switches[0]
        );
        assert_eq!(asked(&server, "big"), 1 + ATTEMPTS, "{wire:?}");
        assert_eq!(asked(&server, "small"), 1, "{wire:?}");
        let run_end = events.last().unwrap();
        assert_eq!(run_end["model"], "small", "{wire:?}: {run_end}");
        // 10 prompt and 5 completion tokens each: big's at its price, small's at its own.
        let big_cost = (10.0 * 1000.0 + 5.0 * 2000.0) / 1e6;
        let small_cost = (10.0 + 5.0) / 1e6;
        let cost = run_end["costUsd"].as_f64().unwrap();
        assert!(
            (cost - (big_cost + small_cost)).abs() < 1e-9,
            "{wire:?}: {cost}"
        );
    }
}

#[test]
fn an_unknown_model_is_a_reason_to_switch_and_the_switch_holds() {
    let server = FakeModel::start(
        Script::new()
            .route(model("big").reply(Reply::error(404, "The model `big` does not exist")))
            .route(
                model("small")
                    .reply(Reply::tool_call("list_directory", json!({"path": "."})))
                    .reply(Reply::text("done")),
            ),
    );
    let events = run(&server, Wire::OpenAi, &["--fallback-model", "small"], 0);
    let switches = of_type(&events, "model_switch");
    assert_eq!(switches.len(), 1, "{events:?}");
    assert_eq!(switches[0]["code"], "bad_request");
    // The second request goes straight to the model that answered the first.
    assert_eq!(asked(&server, "big"), 1);
    assert_eq!(asked(&server, "small"), 2);
}

#[test]
fn a_refused_request_is_not_a_reason_to_switch() {
    let server = FakeModel::start(
        Script::new()
            .route(model("big").reply(Reply::error(400, "messages: roles must alternate")))
            .route(model("small").reply(Reply::text("done"))),
    );
    let events = run(&server, Wire::Anthropic, &["--fallback-model", "small"], 3);
    assert!(of_type(&events, "model_switch").is_empty(), "{events:?}");
    assert_eq!(asked(&server, "small"), 0);
    assert_eq!(of_type(&events, "error")[0]["code"], "bad_request");
}

#[test]
fn an_exhausted_chain_exits_3_naming_every_model_tried() {
    let server = FakeModel::start(
        Script::new()
            .route(failing(model("big"), 529, "Overloaded"))
            .route(failing(model("mid"), 429, "Slow down"))
            .route(failing(model("small"), 503, "Down for maintenance")),
    );
    let flags = ["--fallback-model", "mid", "--fallback-model", "small"];
    let events = run(&server, Wire::OpenAi, &flags, 3);
    let switches: Vec<(&str, &str)> = of_type(&events, "model_switch")
        .iter()
        .map(|event| {
            (
                event["from"].as_str().unwrap(),
                event["to"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(switches, [("big", "mid"), ("mid", "small")]);
    let error = of_type(&events, "error")[0];
    let message = error["message"].as_str().unwrap();
    for (name, why) in [
        ("big", "Overloaded"),
        ("mid", "Slow down"),
        ("small", "Down for maintenance"),
    ] {
        assert!(message.contains(&format!("{name}: ")), "{message}");
        assert!(message.contains(why), "{message}");
    }
    assert_eq!(error["code"], "unavailable");
}

#[test]
fn fallback_models_come_from_config_toml_too() {
    let server = FakeModel::start(
        Script::new()
            .route(failing(model("big"), 503, "Down"))
            .route(model("small").reply(Reply::text("done"))),
    );
    let config = priced();
    let path = config.path().join("zero/config.toml");
    let prices = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("fallback_models = [\"small\"]\n{prices}")).unwrap();
    let events = finished_stream(command(&server, Wire::OpenAi, config.path()).arg("hi"), 0);
    assert_eq!(events.last().unwrap()["model"], "small");
}

#[test]
fn a_specialist_gets_the_chain() {
    let server = FakeModel::start(
        Script::new()
            // Only the specialist's requests fail on `big`; only they reach `small`.
            .route(model("small").reply(Reply::text("the child is done")))
            .route(failing(Route::body_contains(CHILD), 529, "Overloaded"))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Look around."}),
            ))
            .reply(Reply::text("done")),
    );
    let events = run(
        &server,
        Wire::OpenAi,
        &["--auto", "medium", "--fallback-model", "small"],
        0,
    );
    let child_asked_small = server.requests().iter().any(|request| {
        request.raw_body.contains(CHILD) && request.raw_body.contains("\"model\":\"small\"")
    });
    assert!(child_asked_small, "{events:?}");
    // The parent never switched.
    assert!(of_type(&events, "model_switch").is_empty());
    assert_eq!(events.last().unwrap()["model"], "big");
}

#[test]
fn provider_colon_model_reaches_the_other_wire_through_its_own_variables() {
    let server = FakeModel::start(
        Script::new()
            .route(failing(model("big"), 503, "Down"))
            .route(model("small").reply(Reply::text("done"))),
    );
    let config = priced();
    let mut cmd = command(&server, Wire::OpenAi, config.path());
    cmd.env("ANTHROPIC_BASE_URL", server.base_url_anthropic())
        .args(["--fallback-model", "anthropic:small", "hi"]);
    let events = finished_stream(&mut cmd, 0);
    assert_eq!(events.last().unwrap()["model"], "small");
    let answered = server
        .requests()
        .into_iter()
        .find(|request| request.raw_body.contains("\"model\":\"small\""))
        .unwrap();
    assert!(answered.path.ends_with("/messages"), "{}", answered.path);
}

#[test]
fn a_fallback_of_another_wire_without_its_key_is_refused_before_the_run() {
    let server = FakeModel::start(Script::new());
    let output = zero_std_with(&server, Wire::OpenAi)
        .args([
            "exec",
            "--fallback-model",
            "anthropic:claude-haiku-4-5",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    assert!(server.requests().is_empty());
}
