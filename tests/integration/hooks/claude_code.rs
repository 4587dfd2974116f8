//! Claude Code compatibility of hooks, measured: the same settings.json hooks Claude Code
//! 2.1.332 ran against a scripted endpoint (`fixtures/claude-code-hooks`: what each of its
//! hooks read on stdin), run by zero around the same calls, each input dumped by the hook and
//! compared with Claude Code's field by field.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Setup, bash, of_type, writes_marker};
use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::tool_outputs;

/// The directory of the measured inputs and of the endpoint and settings that measured them.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/fixtures/claude-code-hooks")
}

/// Where Claude Code's measured run had its workspace.
const MEASURED_WORKSPACE: &str = "/tmp/ccf/ws";

/// What Claude Code gives that zero does not (docs/HOOKS.md says why).
const NOT_GIVEN: [&str; 5] = [
    "transcript_path",
    "prompt_id",
    "effort",
    "background_tasks",
    "session_crons",
];

impl Setup {
    /// An executable script that appends its stdin (one JSON input) to `dump` (in the
    /// workspace: at `--auto medium` a hook writes nothing else); its path.
    fn dumper(&self, dump: &Path) -> PathBuf {
        self.script(
            "dump.sh",
            &format!(
                "#!/bin/sh\ncat >> '{}'\necho >> '{}'\n",
                dump.display(),
                dump.display()
            ),
        )
    }

    /// A settings.json whose `hooks` are `hooks` (Claude Code's shape); its path.
    fn settings(&self, hooks: Value) -> PathBuf {
        self.file("settings.json", &json!({ "hooks": hooks }).to_string())
    }

    /// The workspace, as the hooks are told it.
    fn root(&self) -> PathBuf {
        self.workspace.path().canonicalize().unwrap()
    }
}

/// Each JSON object of `text`, in order.
fn objects(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect()
}

/// Each input the hooks dumped to `dump`.
fn dumped(dump: &Path) -> Vec<Value> {
    objects(&std::fs::read_to_string(dump).unwrap_or_default())
}

/// A matcher group running `command` for `matcher`.
fn group(matcher: &str, command: &Path) -> Value {
    json!([{"matcher": matcher, "hooks": [
        {"type": "command", "command": command.display().to_string(), "timeout": 10}
    ]}])
}

/// The calls Claude Code's measured run made that ran hooks, as zero's model makes them.
fn measured_calls(root: &Path) -> Script {
    let file = root.join("a.txt").display().to_string();
    let missing = root.join("missing.txt").display().to_string();
    [
        (
            "write_file",
            json!({"path": file, "content": "one\ntwo\nthree\n"}),
        ),
        (
            "edit_file",
            json!({"path": file, "old_string": "two", "new_string": "TWO"}),
        ),
        (
            "write_file",
            json!({"path": file, "content": "one\nTWO\nfour\n"}),
        ),
        ("read_file", json!({"path": file})),
        ("bash", json!({"command": "echo out; echo err >&2"})),
        ("bash", json!({"command": "echo bad; exit 3"})),
        ("read_file", json!({"path": missing})),
    ]
    .into_iter()
    .fold(Script::new(), |script, (tool, arguments)| {
        script.reply(Reply::tool_call(tool, arguments))
    })
    .reply(Reply::text("All done: the final answer."))
}

/// The moment an input is for: its Claude Code event and tool names.
fn moment(input: &Value) -> (String, String) {
    let text = |key: &str| input[key].as_str().unwrap_or_default().to_string();
    (text("hook_event_name"), text("tool_name"))
}

/// zero's input for a hook compared with Claude Code's for the same moment: every key Claude
/// Code gives, zero gives (but [`NOT_GIVEN`]), of the same JSON type; the facts of the call and
/// its result equal.
fn assert_same_shape(zero: &Value, claude: &Value) {
    let at = moment(claude);
    for (key, value) in claude.as_object().unwrap() {
        if NOT_GIVEN.contains(&key.as_str()) {
            continue;
        }
        let ours = &zero[key];
        assert_eq!(
            std::mem::discriminant(ours),
            std::mem::discriminant(value),
            "{at:?}: `{key}` is {ours} in zero, {value} in Claude Code"
        );
    }
    for key in [
        "cwd",
        "source",
        "stop_hook_active",
        "last_assistant_message",
        "tool_response",
    ] {
        assert_eq!(zero.get(key), claude.get(key), "{at:?}: `{key}`");
    }
    // Claude Code's model wrote a `description` for each command; zero's has none.
    let mut input = claude["tool_input"].clone();
    if let Value::Object(fields) = &mut input {
        fields.remove("description");
    }
    if !input.is_null() {
        assert_eq!(zero["tool_input"], input, "{at:?}: `tool_input`");
    }
}

#[test]
fn hook_inputs_have_the_shape_claude_code_2_1_332_gives_on_the_same_calls() {
    let setup = Setup::new();
    let root = setup.root();
    let dump = setup.in_workspace(".inputs.ndjson");
    let dumper = setup.dumper(&dump);
    let settings = setup.settings(json!({
        "SessionStart": group("", &dumper),
        "PreToolUse": group("*", &dumper),
        "PostToolUse": group("*", &dumper),
        "Stop": [{"hooks": [{"type": "command", "command": dumper.display().to_string()}]}],
    }));
    let server = FakeModel::start(measured_calls(&root));
    setup.run(&server, &["--hooks", settings.to_str().unwrap()], 0);

    let measured = std::fs::read_to_string(fixtures().join("inputs-2.1.332.ndjson")).unwrap();
    let measured = objects(&measured.replace(MEASURED_WORKSPACE, &root.display().to_string()));
    // Claude Code runs `PostToolUseFailure`, not `PostToolUse`, after a call that failed;
    // zero runs no hook there.
    let expected: Vec<&Value> = measured
        .iter()
        .filter(|input| input["hook_event_name"] != "PostToolUseFailure")
        .collect();
    let ours = dumped(&dump);
    assert_eq!(
        ours.iter().map(moment).collect::<Vec<_>>(),
        expected
            .iter()
            .map(|input| moment(input))
            .collect::<Vec<_>>()
    );
    for (zero, claude) in ours.iter().zip(expected) {
        assert_same_shape(zero, claude);
    }
    // The level the run was given, in Claude Code's words (it measured bypassPermissions).
    assert_eq!(ours[1]["permission_mode"], "acceptEdits");
}

#[test]
fn claude_hooks_on_edit_multiedit_write_guard_apply_patch_and_read_covers_the_searches() {
    let setup = Setup::new();
    let dump = setup.in_workspace(".inputs.ndjson");
    let dumper = setup.dumper(&dump);
    let deny = setup.script(
        "deny.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'no patches' >&2\nexit 2\n",
    );
    let settings = setup.settings(json!({"PreToolUse": [
        {"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": deny.display().to_string()}]},
        {"matcher": "Read", "hooks": [{"type": "command", "command": dumper.display().to_string()}]},
    ]}));
    let patch = "*** Begin Patch\n*** Add File: patched.txt\n+hello\n*** End Patch\n";
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("apply_patch", json!({ "patch": patch })))
            .reply(Reply::tool_call("grep", json!({"pattern": "hello"})))
            .reply(bash("true"))
            .reply(Reply::text("done")),
    );
    let events = setup.run(&server, &["--hooks", settings.to_str().unwrap()], 0);
    assert!(
        !setup.in_workspace("patched.txt").exists(),
        "the patch was applied"
    );
    let outputs = tool_outputs(&events);
    assert!(outputs[0].contains("no patches"), "{outputs:?}");
    // `Read` ran for `grep` (told by its own Claude Code name), not for `bash`.
    let read = dumped(&dump);
    assert_eq!(read.len(), 1, "{read:?}");
    assert_eq!(read[0]["tool_name"], "Grep");
    assert_eq!(read[0]["tool_input"]["pattern"], "hello");
}

#[test]
fn a_hook_runs_by_bin_sh_so_a_failed_redirection_exits_2_and_blocks_as_in_claude_code() {
    let setup = Setup::new();
    let shell = setup.in_workspace(".shell.txt");
    // Under bash the redirection's failure exits 1 (a failed hook, ignored with
    // --hooks-fail-open); under /bin/sh (dash) it exits 2, which blocks.
    let command = format!(
        "readlink /proc/$$/exe > '{}'; : > /nonexistent/dir/x",
        shell.display()
    );
    let settings = setup.file(
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": command}]}]}})
        .to_string(),
    );
    let server = writes_marker();
    let events = setup.run(
        &server,
        &["--hooks", settings.to_str().unwrap(), "--hooks-fail-open"],
        0,
    );
    let sh = std::fs::canonicalize("/bin/sh").unwrap();
    assert_eq!(
        std::fs::read_to_string(&shell).unwrap().trim(),
        sh.to_str().unwrap()
    );
    if sh.ends_with("dash") {
        assert!(!setup.in_workspace("marker").exists(), "the call ran");
        assert_eq!(of_type(&events, "hook")[0]["decision"], "deny");
    }
}

#[test]
fn post_tool_use_runs_only_after_a_call_that_succeeded() {
    let setup = Setup::new();
    let dump = setup.in_workspace(".inputs.ndjson");
    let dumper = setup.dumper(&dump);
    let file = setup.file(
        "hooks.toml",
        &format!(
            "[[hooks.post_tool_use]]\ncommand = \"{}\"\nmatcher = \"bash\"\n",
            dumper.display()
        ),
    );
    let server = FakeModel::start(
        Script::new()
            .reply(bash("echo failing; exit 3"))
            .reply(bash("echo fine"))
            .reply(Reply::text("done")),
    );
    setup.run(&server, &["--hooks", file.to_str().unwrap()], 0);
    let after = dumped(&dump);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0]["arguments"]["command"], "echo fine");
    assert_eq!(after[0]["result"]["is_error"], false);
    assert_eq!(after[0]["tool_response"]["stdout"], "fine");
    assert!(after[0]["duration_ms"].is_u64(), "{}", after[0]);
}

#[test]
fn a_hook_whose_script_the_model_may_write_is_warned_about_from_auto_medium() {
    let setup = Setup::new();
    std::fs::create_dir(setup.in_workspace("ci")).unwrap();
    let guard = setup.in_workspace("ci/guard.sh");
    std::fs::write(&guard, "#!/bin/sh\ncat > /dev/null\n").unwrap();
    std::fs::set_permissions(&guard, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let outside = setup.script("outside.sh", "#!/bin/sh\ncat > /dev/null\n");
    let file = setup.file(
        "hooks.toml",
        &format!(
            "[[hooks.pre_tool_use]]\ncommand = \"./ci/guard.sh\"\n\n\
             [[hooks.post_tool_use]]\ncommand = \"sh ci/guard.sh\"\n\n\
             [[hooks.pre_tool_use]]\ncommand = \"{}\"\n",
            outside.display()
        ),
    );
    let warnings = |auto: &str| {
        let server = FakeModel::start(Script::new().reply(Reply::text("done")));
        let events = setup.run_at(auto, &server, &["--hooks", file.to_str().unwrap()], 0);
        of_type(&events, "warning")
            .iter()
            .map(|event| event["message"].as_str().unwrap().to_string())
            .filter(|message| message.contains("hook"))
            .collect::<Vec<_>>()
    };
    let medium = warnings("medium");
    assert_eq!(medium.len(), 2, "{medium:#?}");
    let guard = format!("`{}`", guard.canonicalize().unwrap().display());
    for command in ["`./ci/guard.sh`", "`sh ci/guard.sh`"] {
        assert!(
            medium
                .iter()
                .any(|m| m.contains(command) && m.contains(&guard)),
            "{command}: {medium:#?}"
        );
    }
    assert!(medium.iter().all(|m| m.contains("Where a guard must live")));
    assert_eq!(warnings("high").len(), 2);
    assert!(warnings("low").is_empty());
}
