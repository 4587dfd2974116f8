//! File tools on paths that are not regular files: a FIFO, a symlink to one, a Unix socket,
//! `/dev/zero`, `/dev/urandom` and `/dev/null`. Each call must come back at once as an error
//! result naming the type — never block on a FIFO with no writer, never read a device without
//! end, never replace one — and the run must go on to the model's answer. Through the real binary, against the fake model.
//!
//! Every run has a deadline: a tool that blocks makes the run overrun it, and the run is then
//! killed and the test fails on its exit code. No test here ever opens the FIFO itself.

use std::os::unix::net::UnixListener;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::wait::DEADLINE;
use crate::support::zero::{Wire, assert_stream_contract, events, zero_std_with};

/// What a FIFO refusal says after the path.
const FIFO: &str = "is a FIFO (named pipe), not a regular file; file tools read and write \
                    regular files only";

/// Runs `zero exec --auto <auto>` in `workspace` while the model makes `calls`, one per turn,
/// then answers. Asserts the run ended with exit code 0 and a complete stream, and returns the
/// tool result zero sent back for each call, in order.
fn tool_results(workspace: &Path, auto: &str, calls: Vec<(&str, Value)>) -> Vec<String> {
    let turns = calls.len();
    let script = calls
        .into_iter()
        .fold(Script::new(), |script, (tool, args)| {
            script.reply(Reply::tool_call(tool, args))
        })
        .reply(Reply::text("Done."));
    let server = FakeModel::start(script);
    let output = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
        .args(["exec", "--auto", auto, "-o", "stream-json", "go"])
        .current_dir(workspace)
        .timeout(DEADLINE)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "the run did not end by itself within {DEADLINE:?} ({}); stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert_stream_contract(&events(&output.stdout), 0);
    let requests = server.requests();
    assert_eq!(requests.len(), turns + 1);
    // Request n+1 carries the result of the call made in reply to request n, as its last message.
    requests[1..]
        .iter()
        .map(|request| {
            let last = request.body["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(last["role"], "tool", "{last}");
            last["content"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// A workspace holding a FIFO named `pipe` (and no process that would ever open it).
fn workspace_with_fifo() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    nix::unistd::mkfifo(&ws.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    ws
}

/// Asserts `pipe` in `ws` is still the FIFO it was: refused, not replaced.
fn assert_still_a_fifo(ws: &Path) {
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(ws.join("pipe"))
        .unwrap()
        .file_type();
    assert!(kind.is_fifo(), "`pipe` is now {kind:?}");
}

#[test]
fn read_file_on_a_fifo_is_refused_at_auto_low() {
    let ws = workspace_with_fifo();
    let results = tool_results(
        ws.path(),
        "low",
        vec![("read_file", json!({"path": "pipe"}))],
    );
    assert_eq!(results, [format!("Error: `pipe` {FIFO}")]);
}

#[test]
fn read_file_through_a_symlink_to_a_fifo_is_refused() {
    let ws = workspace_with_fifo();
    std::os::unix::fs::symlink("pipe", ws.path().join("link")).unwrap();
    let results = tool_results(
        ws.path(),
        "low",
        vec![("read_file", json!({"path": "link"}))],
    );
    assert_eq!(results, [format!("Error: `link` {FIFO}")]);
}

#[test]
fn grep_on_a_fifo_named_directly_says_what_it_is() {
    let ws = workspace_with_fifo();
    let results = tool_results(
        ws.path(),
        "low",
        vec![("grep", json!({"pattern": "x", "path": "pipe"}))],
    );
    assert_eq!(results, [format!("Error: `pipe` {FIFO}")]);
}

#[test]
fn edit_file_on_a_fifo_is_refused() {
    let ws = workspace_with_fifo();
    let results = tool_results(
        ws.path(),
        "medium",
        vec![(
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        )],
    );
    assert_eq!(results, [format!("Error: `pipe` {FIFO}")]);
    assert_still_a_fifo(ws.path());
}

#[test]
fn apply_patch_updating_or_deleting_a_fifo_is_refused_and_changes_nothing() {
    let ws = workspace_with_fifo();
    let update = "*** Begin Patch\n*** Add File: new.txt\n+hello\n\
                  *** Update File: pipe\n@@\n-a\n+b\n*** End Patch";
    let delete = "*** Begin Patch\n*** Delete File: pipe\n*** End Patch";
    let results = tool_results(
        ws.path(),
        "medium",
        vec![
            ("apply_patch", json!({"patch": update})),
            ("apply_patch", json!({"patch": delete})),
        ],
    );
    let refused = format!("Error: `pipe` {FIFO}. Nothing was changed.");
    assert_eq!(results, [refused.clone(), refused]);
    assert_still_a_fifo(ws.path());
    assert!(
        !ws.path().join("new.txt").exists(),
        "the patch half-applied"
    );
}

#[test]
fn write_file_onto_a_fifo_is_refused_and_leaves_it_a_fifo() {
    let ws = workspace_with_fifo();
    let results = tool_results(
        ws.path(),
        "medium",
        vec![("write_file", json!({"path": "pipe", "content": "data"}))],
    );
    assert_eq!(results, [format!("Error: `pipe` {FIFO}")]);
    assert_still_a_fifo(ws.path());
}

#[test]
fn read_file_on_a_unix_socket_is_refused() {
    let ws = tempfile::tempdir().unwrap();
    // Listening for the whole run: a live socket, not a stale file.
    let _listener = UnixListener::bind(ws.path().join("sock")).unwrap();
    let results = tool_results(
        ws.path(),
        "low",
        vec![("read_file", json!({"path": "sock"}))],
    );
    assert_eq!(
        results,
        [
            "Error: `sock` is a socket, not a regular file; file tools read and write regular \
          files only"
        ]
    );
}

#[test]
fn devices_are_refused_as_character_devices_at_auto_high() {
    let ws = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/zero", ws.path().join("zeros")).unwrap();
    let patch = "*** Begin Patch\n*** Update File: /dev/zero\n@@\n-a\n+b\n*** End Patch";
    let results = tool_results(
        ws.path(),
        "high",
        vec![
            ("read_file", json!({"path": "/dev/zero"})),
            ("read_file", json!({"path": "/dev/urandom"})),
            ("read_file", json!({"path": "zeros"})),
            (
                "edit_file",
                json!({"path": "/dev/zero", "old_string": "a", "new_string": "b"}),
            ),
            ("apply_patch", json!({"patch": patch})),
            ("write_file", json!({"path": "/dev/null", "content": "x"})),
        ],
    );
    let refused = |shown: &str| {
        format!(
            "Error: `{shown}` is a character device, not a regular file; file tools read and \
             write regular files only"
        )
    };
    assert_eq!(
        results,
        [
            refused("/dev/zero"),
            refused("/dev/urandom"),
            refused("zeros"),
            refused("/dev/zero"),
            refused("/dev/zero") + ". Nothing was changed.",
            refused("/dev/null"),
        ]
    );
}

#[test]
fn a_fifo_named_like_a_guidance_file_does_not_hold_up_the_run() {
    let ws = tempfile::tempdir().unwrap();
    nix::unistd::mkfifo(&ws.path().join("AGENTS.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::write(ws.path().join("ZERO.md"), "Always run the tests.").unwrap();
    let server = FakeModel::start(Script::new().reply(Reply::text("Done.")));
    let output = assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
        .args(["exec", "-o", "stream-json", "go"])
        .current_dir(ws.path())
        .timeout(DEADLINE)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", output.status);
    let system = &server.requests()[0].body["messages"][0]["content"];
    let system = system.as_str().unwrap();
    assert!(system.contains("Always run the tests."), "{system}");
    assert!(!system.contains("AGENTS.md"), "{system}");
}
