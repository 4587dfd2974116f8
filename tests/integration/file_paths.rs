//! Paths spelled as directories — `a.txt/`, `a.txt/.`, `newdir/` — and paths that go through a
//! file (`a.txt/..`), given to every tool that takes a path. A trailing `/` names a directory:
//! a file tool never takes `a.txt/` for `a.txt` (it once overwrote it), never creates a file
//! named `newdir` for `newdir/`, and a search tool searches a directory spelled so but refuses
//! a file spelled so. Through the real binary, against the fake model.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::runs::Home;
use crate::support::zero::{Wire, finished_stream, zero_std_with};

/// What every refusal of a path spelled as a directory says.
const NAMES_A_DIRECTORY: &str = "names a directory";

/// Runs `zero exec --auto medium` in `workspace` while the model makes `calls`, one per turn,
/// then answers; returns each call's tool result event (`status`, `output`), in order.
fn results(workspace: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let script = calls
        .iter()
        .fold(Script::new(), |script, (tool, args)| {
            script.reply(Reply::tool_call(tool, args.clone()))
        })
        .reply(Reply::text("Done."));
    let server = FakeModel::start(script);
    let home = Home::new();
    let events = finished_stream(
        assert_cmd::Command::from_std(zero_std_with(&server, Wire::OpenAi))
            .env("ZERO_HOME", home.path())
            .args(["exec", "--auto", "medium", "-o", "stream-json", "go"])
            .current_dir(workspace),
        0,
    );
    let results: Vec<Value> = events
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), calls.len());
    results
}

/// A workspace with the files `a.txt` and `b.txt` and the directory `sub` (holding `c.txt`).
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.path().join("b.txt"), "beta\n").unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    std::fs::write(ws.path().join("sub/c.txt"), "gamma\n").unwrap();
    ws
}

/// Asserts the workspace holds what [`workspace`] made, unchanged, and nothing else.
fn assert_untouched(ws: &Path) {
    let mut names: Vec<String> = std::fs::read_dir(ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "b.txt", "sub"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "beta\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/c.txt")).unwrap(),
        "gamma\n"
    );
}

/// Asserts `result` is an error result whose output contains `expected`.
fn assert_refused(result: &Value, expected: &str) {
    assert_eq!(result["status"], "error", "{result}");
    let output = result["output"].as_str().unwrap();
    assert!(output.contains(expected), "{output}");
}

#[test]
fn file_tools_refuse_a_file_or_a_new_name_spelled_as_a_directory() {
    let ws = workspace();
    let patch = |body: &str| json!({"patch": format!("*** Begin Patch\n{body}*** End Patch\n")});
    let calls = [
        ("write_file", json!({"path": "a.txt/", "content": "lost"})),
        ("write_file", json!({"path": "a.txt/.", "content": "lost"})),
        ("write_file", json!({"path": "newdir/", "content": "lost"})),
        ("write_file", json!({"path": "sub/", "content": "lost"})),
        ("read_file", json!({"path": "a.txt/"})),
        (
            "edit_file",
            json!({"path": "b.txt/", "old_string": "beta", "new_string": "lost"}),
        ),
        (
            "apply_patch",
            patch("*** Update File: b.txt/\n@@\n-beta\n+lost\n"),
        ),
        ("apply_patch", patch("*** Add File: new.txt/\n+lost\n")),
        ("apply_patch", patch("*** Delete File: a.txt/\n")),
        (
            "apply_patch",
            patch("*** Update File: b.txt\n*** Move to: moved.txt/\n@@\n-beta\n+lost\n"),
        ),
    ];
    let results = results(ws.path(), &calls);
    for (result, (tool, args)) in results.iter().zip(&calls) {
        let expected = if args["path"] == "sub/" {
            "is a directory, not a regular file"
        } else {
            NAMES_A_DIRECTORY
        };
        assert_eq!(result["status"], "error", "{tool} {args}: {result}");
        let output = result["output"].as_str().unwrap();
        assert!(output.contains(expected), "{tool} {args}: {output}");
    }
    assert!(
        results[2]["output"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{}",
        results[2]
    );
    assert_untouched(ws.path());
}

#[test]
fn a_path_through_a_file_is_refused_by_every_tool() {
    let ws = workspace();
    let calls = [
        ("read_file", json!({"path": "a.txt/../b.txt"})),
        (
            "write_file",
            json!({"path": "a.txt/new.txt", "content": "x"}),
        ),
        ("write_file", json!({"path": "a.txt/..", "content": "x"})),
        ("list_directory", json!({"path": "a.txt/.."})),
    ];
    for result in results(ws.path(), &calls) {
        assert_refused(&result, "goes through");
    }
    assert_untouched(ws.path());
}

#[test]
fn search_tools_take_a_directory_spelled_as_one_but_not_a_file() {
    let ws = workspace();
    let calls = [
        ("grep", json!({"pattern": "gamma", "path": "sub/"})),
        ("glob", json!({"pattern": "*.txt", "path": "sub/"})),
        ("list_directory", json!({"path": "sub/."})),
        ("grep", json!({"pattern": "alpha", "path": "a.txt/"})),
        ("glob", json!({"pattern": "*", "path": "a.txt/"})),
        ("list_directory", json!({"path": "a.txt/"})),
    ];
    let results = results(ws.path(), &calls);
    for found in &results[..3] {
        assert_eq!(found["status"], "ok", "{found}");
        assert!(
            found["output"].as_str().unwrap().contains("c.txt")
                || found["output"].as_str().unwrap().contains("gamma"),
            "{found}"
        );
    }
    for refused in &results[3..] {
        assert_refused(refused, NAMES_A_DIRECTORY);
    }
    assert_untouched(ws.path());
}
