//! Agent Skills through the real binary: discovery from every source and its precedence, a
//! broken `SKILL.md` named with its line, the system prompt's bounded list, the `Skill` tool
//! and the skill's own files read through `read_file` from the user's config directory, a
//! skill's `allowed-tools` that would widen the level (they do not) and that narrow the rest of
//! the run once it is loaded (the calls they leave out refused, their effects absent, a
//! specialist launched after narrowed too), and a specialist given the skills its manifest
//! lists.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::fake_model::{CHILD, FakeModel, RecordedRequest, Reply, Route, Script};
use crate::support::zero::{Wire, stream_of, tool_outputs, zero_std, zero_std_with};

/// A workspace, a config home (`XDG_CONFIG_HOME`) and a directory for `--skills-dir`, in one
/// temporary directory, canonical.
struct Machine {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    config: PathBuf,
    given: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let machine = Machine {
            workspace: base.join("workspace"),
            config: base.join("config"),
            given: base.join("given"),
            _root: root,
        };
        fs::create_dir_all(&machine.workspace).unwrap();
        machine
    }

    /// The user's skill directory.
    fn user_skills(&self) -> PathBuf {
        self.config.join("zero/skills")
    }

    /// Writes `dir/name/SKILL.md` with `text`, returning its path.
    fn write(&self, dir: &Path, name: &str, text: &str) -> PathBuf {
        fs::create_dir_all(dir.join(name)).unwrap();
        let file = dir.join(name).join("SKILL.md");
        fs::write(&file, text).unwrap();
        file
    }

    /// Writes the skill `name` with `description` and a body naming it.
    fn skill(&self, dir: &Path, name: &str, description: &str) -> PathBuf {
        let text =
            format!("---\nname: {name}\ndescription: {description}\n---\nThe steps of {name}.\n");
        self.write(dir, name, &text)
    }

    /// `zero exec` in the workspace with this machine's config home and `args`.
    fn listing(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = zero_std();
        cmd.env("XDG_CONFIG_HOME", &self.config)
            .args(["exec", "-C"])
            .arg(&self.workspace)
            .args(args);
        cmd.output().unwrap()
    }

    /// The `--list-skills -o json` listing with `extra` flags.
    fn skills(&self, extra: &[&str]) -> Value {
        let output = self.listing(&[&["--list-skills", "-o", "json"], extra].concat());
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// A run against `server` (stream-json), with `flags`; its exit code and events.
    fn run(&self, server: &FakeModel, flags: &[&str]) -> (i32, Vec<Value>) {
        let output = zero_std_with(server, Wire::OpenAi)
            .env("XDG_CONFIG_HOME", &self.config)
            .args(["exec", "-o", "stream-json", "-C"])
            .arg(&self.workspace)
            .args(flags)
            .arg("go")
            .output()
            .unwrap();
        let (code, events) = stream_of(&output);
        (code, events)
    }
}

/// The system prompt of an OpenAI-wire request.
fn system_prompt(request: &RecordedRequest) -> &str {
    request.body["messages"][0]["content"].as_str().unwrap()
}

/// The names of the tools an OpenAI-wire request offers.
fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The `name`d entry of a `--list-skills -o json` listing.
fn entry<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no skill `{name}` in {listing}"))
}

#[test]
fn skills_come_from_every_source_and_the_first_of_a_name_wins() {
    let machine = Machine::new();
    let ws = &machine.workspace;
    let dirs = [
        machine.given.clone(),
        ws.join(".zero/skills"),
        ws.join(".agents/skills"),
        ws.join(".claude/skills"),
        machine.user_skills(),
    ];
    let files: Vec<PathBuf> = dirs
        .iter()
        .enumerate()
        .map(|(n, dir)| {
            machine.skill(dir, &format!("only-{n}"), "d");
            machine.skill(dir, "shared", &format!("from source {n}"))
        })
        .collect();
    let given = machine.given.display().to_string();
    let listing = machine.skills(&["--skills-dir", &given]);
    for (n, dir) in dirs.iter().enumerate() {
        let source = dir.join(format!("only-{n}/SKILL.md"));
        assert_eq!(
            entry(&listing, &format!("only-{n}"))["source"],
            source.display().to_string()
        );
    }
    // Peel the sources off from the top: each time, the highest one left wins.
    for (n, file) in files.iter().enumerate() {
        let listing = machine.skills(&["--skills-dir", &given]);
        let shared = entry(&listing, "shared");
        assert_eq!(shared["description"], format!("from source {n}"));
        assert_eq!(shared["source"], file.display().to_string());
        assert_eq!(listing["warnings"], json!([]));
        fs::remove_file(file).unwrap();
    }
    // `--skill` keeps the named ones; `--no-skills` offers none.
    let only = machine.skills(&["--skill", "only-1", "--skill", "nowhere"]);
    assert_eq!(only["skills"].as_array().unwrap().len(), 1);
    assert_eq!(
        only["warnings"],
        json!(["--skill nowhere: no skill of that name"])
    );
    assert_eq!(machine.skills(&["--no-skills"])["skills"], json!([]));
}

#[test]
fn a_malformed_skill_is_warned_with_its_file_and_line_and_skipped() {
    let machine = Machine::new();
    let dir = machine.workspace.join(".claude/skills");
    machine.skill(&dir, "fine", "Does fine things. More.");
    let broken = machine.write(
        &dir,
        "broken",
        "---\nname: broken\ndescription: [unclosed\n---\nx\n",
    );
    let misnamed = machine.write(
        &dir,
        "misnamed",
        "---\ndescription: d\nname: other\n---\nx\n",
    );
    let output = machine.listing(&["--list-skills"]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("fine  ") && stdout.ends_with("  Does fine things.\n"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let yaml = format!(
        "zero: warning: skill {}:3: invalid front matter",
        broken.display()
    );
    assert!(stderr.contains(&yaml), "{stderr}");
    let name = format!(
        "zero: warning: skill {}:3: the name `other` is not the name of its directory \
         `misnamed`",
        misnamed.display()
    );
    assert!(stderr.contains(&name), "{stderr}");
    assert_eq!(stderr.matches("(skipped)").count(), 2, "{stderr}");
}

#[test]
fn the_model_sees_the_list_loads_a_skill_and_reads_its_files_from_the_config_dir() {
    let machine = Machine::new();
    let skill = machine.skill(&machine.user_skills(), "notes", "Writes the release notes.");
    let reference = skill.with_file_name("reference.md");
    fs::write(&reference, "REFERENCE-TEXT").unwrap();
    let path = reference.display().to_string();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("Skill", json!({"name": "notes"})))
            .reply(Reply::tool_call("read_file", json!({ "path": path })))
            .reply(Reply::tool_call(
                "write_file",
                json!({ "path": path, "content": "x" }),
            ))
            .reply(Reply::text("done")),
    );
    let (code, events) = machine.run(&server, &["--auto", "medium"]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(events[0]["skills"], json!(["notes"]));
    let requests = server.requests();
    let system = system_prompt(&requests[0]);
    assert!(
        system.contains("\n- notes: Writes the release notes.\n"),
        "{system}"
    );
    assert!(tool_names(&requests[0]).contains(&"Skill".to_string()));
    let outputs = tool_outputs(&events);
    let dir = skill.parent().unwrap().display().to_string();
    assert!(
        outputs[0].contains(&format!("Its other files are in {dir}")),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[0].ends_with("The steps of notes.\n"),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[1].contains("REFERENCE-TEXT"),
        "read_file reads the skill's files: {}",
        outputs[1]
    );
    // Readable, never writable.
    assert!(
        outputs[2].contains("outside the workspace"),
        "{}",
        outputs[2]
    );
    assert_eq!(fs::read_to_string(&reference).unwrap(), "REFERENCE-TEXT");
}

#[test]
fn a_skills_allowed_tools_never_widen_the_level() {
    let machine = Machine::new();
    machine.write(
        &machine.workspace.join(".zero/skills"),
        "writer",
        "---\nname: writer\ndescription: Writes files.\nallowed-tools: Write, Bash(rm:*)\n---\n\
         Write it.\n",
    );
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("Skill", json!({"name": "writer"})))
            .reply(Reply::tool_call(
                "write_file",
                json!({"path": "new.txt", "content": "x"}),
            ))
            .reply(Reply::text("done")),
    );
    let (code, events) = machine.run(&server, &["--auto", "low", "--sandbox", "off"]);
    assert_eq!(code, 0, "{events:?}");
    let outputs = tool_outputs(&events);
    assert!(
        outputs[0].contains("name: Write (write_file), Bash(rm:*) (bash). Every other call")
            && outputs[0].contains("(this run's level refuses write_file, bash)"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].contains("--auto medium"), "{}", outputs[1]);
    assert!(
        !machine.workspace.join("new.txt").exists(),
        "the skill widened --auto low"
    );
    let tools = tool_names(&server.requests()[1]);
    assert!(
        !tools.iter().any(|t| t == "write_file" || t == "bash"),
        "{tools:?}"
    );
}

/// A workspace skill that may read and run `git log`, nothing else.
const LOG_READER: &str = "---\nname: log-reader\ndescription: Reads the history.\n\
    allowed-tools: Read, Bash(git log:*), Task\n---\nRead the log.\n";

/// The `permission_denied` events' reasons.
fn denials(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|event| event["type"] == "permission_denied")
        .map(|event| event["reason"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_loaded_skills_allowed_tools_narrow_the_rest_of_the_run() {
    let machine = Machine::new();
    let skills = machine.workspace.join(".zero/skills");
    machine.write(&skills, "log-reader", LOG_READER);
    fs::write(machine.workspace.join("notes.txt"), "NOTES-TEXT").unwrap();
    let hostile = [
        ("bash", json!({"command": "touch after-bash"})),
        ("bash", json!({"command": "git log -1 > after-redirect"})),
        ("bash", json!({"command": "git log -1; touch after-list"})),
        ("write_file", json!({"path": "after-write", "content": "x"})),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: after-patch\n+x\n*** End Patch"}),
        ),
    ];
    let mut script = Script::new()
        .reply(Reply::tool_call("bash", json!({"command": "touch before"})))
        .reply(Reply::tool_call("Skill", json!({"name": "log-reader"})));
    for (tool, args) in &hostile {
        script = script.reply(Reply::tool_call(tool, args.clone()));
    }
    let server = FakeModel::start(
        script
            .reply(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
            .reply(Reply::tool_call("update_plan", json!({"plan": []})))
            .reply(Reply::text("done")),
    );
    let (code, events) = machine.run(&server, &["--auto", "high"]);
    assert_eq!(code, 0, "{events:?}");
    assert!(
        machine.workspace.join("before").exists(),
        "before the skill the run was not narrowed"
    );
    for marker in [
        "after-bash",
        "after-redirect",
        "after-list",
        "after-write",
        "after-patch",
    ] {
        assert!(
            !machine.workspace.join(marker).exists(),
            "{marker}: the skill's allowed-tools did not narrow the run"
        );
    }
    let denials = denials(&events);
    assert_eq!(denials.len(), hostile.len(), "{denials:#?}");
    for reason in &denials {
        assert!(
            reason.starts_with(
                "the skill `log-reader` is in use and narrows this run to its allowed-tools \
                 (Read, Bash(git log:*), Task): "
            ),
            "{reason}"
        );
    }
    let outputs = tool_outputs(&events);
    assert!(
        outputs[1].contains("may now call only the tools its allowed-tools name: Read"),
        "{}",
        outputs[1]
    );
    assert!(
        outputs.iter().any(|o| o.contains("NOTES-TEXT")),
        "{outputs:?}"
    );
}

#[test]
fn a_specialist_launched_while_a_skill_narrows_is_narrowed_too() {
    let machine = Machine::new();
    machine.write(
        &machine.workspace.join(".zero/skills"),
        "log-reader",
        LOG_READER,
    );
    let specialists = machine.workspace.join(".zero/specialists");
    fs::create_dir_all(&specialists).unwrap();
    fs::write(
        specialists.join("worker.md"),
        "---\nname: worker\ndescription: Works.\n---\nWork.\n",
    )
    .unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(Reply::tool_call(
                        "bash",
                        json!({"command": "touch from-child"}),
                    ))
                    .reply(Reply::text("tried")),
            )
            .reply(Reply::tool_call("Skill", json!({"name": "log-reader"})))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Touch it."}),
            ))
            .reply(Reply::text("done")),
    );
    let (code, events) = machine.run(&server, &["--auto", "high"]);
    assert_eq!(code, 0, "{events:?}");
    assert!(
        !machine.workspace.join("from-child").exists(),
        "the specialist was not narrowed by its parent's skill in use"
    );
    let child = server
        .requests()
        .into_iter()
        .filter(|request| request.raw_body.contains(CHILD))
        .nth(1)
        .expect("the specialist's second request");
    assert!(
        child
            .raw_body
            .contains("the skill `log-reader` is in use and narrows this run"),
        "{}",
        child.raw_body
    );
}

#[test]
fn a_hostile_skill_in_use_flag_is_a_usage_error() {
    let machine = Machine::new();
    let output = machine.listing(&["--skill-in-use", "{\"skill\": 1}", "--list-tools"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--skill-in-use {\"skill\": 1}: invalid type"),
        "{stderr}"
    );
}

#[test]
fn the_compact_prompt_bounds_the_skill_list() {
    let machine = Machine::new();
    let dir = machine.workspace.join(".agents/skills");
    for n in 0..60 {
        let description = "a long description ".repeat(30);
        machine.skill(&dir, &format!("skill-{n:02}"), &description);
    }
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let (code, events) = machine.run(&server, &["--prompt-style", "compact"]);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(events[0]["skills"].as_array().unwrap().len(), 60);
    let system = system_prompt(&server.requests()[0]).to_string();
    let section = &system[system.find("Skills (").expect("a skills section")..];
    let listed = section
        .lines()
        .filter(|line| line.starts_with("- skill-"))
        .count();
    assert!((1..=12).contains(&listed), "{section}");
    let more = format!("- ({} more skills not listed)", 60 - listed);
    let end = section.find(&more).expect("the rest counted") + more.len();
    assert!(end <= 1100, "the compact list is bounded: {end} bytes");
    // The full prompt lists every one of them, each description cut.
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    machine.run(&server, &["--prompt-style", "full"]);
    let full = system_prompt(&server.requests()[0]).to_string();
    assert!(full.contains("- skill-59: a long description"), "{full}");
    assert!(!full.contains("more skills not listed"), "{full}");
}

#[test]
fn without_skills_there_is_no_skill_tool_nor_list() {
    let machine = Machine::new();
    machine.skill(
        &machine.workspace.join(".zero/skills"),
        "notes",
        "Writes notes.",
    );
    let tools = |extra: &[&str]| {
        let output = machine.listing(&[&["--list-tools"], extra].concat());
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    assert!(tools(&[]).starts_with("Skill "), "{}", tools(&[]));
    assert!(!tools(&["--no-skills"]).contains("Skill "));
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let (_, events) = machine.run(&server, &["--disabled-tools", "Skill"]);
    assert!(events[0].get("skills").is_none(), "{}", events[0]);
    assert!(!system_prompt(&server.requests()[0]).contains("notes"));
}

#[test]
fn a_specialist_gets_only_the_skills_its_manifest_lists() {
    let machine = Machine::new();
    let skills = machine.workspace.join(".zero/skills");
    machine.skill(&skills, "release-notes", "Writes release notes.");
    machine.skill(&skills, "other", "Something else.");
    let specialists = machine.workspace.join(".zero/specialists");
    fs::create_dir_all(&specialists).unwrap();
    fs::write(
        specialists.join("writer.md"),
        "---\nname: writer\ndescription: Writes.\ntools: read-only\nskills: release-notes, \
         unknown\n---\nWrite.\n",
    )
    .unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(Route::body_contains(CHILD).reply(Reply::text("written")))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "writer", "prompt": "Write them."}),
            ))
            .reply(Reply::text("done")),
    );
    let (code, events) = machine.run(&server, &[]);
    assert_eq!(code, 0, "{events:?}");
    let child = server
        .requests()
        .into_iter()
        .find(|request| request.raw_body.contains(CHILD))
        .expect("the specialist asked the model");
    let system = system_prompt(&child);
    assert!(
        system.contains("- release-notes: Writes release notes."),
        "{system}"
    );
    assert!(!system.contains("Something else"), "{system}");
    let tools = tool_names(&child);
    assert!(
        tools.contains(&"Skill".to_string()) && tools.contains(&"read_file".to_string()),
        "{tools:?}"
    );
}
