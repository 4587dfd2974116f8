//! `zero exec --list-specialists` as a user meets it: built-in specialists, user and project
//! manifests, Claude Code agent files, and broken manifests — all through the real binary, with
//! `HOME`, `XDG_CONFIG_HOME` and the workspace in temporary directories.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use crate::support::fake_model::{FakeModel, RecordedRequest, Reply, Script};
use crate::support::zero::{finished_stream, zero_openai};

/// A home, a config home and a workspace, all empty, in one temporary directory.
struct Machine {
    _root: tempfile::TempDir,
    home: PathBuf,
    config: PathBuf,
    workspace: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        // zero canonicalizes the workspace, so the expected paths must be canonical too.
        let base = root.path().canonicalize().unwrap();
        let machine = Machine {
            home: base.join("home"),
            config: base.join("config"),
            workspace: base.join("workspace"),
            _root: root,
        };
        for dir in [&machine.home, &machine.config, &machine.workspace] {
            fs::create_dir_all(dir).unwrap();
        }
        machine
    }

    /// Writes `text` to `dir/file`, creating `dir`, and returns the file's path.
    fn write(&self, dir: &Path, file: &str, text: &str) -> PathBuf {
        fs::create_dir_all(dir).unwrap();
        let path = dir.join(file);
        fs::write(&path, text).unwrap();
        path
    }

    /// `zero` with a clean environment and this machine's home and config home.
    fn zero(&self) -> Command {
        let mut cmd = crate::support::zero::zero();
        cmd.env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.config);
        cmd
    }

    /// `zero exec --list-specialists -C <workspace>` and `extra`.
    fn list(&self, extra: &[&str]) -> Command {
        let mut cmd = self.zero();
        cmd.args(["exec", "--list-specialists", "-C"])
            .arg(&self.workspace)
            .args(extra);
        cmd
    }

    /// The `-o json` listing.
    fn json(&self) -> Value {
        let assert = self.list(&["-o", "json"]).assert().success();
        serde_json::from_slice(&assert.get_output().stdout).unwrap()
    }

    fn project_specialists(&self) -> PathBuf {
        self.workspace.join(".zero/specialists")
    }

    fn project_agents(&self) -> PathBuf {
        self.workspace.join(".claude/agents")
    }

    /// Two manifests in a directory beside the workspace (`outside-dir`, `outside-file`, their
    /// descriptions and instructions marked [`OUTSIDE`]); the project's `.zero/specialists`
    /// links to that directory and its `.claude/agents/linked.md` to the second manifest.
    /// Returns the outside directory.
    fn link_out_of_the_workspace(&self) -> PathBuf {
        let outside = self.workspace.with_file_name("outside");
        for name in ["outside-dir", "outside-file"] {
            let text = format!(
                "---\nname: {name}\ndescription: {OUTSIDE} description\n---\n{OUTSIDE} \
                 instructions\n"
            );
            self.write(&outside, &format!("{name}.md"), &text);
        }
        fs::create_dir_all(self.workspace.join(".zero")).unwrap();
        symlink(&outside, self.project_specialists()).unwrap();
        fs::create_dir_all(self.project_agents()).unwrap();
        symlink(
            outside.join("outside-file.md"),
            self.project_agents().join("linked.md"),
        )
        .unwrap();
        outside
    }
}

/// The mark of the manifests outside the workspace, which must never reach the model.
const OUTSIDE: &str = "OUTSIDE-THE-WORKSPACE";

fn manifest(name: &str, description: &str, tools: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\ntools: {tools}\n---\nDo it well.\n")
}

fn entry<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["specialists"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no specialist `{name}` in {listing}"))
}

fn names(listing: &Value) -> Vec<String> {
    listing["specialists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_three_builtins_are_listed_as_text() {
    let machine = Machine::new();
    let assert = machine.list(&[]).assert().success().stderr("");
    let text = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        lines.iter().map(|l| [l[0], l[1]]).collect::<Vec<_>>(),
        [
            ["code-review", "builtin"],
            ["explorer", "builtin"],
            ["worker", "builtin"]
        ]
    );
    assert_eq!(lines[1][2], "glob,grep,list_directory,read_file");
    assert!(text.contains("Finds and explains code."), "{text}");
    // The columns are aligned: each of them starts at the same place on every line.
    let starts: Vec<Vec<usize>> = text.lines().map(column_starts).collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{text}");
}

/// Where the name, source, tools and description columns of a listing line start (the first
/// three hold no spaces here).
fn column_starts(line: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut after_space = true;
    for (index, c) in line.char_indices() {
        if after_space && !c.is_whitespace() {
            starts.push(index);
        }
        after_space = c.is_whitespace();
    }
    starts.truncate(4);
    starts
}

#[test]
fn the_three_builtins_are_listed_as_json() {
    let listing = Machine::new().json();
    assert_eq!(names(&listing), ["code-review", "explorer", "worker"]);
    assert_eq!(listing["warnings"], serde_json::json!([]));
    let worker = entry(&listing, "worker");
    assert_eq!(worker["source"], "builtin");
    assert!(worker["description"].as_str().unwrap().contains("blockers"));
    assert_eq!(
        worker["tools"],
        serde_json::json!([
            "apply_patch",
            "bash",
            "edit_file",
            "glob",
            "grep",
            "list_directory",
            "read_file",
            "update_plan",
            "write_file"
        ])
    );
    assert!(worker.get("model").is_none(), "{worker}");
    assert_eq!(
        entry(&listing, "code-review")["tools"],
        serde_json::json!(["glob", "grep", "list_directory", "read_file"])
    );
}

#[test]
fn a_project_manifest_overrides_a_builtin_of_the_same_name() {
    let machine = Machine::new();
    let path = machine.write(
        &machine.project_specialists(),
        "explorer.md",
        "---\nname: explorer\ndescription: Knows this repo.\ntools: read-only, plan\nmodel: \
         small-model\n---\nExplore.\n",
    );
    let listing = machine.json();
    assert_eq!(names(&listing), ["code-review", "explorer", "worker"]);
    let explorer = entry(&listing, "explorer");
    assert_eq!(explorer["source"], path.display().to_string());
    assert_eq!(explorer["description"], "Knows this repo.");
    assert_eq!(explorer["model"], "small-model");
    assert_eq!(
        explorer["tools"],
        serde_json::json!(["glob", "grep", "list_directory", "read_file", "update_plan"])
    );

    machine
        .list(&[])
        .assert()
        .success()
        .stdout(predicate::str::contains(path.display().to_string()));
}

#[test]
fn user_manifests_come_from_the_xdg_config_home() {
    let machine = Machine::new();
    let path = machine.write(
        &machine.config.join("zero/specialists"),
        "mine.md",
        &manifest("mine", "Mine.", "execute"),
    );
    let listing = machine.json();
    assert_eq!(
        entry(&listing, "mine")["source"],
        path.display().to_string()
    );
}

#[test]
fn a_broken_manifest_warns_with_its_file_and_the_others_still_list() {
    let machine = Machine::new();
    let dir = machine.project_specialists();
    let broken = machine.write(
        &dir,
        "broken.md",
        "---\nname: broken\ndescription: d\n  oops: indented\n---\nBody.\n",
    );
    machine.write(&dir, "fine.md", &manifest("fine", "Fine.", "plan"));
    let warning = format!(
        "zero: warning: specialist manifest {}:4: ",
        broken.display()
    );
    let assert = machine
        .list(&[])
        .assert()
        .success()
        .stderr(predicate::str::starts_with(warning.clone()));
    let text = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    assert!(text.lines().any(|l| l.starts_with("fine ")), "{text}");
    assert!(!text.contains("broken"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");

    let listing = machine.json();
    assert!(names(&listing).contains(&"fine".to_string()));
    let warnings = listing["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{listing}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains(&broken.display().to_string())
    );
}

#[test]
fn workspace_manifests_linking_out_of_it_are_not_read_and_a_warning_names_each() {
    let machine = Machine::new();
    let outside = machine.link_out_of_the_workspace();
    // A link that stays inside the workspace is followed.
    machine.write(
        &machine.workspace.join("notes"),
        "kept.md",
        &manifest("kept", "Kept.", "plan"),
    );
    symlink(
        "../../notes/kept.md",
        machine.project_agents().join("kept.md"),
    )
    .unwrap();

    let listing = machine.json();
    assert_eq!(
        names(&listing),
        ["code-review", "explorer", "kept", "worker"]
    );
    let workspace = machine.workspace.display();
    let linked = machine.project_agents().join("linked.md");
    assert_eq!(
        listing["warnings"],
        serde_json::json!([
            format!(
                "specialist manifest {}: cannot read the manifest: it resolves outside \
                 {workspace} (skipped)",
                linked.display()
            ),
            format!(
                "cannot read the specialist directory {}: it resolves outside {workspace}",
                machine.project_specialists().display()
            ),
        ])
    );
    // As text, the same warnings on stderr, and nothing of the manifests' text anywhere.
    let assert = machine.list(&[]).assert().success();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&assert.get_output().stdout),
        String::from_utf8_lossy(&assert.get_output().stderr),
    );
    for path in [&linked, &machine.project_specialists()] {
        assert!(
            stderr.lines().any(|line| line.starts_with("zero: warning:")
                && line.contains(&path.display().to_string())
                && line.contains("resolves outside")),
            "{stderr}"
        );
    }
    assert!(!stdout.contains(OUTSIDE) && !stderr.contains(OUTSIDE));

    // The same manifests in the workspace are read.
    fs::remove_file(machine.project_specialists()).unwrap();
    fs::remove_file(&linked).unwrap();
    fs::create_dir(machine.project_specialists()).unwrap();
    fs::copy(
        outside.join("outside-dir.md"),
        machine.project_specialists().join("outside-dir.md"),
    )
    .unwrap();
    fs::copy(outside.join("outside-file.md"), &linked).unwrap();
    let listing = machine.json();
    assert_eq!(
        names(&listing),
        [
            "code-review",
            "explorer",
            "kept",
            "outside-dir",
            "outside-file",
            "worker"
        ]
    );
    assert_eq!(listing["warnings"], serde_json::json!([]));
}

#[test]
fn the_users_own_manifest_directory_may_link_anywhere() {
    let machine = Machine::new();
    let dotfiles = machine.workspace.with_file_name("dotfiles");
    machine.write(&dotfiles, "mine.md", &manifest("mine", "Mine.", "plan"));
    fs::create_dir_all(machine.home.join(".claude")).unwrap();
    symlink(&dotfiles, machine.home.join(".claude/agents")).unwrap();
    let listing = machine.json();
    assert_eq!(
        entry(&listing, "mine")["source"],
        machine
            .home
            .join(".claude/agents/mine.md")
            .display()
            .to_string()
    );
    assert_eq!(listing["warnings"], serde_json::json!([]));
}

#[test]
fn a_specialist_from_outside_the_workspace_never_reaches_the_model() {
    let machine = Machine::new();
    machine.link_out_of_the_workspace();
    let model = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "Task",
                serde_json::json!({"name": "outside-dir", "prompt": "go"}),
            ))
            .reply(Reply::tool_call(
                "Task",
                serde_json::json!({"name": "outside-file", "prompt": "go"}),
            ))
            .reply(Reply::text("done")),
    );
    let mut run = zero_openai(&model);
    run.env("HOME", &machine.home)
        .env("XDG_CONFIG_HOME", &machine.config)
        .current_dir(&machine.workspace)
        .args(["exec", "--auto", "medium", "-o", "stream-json", "go"]);
    finished_stream(&mut run, 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "no specialist was started");
    for request in &requests {
        assert!(
            !request.body.to_string().contains(OUTSIDE),
            "{}",
            request.body
        );
    }
    let result = |request: &RecordedRequest| {
        let messages = request.body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"].to_string()
    };
    let first = result(&requests[1]);
    assert!(
        first.contains("unknown specialist `outside-dir`")
            && first.contains("resolves outside")
            && first.contains(".zero/specialists"),
        "{first}"
    );
    assert!(
        result(&requests[2]).contains("unknown specialist `outside-file`"),
        "{}",
        result(&requests[2])
    );
}

#[test]
fn claude_code_agent_files_load_from_the_project_and_the_home() {
    let machine = Machine::new();
    let project = machine.write(
        &machine.workspace.join(".claude/agents"),
        "x.md",
        "---\nname: x\ndescription: An agent written for Claude Code.\ntools: Read, Grep, Glob, \
         Bash, Edit, Write, WebFetch\ncolor: purple\n---\nYou are x.\n",
    );
    let user = machine.write(
        &machine.home.join(".claude/agents"),
        "y.md",
        "---\nname: y\ndescription: Another one.\ntools: Read\nmodel: inherit\n---\nYou are y.\n",
    );
    let listing = machine.json();
    let x = entry(&listing, "x");
    assert_eq!(x["source"], project.display().to_string());
    assert_eq!(
        x["tools"],
        serde_json::json!([
            "bash",
            "edit_file",
            "glob",
            "grep",
            "read_file",
            "write_file"
        ])
    );
    let y = entry(&listing, "y");
    assert_eq!(y["source"], user.display().to_string());
    assert_eq!(y["tools"], serde_json::json!(["read_file"]));
    assert!(y.get("model").is_none(), "{y}");
    // What did not translate is reported, not fatal; Claude Code's display keys are not news.
    let warnings = listing["warnings"].to_string();
    assert!(
        !warnings.contains("`color`") && warnings.contains("`WebFetch`"),
        "{warnings}"
    );
}

#[test]
fn stream_json_is_run_start_warnings_specialists_run_end() {
    let machine = Machine::new();
    machine.write(
        &machine.project_specialists(),
        "bad.md",
        "no front matter\n",
    );
    let assert = machine.list(&["-o", "stream-json"]).assert().success();
    let events: Vec<Value> = String::from_utf8_lossy(&assert.get_output().stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["run_start", "warning", "specialists", "run_end"]);
    assert!(events[0].get("provider").is_none());
    assert!(
        events[1]["message"]
            .as_str()
            .unwrap()
            .contains("bad.md:1: no front matter")
    );
    assert_eq!(events[2]["specialists"].as_array().unwrap().len(), 3);
    assert_eq!(events[3]["exitCode"], 0);
}

#[test]
fn list_tools_does_not_look_for_specialists() {
    let machine = Machine::new();
    machine.write(
        &machine.project_specialists(),
        "bad.md",
        "no front matter\n",
    );
    machine
        .zero()
        .args(["exec", "--list-tools", "-C"])
        .arg(&machine.workspace)
        .assert()
        .success()
        .stderr(predicate::str::contains("specialist").not());
}

#[test]
fn list_specialists_and_list_tools_are_exclusive() {
    Machine::new()
        .list(&["--list-tools"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}
