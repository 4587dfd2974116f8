//! docs/CI.md, run: its GitHub Actions and GitLab CI jobs are read out of the document and
//! their steps executed the way each CI system runs them (bash with `-eo pipefail`, the
//! platform's variables, the cache restored), against a fake model, in a real git repository
//! with a change to review. The `uses:` steps of GitHub (checkout, cache, artifact upload)
//! are done by the test itself. The install steps' `cargo install` from scratch is the one
//! `#[ignore]`d test, which `.ci/run` runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::ci::{self, StepRun, bash, record_git_install, restore_cached_zero};
use crate::support::fake_model::{FakeModel, Reply, Script};

/// The fake key the jobs' secret holds.
const FAKE_KEY: &str = "sk-test-ci-doc-0000000000000000";

/// docs/CI.md's marked blocks: `<!-- file: PATH -->` or `<!-- commands: NAME -->`, then a
/// fenced block; the marker's text and the block's body.
fn marked_blocks() -> BTreeMap<String, String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CI.md")).unwrap();
    let mut blocks = BTreeMap::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(marker) = line
            .strip_prefix("<!-- ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap();
        assert!(
            fence.starts_with("```"),
            "{marker}: no block after the marker"
        );
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let previous = blocks.insert(marker.to_string(), body.join("\n") + "\n");
        assert!(previous.is_none(), "{marker} appears twice");
    }
    blocks
}

fn block(name: &str) -> String {
    marked_blocks()
        .remove(name)
        .unwrap_or_else(|| panic!("docs/CI.md has no block `{name}`"))
}

fn yaml(name: &str) -> Value {
    yaml_serde::from_str(&block(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs `program` with `args` in `dir`, and panics unless it succeeds.
fn run(dir: &Path, program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "{program} {args:?}");
}

/// A repository under review: `main` with an `add` function and the review schema from the
/// document, pushed to a bare `origin`, and a checked-out branch that breaks `add`.
struct Repository {
    dir: tempfile::TempDir,
}

impl Repository {
    fn new() -> Repository {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join("src")).unwrap();
        std::fs::create_dir_all(work.join(".zero")).unwrap();
        let git = |args: &[&str]| run(&work, "git", args);
        git(&["init", "-q", "-b", "main"]);
        git(&["config", "user.email", "ci@example.com"]);
        git(&["config", "user.name", "CI"]);
        git(&["config", "commit.gpgsign", "false"]);
        std::fs::write(
            work.join("src/lib.rs"),
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
        )
        .unwrap();
        std::fs::write(
            work.join(".zero/review.schema.json"),
            block("file: .zero/review.schema.json"),
        )
        .unwrap();
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "add"]);
        run(dir.path(), "git", &["init", "-q", "--bare", "origin.git"]);
        git(&["remote", "add", "origin", "../origin.git"]);
        git(&["push", "-q", "origin", "main"]);
        git(&["checkout", "-q", "-b", "feature"]);
        std::fs::write(
            work.join("src/lib.rs"),
            "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
        )
        .unwrap();
        git(&["commit", "-q", "-am", "change add"]);
        Repository { dir }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn home(&self) -> PathBuf {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        home
    }
}

/// The environment every step starts from: none of the machine's, but for what finds tools
/// (`PATH`, and rustup's and cargo's homes), a private home and data directory, and the fake
/// model in place of the provider the job names.
fn base_env(repository: &Repository, server: &FakeModel) -> BTreeMap<String, String> {
    let jq = Command::new("jq").arg("--version").output();
    assert!(
        jq.is_ok_and(|out| out.status.success()),
        "jq is not installed; docs/CI.md's jobs read their verdict with it (apt-get install jq)"
    );
    let mut env = ci::base_env(&repository.home());
    env.insert("ZERO_PROVIDER".into(), "openai".into());
    env.insert("ZERO_BASE_URL".into(), server.base_url_openai());
    env
}

/// Whether the cache holds zero when the job starts, and what the install step builds.
#[derive(Clone, Copy, PartialEq)]
enum Cache {
    /// Restored: the install step finds zero and builds nothing.
    Hit,
    /// Empty: the install step builds zero from this checkout's HEAD.
    Miss,
}

/// The variables that make a cache miss build this checkout: its own git URL and HEAD, and a
/// release profile that builds quickly (the command is the document's; only its cost
/// changes).
fn build_from_this_checkout(env: &mut BTreeMap<String, String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(head.status.success(), "the checkout is a git repository");
    env.insert("ZERO_GIT".into(), format!("file://{}", root.display()));
    env.insert(
        "ZERO_REV".into(),
        String::from_utf8(head.stdout).unwrap().trim().into(),
    );
    env.insert("CARGO_PROFILE_RELEASE_LTO".into(), "false".into());
    env.insert("CARGO_PROFILE_RELEASE_CODEGEN_UNITS".into(), "16".into());
    env.insert("CARGO_PROFILE_RELEASE_OPT_LEVEL".into(), "0".into());
    env.insert(
        "CARGO_TARGET_DIR".into(),
        std::env::temp_dir()
            .join("zero-ci-doc-install-target")
            .display()
            .to_string(),
    );
}

/// A GitHub expression the workflow uses, as the test's run of it sees it.
fn github_expression(expression: &str, env: &BTreeMap<String, String>) -> String {
    match expression {
        "secrets.OPENAI_API_KEY" => FAKE_KEY.into(),
        "github.base_ref" => "main".into(),
        "runner.os" => "Linux".into(),
        other => match other.strip_prefix("env.") {
            Some(name) => env[name].clone(),
            None => panic!("the workflow uses `${{{{ {other} }}}}`, which this test cannot give"),
        },
    }
}

/// `value` with its `${{ ... }}` expressions replaced.
fn substitute(value: &str, env: &BTreeMap<String, String>) -> String {
    let expression = regex::Regex::new(r"\$\{\{\s*([^}]*?)\s*\}\}").unwrap();
    expression
        .replace_all(value, |captures: &regex::Captures<'_>| {
            github_expression(&captures[1], env)
        })
        .into_owned()
}

/// A mapping of variables from the YAML, every value as a string.
fn variables(mapping: &Value) -> Vec<(String, String)> {
    let Some(mapping) = mapping.as_object() else {
        return Vec::new();
    };
    mapping
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (name.clone(), value)
        })
        .collect()
}

/// Runs the workflow's one job the way a runner does: steps in order, a failed step skipping
/// the rest but for `if: always()` ones, `$GITHUB_PATH` prepended to `PATH` after each step.
/// Returns the `run:` steps' results.
fn run_github_job(repository: &Repository, server: &FakeModel, cache: Cache) -> Vec<StepRun> {
    let workflow = yaml("file: .github/workflows/zero-review.yml");
    let jobs = workflow["jobs"].as_object().unwrap();
    assert_eq!(jobs.len(), 1);
    let job = jobs.values().next().unwrap();
    let mut env = base_env(repository, server);
    let github_path = repository.dir.path().join("github_path");
    std::fs::write(&github_path, "").unwrap();
    env.insert("GITHUB_PATH".into(), github_path.display().to_string());
    for (name, value) in variables(&job["env"]) {
        let value = substitute(&value, &env);
        env.insert(name, value);
    }
    if cache == Cache::Miss {
        build_from_this_checkout(&mut env);
    }
    let mut runs = Vec::new();
    let mut failed = false;
    for step in job["steps"].as_array().unwrap() {
        let always = step["if"].as_str() == Some("always()");
        if failed && !always {
            continue;
        }
        let uses = step["uses"].as_str().unwrap_or_default();
        if uses.starts_with("actions/checkout@") {
            // The repository is checked out already, with its history (`fetch-depth: 0`).
            assert_eq!(step["with"]["fetch-depth"], json!(0));
        } else if uses.starts_with("actions/cache/") {
            let path = step["with"]["path"].as_str().unwrap();
            let path = repository.home().join(
                path.strip_prefix("~/")
                    .expect("a path under the home directory"),
            );
            let key = substitute(step["with"]["key"].as_str().unwrap(), &env);
            assert!(
                key.ends_with(&env["ZERO_REV"]),
                "the cache is per zero commit: {key}"
            );
            if uses.starts_with("actions/cache/restore@") && cache == Cache::Hit {
                restore_cached_zero(&path);
            }
            if uses.starts_with("actions/cache/save@") {
                // Saved before the review, whatever it finds: what was installed is there.
                assert!(!failed, "the build is saved before anything can fail");
                assert!(path.join("bin/zero").exists(), "{} saved", path.display());
            }
        } else if uses.starts_with("actions/upload-artifact@") {
            let path = repository
                .work()
                .join(step["with"]["path"].as_str().unwrap());
            assert!(path.exists(), "the artifact {} was written", path.display());
        } else if let Some(script) = step["run"].as_str() {
            assert!(
                !script.contains("${{"),
                "a `run:` script gets values through `env`, never spliced in"
            );
            let mut step_env = env.clone();
            for (name, value) in variables(&step["env"]) {
                step_env.insert(name, substitute(&value, &env));
            }
            let added = std::fs::read_to_string(&github_path).unwrap();
            let mut path: Vec<&str> = added.lines().rev().collect();
            path.push(&env["PATH"]);
            step_env.insert("PATH".into(), path.join(":"));
            let name = step["name"].as_str().unwrap_or("run");
            let result = bash(name, script, &repository.work(), &step_env);
            failed |= result.code != 0;
            runs.push(result);
        } else {
            panic!("a step this test does not know: {step}");
        }
    }
    runs
}

/// Runs the GitLab job: `before_script` and `script` as one shell, as the runner does, with
/// the cache restored into the project directory and the merge request's variables.
fn run_gitlab_job(repository: &Repository, server: &FakeModel, cache: Cache) -> StepRun {
    let pipeline = yaml("file: .gitlab-ci.yml");
    let job = &pipeline["zero-review"];
    let rule = job["rules"][0]["if"].as_str().unwrap();
    assert!(rule.contains("merge_request_event"), "{rule}");
    let mut env = base_env(repository, server);
    env.insert(
        "CI_PROJECT_DIR".into(),
        repository.work().display().to_string(),
    );
    env.insert("CI_PIPELINE_SOURCE".into(), "merge_request_event".into());
    env.insert("CI_MERGE_REQUEST_TARGET_BRANCH_NAME".into(), "main".into());
    env.insert("OPENAI_API_KEY".into(), FAKE_KEY.into());
    for (name, value) in variables(&job["variables"]) {
        env.insert(name, value);
    }
    if cache == Cache::Miss {
        build_from_this_checkout(&mut env);
    }
    assert_eq!(job["cache"]["key"], "zero-$ZERO_REV");
    let cached = job["cache"]["paths"][0].as_str().unwrap();
    if cache == Cache::Hit {
        restore_cached_zero(&repository.work().join(cached));
        record_git_install(&repository.work().join(cached), &env["ZERO_REV"]);
    }
    let lines: Vec<&str> = ["before_script", "script"]
        .iter()
        .flat_map(|part| job[*part].as_array().unwrap())
        .map(|line| line.as_str().unwrap())
        .collect();
    let result = bash("zero-review", &lines.join("\n"), &repository.work(), &env);
    for artifact in job["artifacts"]["paths"].as_array().unwrap() {
        let path = repository.work().join(artifact.as_str().unwrap());
        if artifact == "zero-events.jsonl" || result.code == 0 {
            assert!(path.exists(), "the artifact {} was written", path.display());
        }
    }
    result
}

/// A verdict as the model gives it.
fn verdict(verdict: &str, findings: Value) -> Reply {
    Reply::text(&json!({"verdict": verdict, "findings": findings}).to_string())
}

/// Checks that the review request carried the change's diff on stdin.
fn assert_the_diff_reached_the_model(server: &FakeModel) {
    let request = &server.requests()[0];
    assert!(
        request.raw_body.contains("-    a + b"),
        "{}",
        request.raw_body
    );
    assert!(
        request.raw_body.contains("+    a - b"),
        "{}",
        request.raw_body
    );
}

/// The GitHub job's steps, cache restored, against a model that follows `script`; the
/// review step's run comes last.
fn github_review(script: Script) -> (Repository, FakeModel, Vec<StepRun>) {
    let server = FakeModel::start(script);
    let repository = Repository::new();
    let runs = run_github_job(&repository, &server, Cache::Hit);
    let review = runs.iter().position(|r| r.name == "Review the change");
    assert_eq!(review, Some(runs.len() - 1), "{runs:#?}");
    (repository, server, runs)
}

/// The GitLab job, cache restored, against a model that follows `script`.
fn gitlab_review(script: Script) -> (FakeModel, StepRun) {
    let server = FakeModel::start(script);
    let repository = Repository::new();
    let run = run_gitlab_job(&repository, &server, Cache::Hit);
    (server, run)
}

#[test]
fn an_approving_review_passes_on_both_platforms() {
    let approve = || Script::new().reply(verdict("approve", json!([])));
    let (repository, server, runs) = github_review(approve());
    assert!(runs.iter().all(|r| r.code == 0), "{runs:#?}");
    assert_the_diff_reached_the_model(&server);
    let written = std::fs::read_to_string(repository.work().join("verdict.json")).unwrap();
    assert_eq!(written, "{\"findings\":[],\"verdict\":\"approve\"}\n");
    let (server, run) = gitlab_review(approve());
    assert_eq!(run.code, 0, "{run:#?}");
    assert_the_diff_reached_the_model(&server);
}

#[test]
fn a_review_that_requests_changes_fails_the_job_and_annotates_the_line() {
    let finding = json!([{"file": "src/lib.rs", "line": 2, "message": "add subtracts"}]);
    let request_changes = || Script::new().reply(verdict("request_changes", finding.clone()));
    let (_, _, runs) = github_review(request_changes());
    let review = runs.last().unwrap();
    assert_eq!(review.code, 1, "{runs:#?}");
    let annotation = "::warning file=src/lib.rs,line=2::add subtracts";
    assert!(review.output.contains(annotation), "{review:#?}");
    let (_, run) = gitlab_review(request_changes());
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.output.contains("src/lib.rs:2: add subtracts"),
        "{run:#?}"
    );
}

#[test]
fn a_finding_cannot_forge_a_workflow_command_in_the_github_job() {
    let finding = json!([{"file": "src/a,b.rs", "line": 2,
                          "message": "bad\n::add-mask::secret\r\n::error::forged 100%"}]);
    let (_, _, runs) = github_review(Script::new().reply(verdict("request_changes", finding)));
    let review = runs.last().unwrap();
    let annotation =
        "::warning file=src/a%2Cb.rs,line=2::bad%0A::add-mask::secret%0D%0A::error::forged 100%25";
    assert!(review.output.contains(annotation), "{review:#?}");
    for line in review.output.lines() {
        assert!(
            !line.starts_with("::add-mask") && !line.starts_with("::error::forged"),
            "{line}"
        );
    }
}

#[test]
fn no_valid_verdict_is_exit_4_and_the_job_says_why() {
    let wrong = || verdict("looks good", json!([]));
    let never_valid = || Script::new().reply(wrong()).reply(wrong()).reply(wrong());
    let (repository, server, runs) = github_review(never_valid());
    let review = runs.last().unwrap();
    assert_eq!(review.code, 1, "{runs:#?}");
    let said = "::error::zero gave no verdict: schema_unsatisfied: ";
    assert!(review.output.contains(said), "{review:#?}");
    // The commands the document gives for reading the kept event stream.
    let read = |name: &str| {
        let env = base_env(&repository, &server);
        bash(name, &block(name), &repository.work(), &env)
    };
    let reading = read("commands: read-events");
    assert_eq!(reading.code, 0, "{reading:#?}");
    assert!(reading.output.contains("\"exitCode\":4"), "{reading:#?}");
    let pointers = read("commands: read-schema-errors");
    let pointer = "/verdict: \"looks good\" is not one of";
    assert!(pointers.output.contains(pointer), "{pointers:#?}");
    let (_, run) = gitlab_review(never_valid());
    assert_eq!(run.code, 1, "{run:#?}");
    let said = "zero gave no verdict: schema_unsatisfied: ";
    assert!(run.output.contains(said), "{run:#?}");
}

/// The install steps with an empty cache: the document's `cargo install` builds zero from
/// this checkout's HEAD (slow: `.ci/run` runs it, with `--ignored`).
#[test]
#[ignore = "builds zero with cargo install; .ci/run runs it"]
fn the_install_steps_build_zero_when_the_cache_is_empty() {
    let server = FakeModel::start(Script::new().reply(verdict("approve", json!([]))));
    let repository = Repository::new();
    let runs = run_github_job(&repository, &server, Cache::Miss);
    assert!(runs.iter().all(|r| r.code == 0), "{runs:#?}");
    assert!(repository.home().join(".zero-bin/bin/zero").is_file());

    let server = FakeModel::start(Script::new().reply(verdict("approve", json!([]))));
    let repository = Repository::new();
    let run = run_gitlab_job(&repository, &server, Cache::Miss);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(repository.work().join(".zero-bin/bin/zero").is_file());
}
