//! Small models on the user's own server (issues 38, 45): a refusal as too long in whatever
//! words the server (or a gateway in front of it) uses is compacted and retried, with the window
//! it names learned; a response caught in a loop is cut and the run goes on, until three in a
//! row end it; a tool call's payload is never taken for a loop. Through the real binary against
//! the fake model.

use std::time::Duration;

use serde_json::{Value, json};

use crate::compaction::ask_about_the_notes as run;
use crate::support::fake_model::{FakeModel, Reply, Route, Script};
use crate::support::zero::Wire;

/// What the summary request says (zero's instructions to the model).
const SUMMARY_REQUEST: &str = "Summarize the conversation so far";

/// llama.cpp's refusal of a request longer than its context (`exceed_context_size_error`).
const LLAMA_CPP: &str = "request (42888 tokens) exceeds the available context size (16384 \
     tokens), try increasing it";

/// The same refusal through a LiteLLM gateway.
const LITELLM: &str = "litellm.ContextWindowExceededError: litellm.BadRequestError: \
     OpenAIException - request (42888 tokens) exceeds the available context size (16384 \
     tokens), try increasing it. Received Model Group=qwen-coder";

/// LM Studio's refusal of a request longer than the context it loaded the model with: a bare
/// string under `error`, in no wire's shape.
const LM_STUDIO: &str = r#"{"error":"Trying to keep the first 5211 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#;

/// The sentence a looping model repeats (the issue's degenerate response).
const SENTENCE: &str = "I will now update the function to handle the empty input case. ";

/// The bound of a loop's cut (`provider::repetition`): 8 KiB filled, checked every KiB.
const LOOP_BOUND: usize = 9 * 1024;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n".repeat(200)).unwrap();
    std::fs::write(dir.path().join("b.txt"), "bravo\n").unwrap();
    dir
}

fn read(path: &str) -> Reply {
    Reply::tool_call("read_file", json!({"path": path}))
}

fn summary_route() -> Route {
    Route::body_contains(SUMMARY_REQUEST).reply(Reply::text("SUMMARY: a.txt is alphas."))
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_refusal_in_llama_cpps_litellms_or_lm_studios_words_compacts_retries_and_learns_the_window() {
    for (refusal, window) in [
        (Reply::error(400, LLAMA_CPP), 16384),
        (Reply::error(400, LITELLM), 16384),
        (Reply::error_body(400, LM_STUDIO), 4096),
    ] {
        let workspace = workspace();
        let server = FakeModel::start(
            Script::new()
                .route(summary_route())
                .reply(read("a.txt"))
                .reply(read("b.txt"))
                .reply(refusal)
                .reply(Reply::text("The notes are alphas.")),
        );
        let (code, events) = run(&server, Wire::OpenAi, workspace.path(), &[]);
        assert_eq!(code, 0, "{window}: {events:?}");
        let compactions = of_type(&events, "compaction");
        assert_eq!(compactions.len(), 1, "{events:?}");
        assert_eq!(compactions[0]["reason"], "context_length");
        assert_eq!(
            server.requests().len(),
            5,
            "the summary, then the turn again"
        );
        let run_end = events.last().unwrap();
        assert_eq!(
            run_end["contextWindow"],
            json!({"tokens": window, "source": "server"}),
            "{run_end}"
        );
    }
}

#[test]
fn a_second_refusal_after_compacting_exits_3_naming_the_window() {
    let workspace = workspace();
    let server = FakeModel::start(
        Script::new()
            .route(summary_route())
            .reply(read("a.txt"))
            .reply(read("b.txt"))
            .reply(Reply::error(400, LITELLM))
            .reply(Reply::error(400, LLAMA_CPP))
            .reply(Reply::text("never asked for")),
    );
    let (code, events) = run(&server, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 3, "{events:?}");
    let error = of_type(&events, "error")[0];
    assert_eq!(error["code"], "context_length");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("context window of 16384 tokens"),
        "{message}"
    );
    assert_eq!(server.requests().len(), 5);
    assert_eq!(events.last().unwrap()["contextWindow"]["tokens"], 16384);
}

#[test]
fn a_refusal_after_one_turn_compacts_that_turn_and_the_run_goes_on() {
    let workspace = workspace();
    let server = FakeModel::start(
        Script::new()
            .route(summary_route())
            .reply(read("a.txt"))
            .reply(Reply::error(400, LLAMA_CPP))
            .reply(Reply::text("The notes are alphas.")),
    );
    let (code, events) = run(&server, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    let compactions = of_type(&events, "compaction");
    assert_eq!(compactions.len(), 1, "{events:?}");
    assert_eq!(compactions[0]["messagesSummarized"], 2, "{events:?}");
    assert_eq!(
        server.requests().len(),
        4,
        "the turn, the refusal, the summary, the turn again"
    );
}

#[test]
fn a_prompt_that_alone_is_too_long_says_there_is_nothing_to_compact() {
    let workspace = workspace();
    let server = FakeModel::start(
        Script::new()
            .route(summary_route())
            .reply(Reply::error(400, LLAMA_CPP))
            .reply(Reply::text("never asked for")),
    );
    let (code, events) = run(&server, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 3, "{events:?}");
    assert_eq!(server.requests().len(), 1, "no summary asked of nothing");
    let error = of_type(&events, "error")[0];
    assert_eq!(error["code"], "context_length");
    let message = error["message"].as_str().unwrap();
    assert!(!message.contains("even compacted"), "{message}");
    assert!(
        message
            .contains("the prompt alone does not fit the model's context window of 16384 tokens")
            && message.contains("nothing older to compact"),
        "{message}"
    );
}

#[test]
fn a_response_that_repeats_one_sentence_is_cut_within_the_bound_and_the_run_goes_on() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let workspace = workspace();
        let server = FakeModel::start(
            Script::new()
                .reply(looping_reply())
                .reply(Reply::text("The notes are alphas.")),
        );
        let (code, events) = run(&server, wire, workspace.path(), &[]);
        assert_eq!(code, 0, "{events:?}");
        let shown: usize = of_type(&events, "text")
            .iter()
            .map(|e| e["delta"].as_str().unwrap().len())
            .sum();
        let answer_len = "The notes are alphas.".len();
        assert!(
            shown <= LOOP_BOUND + 64 + answer_len,
            "{shown} bytes shown before the cut"
        );
        let warnings = of_type(&events, "warning");
        assert!(
            warnings.iter().any(|w| w["message"]
                .as_str()
                .unwrap()
                .contains(&format!("repeated the same {} bytes", SENTENCE.len()))),
            "{warnings:?}"
        );
        // The next request happened, with one copy of the sentence, not the loop.
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{events:?}");
        let sent = requests[1]
            .raw_body
            .matches("handle the empty input case")
            .count();
        assert!(sent <= 2, "{sent} copies sent back");
        assert_eq!(
            of_type(&events, "final")[0]["text"],
            "The notes are alphas."
        );
    }
}

/// A reply that repeats [`SENTENCE`] for 640 KB at a millisecond a piece: minutes, were it
/// not cut.
fn looping_reply() -> Reply {
    Reply::text(&format!("Let me look.\n{}", SENTENCE.repeat(10_000)))
        .in_pieces(64)
        .event_gap(Duration::from_millis(1))
}

#[test]
fn a_model_that_loops_again_and_again_is_stopped_after_three_cuts_in_a_row_exit_4() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let workspace = workspace();
        let mut script = Script::new();
        for _ in 0..10 {
            script = script.reply(looping_reply());
        }
        let server = FakeModel::start(script);
        let (code, events) = run(&server, wire, workspace.path(), &[]);
        assert_eq!(code, 4, "{events:?}");
        assert_eq!(
            server.requests().len(),
            3,
            "three loops, then no more requests"
        );
        let error = of_type(&events, "error")[0];
        assert_eq!(error["code"], "looping", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("loop") && message.contains("3 responses in a row"),
            "{message}"
        );
        assert!(
            message.contains(&format!("{} bytes", SENTENCE.len())),
            "{message}"
        );
        assert_eq!(events.last().unwrap()["status"], "incomplete");
        assert!(of_type(&events, "final").is_empty(), "{events:?}");
    }
}

#[test]
fn a_loop_cut_between_good_turns_starts_the_count_again() {
    let workspace = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(looping_reply())
            .reply(looping_reply())
            .reply(read("b.txt"))
            .reply(looping_reply())
            .reply(looping_reply())
            .reply(Reply::text("The notes are alphas.")),
    );
    let (code, events) = run(&server, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(server.requests().len(), 6);
}

#[test]
fn a_file_of_one_repeated_character_or_identical_rows_is_written_whole_not_cut() {
    let zeros = "0".repeat(12_000);
    let rows = "2026-01-01,ok,42\n".repeat(2_000);
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let workspace = workspace();
        let server = FakeModel::start(
            Script::new()
                .reply(
                    Reply::tool_call("write_file", json!({"path": "zeros.txt", "content": zeros}))
                        .event_gap(Duration::ZERO),
                )
                .reply(
                    Reply::tool_call("write_file", json!({"path": "rows.csv", "content": rows}))
                        .event_gap(Duration::ZERO),
                )
                .reply(Reply::text("Both written.")),
        );
        let (code, events) = run(&server, wire, workspace.path(), &["--auto", "medium"]);
        assert_eq!(code, 0, "{events:?}");
        let written = |name: &str| std::fs::read_to_string(workspace.path().join(name)).unwrap();
        assert_eq!(written("zeros.txt"), zeros);
        assert_eq!(written("rows.csv"), rows);
        assert!(of_type(&events, "warning").is_empty(), "{events:?}");
        for result in of_type(&events, "tool_result") {
            assert_eq!(result["status"], "ok", "{result}");
        }
    }
}

/// What the compact system prompt says and the full one does not.
const COMPACT_MARK: &str = "Files in the workspace:";

/// The system prompt and the tool names of `request` (OpenAI's wire).
fn prompt_and_tools(
    request: &crate::support::fake_model::RecordedRequest,
) -> (String, Vec<String>) {
    let system = request.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let tools = request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (system, tools)
}

fn run_start(events: &[Value]) -> &Value {
    of_type(events, "run_start")[0]
}

#[test]
fn a_llama_cpp_server_with_a_16k_window_gets_the_compact_prompt_unless_the_flag_says_full() {
    let llama = || {
        Script::new()
            .props(json!({
                "build_info": "b6500-abcdef0",
                "default_generation_settings": {"n_ctx": 16384},
            }))
            .reply(Reply::text("It holds alphas."))
    };
    let workspace = workspace();

    let server = FakeModel::start(llama());
    let (code, events) = run(&server, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(
        run_start(&events)["promptStyle"],
        json!({"style": "compact", "reason": "llama_cpp"})
    );
    let (system, tools) = prompt_and_tools(&server.requests()[0]);
    assert!(system.contains(COMPACT_MARK), "{system}");
    assert!(tools.iter().any(|tool| tool == "read_file"), "{tools:?}");
    for left_out in ["grep", "apply_patch", "update_plan", "Task"] {
        assert!(!tools.iter().any(|tool| tool == left_out), "{tools:?}");
    }

    let server = FakeModel::start(llama());
    let (code, events) = run(
        &server,
        Wire::OpenAi,
        workspace.path(),
        &["--prompt-style", "full"],
    );
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(
        run_start(&events)["promptStyle"],
        json!({"style": "full", "reason": "flag"})
    );
    let (system, tools) = prompt_and_tools(&server.requests()[0]);
    assert!(!system.contains(COMPACT_MARK), "{system}");
    assert!(tools.iter().any(|tool| tool == "grep"), "{tools:?}");
}

#[test]
fn a_server_reporting_a_window_under_32k_gets_the_compact_prompt_and_others_the_full_one() {
    let workspace = workspace();
    let vllm = FakeModel::start(
        Script::new()
            .models(json!({"data": [{"id": "fake-model", "max_model_len": 8192}]}))
            .reply(Reply::text("It holds alphas.")),
    );
    let (code, events) = run(&vllm, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(
        run_start(&events)["promptStyle"],
        json!({"style": "compact", "reason": "small_window"})
    );

    let silent = FakeModel::start(Script::new().reply(Reply::text("It holds alphas.")));
    let (code, events) = run(&silent, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(
        run_start(&events)["promptStyle"],
        json!({"style": "full", "reason": "default"})
    );
    let (system, _) = prompt_and_tools(&silent.requests()[0]);
    assert!(!system.contains(COMPACT_MARK), "{system}");
}

#[test]
fn a_litellm_gateways_model_info_gives_the_window_and_the_compact_prompt() {
    let workspace = workspace();
    let gateway = FakeModel::start(
        Script::new()
            .model_info(json!({"data": [
                {"model_name": "fake-model", "litellm_params": {"model": "openai/qwen"},
                 "model_info": {"max_input_tokens": 16384}},
            ]}))
            .reply(read("a.txt"))
            .reply(Reply::text("It holds alphas.")),
    );
    let (code, events) = run(&gateway, Wire::OpenAi, workspace.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(
        run_start(&events)["promptStyle"],
        json!({"style": "compact", "reason": "small_window"})
    );
    assert_eq!(
        events.last().unwrap()["contextWindow"],
        json!({"tokens": 16384, "source": "server"})
    );
}
