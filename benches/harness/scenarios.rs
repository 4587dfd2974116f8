//! The measured scenarios, in the order the table shows them. Each drives the real binary with
//! a scripted fake model and adds its rows; each checks that the job did what it was scripted
//! to do, because a fast run that did the wrong thing is not a measurement.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use tempfile::TempDir;

use crate::Options;
use crate::process::{self, Finished};
use crate::support::fake_model::{FakeModel, RecordedRequest, Reply, Route, Script, TASK_ID};
use crate::support::procs::blocked_writing_stdout;
use crate::support::zero::PROVIDER_VARIABLES;
use crate::table::{Row, Unit};

mod execs;
mod images;
mod replay;
mod review;
mod skills;
mod worktrees;

/// How long the model holds back its answer to a specialist child, so the child is sampled.
const CHILD_HOLD: Duration = Duration::from_millis(100);

/// What only a specialist child's requests contain: the heading of the prompt its parent
/// gives it.
const CHILD_MARK: &str = "## Assigned task";

/// Grace between SIGTERM and SIGKILL in the signal rows, so "grace + ε" is easy to read.
const KILL_GRACE: Duration = Duration::from_millis(1000);

/// The tail every `TaskOutput` call asks for in the output rows: the same bytes come back
/// whatever the size (the default, 16 KiB, would make the conversation of a big output larger
/// than a 1 KiB one's), so only reading the file differs.
const TASK_OUTPUT_TAIL: u64 = 1024;

/// How long zero may take to exit after SIGTERM while nobody reads its stdout before the
/// harness calls it stuck: far above its 2 s drain and its grace period.
const STALLED_EXIT_LIMIT: Duration = Duration::from_secs(30);

/// How long the harness waits for a process tree to disappear before calling it leaked.
const LEAK_LIMIT: Duration = Duration::from_secs(5);

/// The final answer of a job without a schema.
const FREE_TEXT_ANSWER: &str = "Appended the lines.";

/// The schema of the structured-output rows, and an answer that satisfies it.
const VERDICT_SCHEMA: &str = r#"{"type": "object", "properties": {"verdict": {"enum": ["approve", "request_changes"]}, "findings": {"type": "array", "items": {"type": "string"}}}, "required": ["verdict", "findings"], "additionalProperties": false}"#;
const VERDICT: &str = r#"{"verdict": "approve", "findings": []}"#;

/// The tool turns before the final answer in the rows that time an answer → exit.
const ANSWER_TURNS: usize = 5;

/// [`ANSWER_TURNS`] `bash` calls, each appending a line to a file.
fn tool_turns() -> Vec<Reply> {
    (1..=ANSWER_TURNS)
        .map(|n| Reply::tool_call("bash", json!({"command": format!("echo {n} >> log.txt")})))
        .collect()
}

/// Runs every scenario, adding rows as they complete (so a failure still shows what ran). Every
/// scratch directory is made below `scratch_root`.
/// A group's measurement: its rows added to the table.
type RowsOf<'a> = dyn Fn(&mut Vec<Row>) -> Result<()> + 'a;

/// The groups of rows, in the order they run: what `--only` names.
pub const GROUPS: &[&str] = &[
    "startup",
    "floors",
    "turns",
    "replay",
    "sandbox",
    "guardian",
    "bounds",
    "hooks",
    "rules",
    "exec-check",
    "structured",
    "verify",
    "sessions",
    "mcp",
    "local",
    "specialist",
    "worktrees",
    "review",
    "images",
    "skills",
    "interrupt",
    "task-output",
    "grep",
    "stalled-reader",
];

pub fn run_all(options: &Options, scratch_root: &Path, rows: &mut Vec<Row>) -> Result<()> {
    let bench = Bench {
        options,
        scratch_root,
    };
    let wanted = |group: &str| {
        debug_assert!(GROUPS.contains(&group), "{group} is not in GROUPS");
        options
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|name| name == group))
    };
    if wanted("startup") {
        bench.startup(rows)?;
    }
    if wanted("floors") {
        bench.floors(rows)?;
    }
    let sizes: &[usize] = if options.quick {
        &[5, 50]
    } else {
        &[5, 50, 200]
    };
    if wanted("turns") {
        for &turns in sizes {
            bench.turns(turns, rows)?;
        }
    }
    if wanted("replay") {
        bench.replay(rows)?;
    }
    let groups: [(&str, &RowsOf); 16] = [
        ("sandbox", &|rows| bench.sandbox(rows)),
        ("guardian", &|rows| bench.guardian(rows)),
        ("bounds", &|rows| bench.bounds(rows)),
        ("hooks", &|rows| bench.hooks(rows)),
        ("rules", &|rows| bench.rules(rows)),
        ("exec-check", &|rows| bench.exec_check(rows)),
        ("structured", &|rows| bench.structured(rows)),
        ("verify", &|rows| bench.verify(rows)),
        ("sessions", &|rows| bench.sessions(rows)),
        ("mcp", &|rows| bench.mcp(rows)),
        ("local", &|rows| bench.local(rows)),
        ("specialist", &|rows| bench.specialist(rows)),
        ("worktrees", &|rows| bench.worktrees(rows)),
        ("review", &|rows| bench.review(rows)),
        ("images", &|rows| bench.images(rows)),
        ("skills", &|rows| bench.skills(rows)),
    ];
    for (group, run) in groups {
        if wanted(group) {
            run(rows)?;
        }
    }
    if wanted("interrupt") {
        bench.interrupts(rows)?;
    }
    if wanted("task-output") {
        let outputs: &[(&str, u64)] = if options.quick {
            &[("1 KiB", 1 << 10), ("100 MiB", 100 << 20)]
        } else {
            &[
                ("1 KiB", 1 << 10),
                ("100 MiB", 100 << 20),
                ("1 GiB", 1 << 30),
            ]
        };
        for &(label, size) in outputs {
            bench.task_output(label, size, rows)?;
        }
    }
    if wanted("grep") {
        bench.grep(if options.quick { 5_000 } else { 50_000 }, rows)?;
    }
    // Last: a zero that cannot close while its stdout is stalled fails here, after every other
    // row was measured.
    if wanted("stalled-reader") {
        bench.stalled_reader(rows)?;
    }
    Ok(())
}

/// One job's run: how the process ended and what the model server saw.
struct Job {
    finished: Finished,
    launched: Instant,
    requests: Vec<RecordedRequest>,
}

impl Job {
    /// The time from request `from` to request `from + 1` (a tool turn, seen by the model).
    fn turn(&self, from: usize) -> Duration {
        self.requests[from + 1].at - self.requests[from].at
    }

    /// The time from request `index` (the one the final answer came to) to the job's exit.
    fn answer_to_exit(&self, index: usize) -> Duration {
        self.launched + self.finished.wall - self.requests[index].at
    }

    /// The raw body of request `index`, which carries every tool result so far.
    fn body(&self, index: usize) -> &str {
        &self.requests[index].raw_body
    }
}

/// A job whose model launched a specialist (see [`Bench::specialist_job`]).
struct SpecialistJob {
    /// From the request that got the `Task` call to the child's first request.
    child_start: Duration,
    finished: Finished,
    requests: Vec<RecordedRequest>,
}

struct Bench<'a> {
    options: &'a Options,
    /// Where the scratch directories go (removed as a whole, even on Ctrl-C).
    scratch_root: &'a Path,
}

impl Bench<'_> {
    /// The SIGINT rows: a foreground command, and a background task that ignores SIGTERM.
    fn interrupts(&self, rows: &mut Vec<Row>) -> Result<()> {
        self.interrupt(
            "SIGINT, foreground `sleep`",
            vec![Reply::tool_call("bash", json!({"command": "sleep 30"}))],
            "≤ 100 ms",
            rows,
        )?;
        // Foreground commands are killed outright on cancel; the grace period belongs to
        // stopping background tasks, so the SIGTERM-ignoring child is one, waited on with
        // TaskOutput.
        self.interrupt(
            "SIGINT, background task ignoring SIGTERM",
            vec![
                Reply::tool_call(
                    "bash",
                    json!({"command": "trap '' TERM; sleep 30", "run_in_background": true}),
                ),
                Reply::tool_call(
                    "TaskOutput",
                    json!({"task_id": TASK_ID, "block": true, "timeout_ms": 60000}),
                ),
            ],
            "grace + ε",
            rows,
        )
    }

    /// A new scratch directory, removed when dropped.
    fn temp_dir(&self) -> Result<TempDir> {
        Ok(TempDir::new_in(self.scratch_root)?)
    }

    /// `zero` with a private home and data directory, a clean provider environment, and
    /// stdout/stderr kept in `scratch` for a failure message.
    fn zero(&self, scratch: &Path) -> Result<Command> {
        let mut command = Command::new(&self.options.bin);
        for var in PROVIDER_VARIABLES {
            command.env_remove(var);
        }
        command
            .env("HOME", scratch)
            .env("XDG_CONFIG_HOME", scratch.join("config"))
            .env("XDG_DATA_HOME", scratch.join("data"))
            .env("ZERO_HOME", scratch.join("zero"))
            .env("ZERO_KILL_GRACE_MS", KILL_GRACE.as_millis().to_string())
            .stdin(Stdio::null())
            .stdout(fs::File::create(scratch.join("stdout"))?)
            .stderr(fs::File::create(scratch.join("stderr"))?);
        Ok(command)
    }

    /// A reply as the benchmark's model sends it: events back to back, after the configured
    /// delay.
    fn reply(&self, reply: Reply) -> Reply {
        reply.event_gap(Duration::ZERO).delay(self.options.delay)
    }

    /// The script the benchmark's model follows: `replies` in order.
    fn script(&self, replies: Vec<Reply>) -> Script {
        replies.into_iter().fold(Script::new(), |script, reply| {
            script.reply(self.reply(reply))
        })
    }

    /// The rows of a job measured up to its one request, named `name`: launch → that request,
    /// and the request's body (its size in bytes returned for the note). Each run is
    /// `arguments` in `dir` against a fake model answering `answer` on the OpenAI wire; a run
    /// that does not exit 0 after one request that `sent` accepts is a failure.
    fn first_request(
        &self,
        name: &str,
        arguments: &[&str],
        dir: &Path,
        answer: &str,
        sent: impl Fn(&RecordedRequest) -> bool,
    ) -> Result<(Row, Row, usize)> {
        let mut first = Row::new(format!("{name}: launch → first request"), Unit::Ms, "");
        let mut body = Row::new(format!("{name}: first request's body"), Unit::MiB, "");
        let mut body_bytes = 0;
        for _ in 0..self.options.runs {
            let server = FakeModel::start(self.script(vec![Reply::text(answer)]));
            let scratch = self.temp_dir()?;
            let mut command = self.zero(scratch.path())?;
            command
                .args(arguments)
                .current_dir(dir)
                .env("ZERO_PROVIDER", "openai")
                .env("ZERO_BASE_URL", server.base_url_openai())
                .env("ZERO_MODEL", "fake-model");
            let running = process::start(&mut command)?;
            let launched = running.launched;
            let finished = running.wait()?;
            let requests = server.requests();
            ensure!(
                finished.code == 0 && requests.len() == 1 && sent(&requests[0]),
                "{name}: exited {} after {} requests (or not the one expected); stderr:\n{}",
                finished.code,
                requests.len(),
                tail(&scratch.path().join("stderr")),
            );
            first.time(requests[0].at - launched);
            body_bytes = requests[0].raw_body.len();
            body.kib(body_bytes as u64 / 1024);
        }
        Ok((first, body, body_bytes))
    }

    /// Starts a job answered by `script` in `workspace`, with `--auto medium`, its stdout
    /// going to `stdout` (else a file in the scratch directory). The server and the scratch
    /// directory live as long as the job needs them.
    fn start_job(
        &self,
        script: Script,
        max_turns: usize,
        workspace: &Path,
        stdout: Option<Stdio>,
    ) -> Result<(FakeModel, process::Running, TempDir)> {
        self.start_job_with(script, max_turns, workspace, stdout, &[])
    }

    /// [`Bench::start_job`] with `flags` added to `zero exec`'s.
    fn start_job_with(
        &self,
        script: Script,
        max_turns: usize,
        workspace: &Path,
        stdout: Option<Stdio>,
        flags: &[&str],
    ) -> Result<(FakeModel, process::Running, TempDir)> {
        let server = FakeModel::start(script);
        let scratch = self.temp_dir()?;
        let mut command = self.zero(scratch.path())?;
        if let Some(stdout) = stdout {
            command.stdout(stdout);
        }
        command
            .args(["exec", "--auto", "medium", "-o", "stream-json"])
            .args(flags)
            .args(["--max-turns", &max_turns.to_string(), "go"])
            .current_dir(workspace)
            .env("ZERO_PROVIDER", "openai")
            .env("ZERO_BASE_URL", server.base_url_openai())
            .env("ZERO_MODEL", "fake-model");
        let running = process::start(&mut command)?;
        Ok((server, running, scratch))
    }

    /// Runs a job answered by `replies` in `workspace` to its end, and checks it succeeded and
    /// used every reply.
    fn job(&self, replies: Vec<Reply>, workspace: &Path) -> Result<Job> {
        self.job_with(replies, workspace, &[])
    }

    /// [`Bench::job`] with `flags` added to `zero exec`'s.
    fn job_with(&self, replies: Vec<Reply>, workspace: &Path, flags: &[&str]) -> Result<Job> {
        let expected = replies.len();
        let (server, running, scratch) =
            self.start_job_with(self.script(replies), expected, workspace, None, flags)?;
        let launched = running.launched;
        let finished = running.wait()?;
        let requests = server.requests();
        ensure!(
            finished.code == 0 && requests.len() == expected,
            "the job exited {} after {} of {expected} requests; stderr:\n{}",
            finished.code,
            requests.len(),
            tail(&scratch.path().join("stderr")),
        );
        Ok(Job {
            finished,
            launched,
            requests,
        })
    }

    /// `zero --version` and `zero exec --list-tools`: start-up cost alone.
    fn startup(&self, rows: &mut Vec<Row>) -> Result<()> {
        let cases: [(&str, &[&str]); 2] = [
            ("zero --version", &["--version"]),
            ("zero exec --list-tools", &["exec", "--list-tools"]),
        ];
        for (label, args) in cases {
            let mut wall = Row::new(format!("{label}: wall"), Unit::Ms, "≤ 3 ms");
            let mut rss = Row::new(format!("{label}: peak RSS"), Unit::MiB, "");
            for _ in 0..self.options.runs {
                let scratch = self.temp_dir()?;
                let finished = process::start(self.zero(scratch.path())?.args(args))?.wait()?;
                ensure!(finished.code == 0, "{label} exited {}", finished.code);
                wall.time(finished.wall);
                match self.peak_under_time(scratch.path(), args)? {
                    Some(kib) => rss.kib(kib),
                    None => rss.kib(finished.own_peak_kib),
                }
            }
            rows.extend([wall, rss]);
        }
        Ok(())
    }

    /// The peak RSS of `zero <args>` as `/usr/bin/time` reports it, when it is installed. A
    /// process this short ends between two of the sampler's looks, and its `ru_maxrss` seen
    /// from the harness holds the harness's own high-water mark (std spawns with `vfork`, and
    /// Linux folds the parent's into the child's at `exec`); `time` forks from a process of a
    /// few hundred KiB, so what it reports is zero's.
    fn peak_under_time(&self, scratch: &Path, args: &[&str]) -> Result<Option<u64>> {
        const TIME: &str = "/usr/bin/time";
        if !Path::new(TIME).exists() {
            return Ok(None);
        }
        // zero's own environment, under `time`.
        let zero = self.zero(scratch)?;
        let mut command = Command::new(TIME);
        for (name, value) in zero.get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        let timed = command
            .args(["-f", "%M", "--"])
            .arg(&self.options.bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()?;
        ensure!(timed.status.success(), "{TIME} zero {args:?} failed");
        // `time -f %M` writes the peak (KiB) as the last line of stderr.
        let stderr = String::from_utf8_lossy(&timed.stderr);
        Ok(stderr
            .lines()
            .last()
            .and_then(|line| line.trim().parse().ok()))
    }

    /// What zero's numbers stand on, measured the same way without zero: starting any process
    /// at all (`/bin/true`), and the `bash` tool's own work in the turn rows.
    fn floors(&self, rows: &mut Vec<Row>) -> Result<()> {
        let workspace = self.temp_dir()?;
        let floors: [(&str, &[&str], &str); 2] = [
            ("/bin/true (process start floor)", &["true"], ""),
            (
                "bash -c 'echo N >> log.txt' alone",
                &["bash", "-c", "echo 1 >> log.txt"],
                "the tool's own work in each turn below",
            ),
        ];
        for (label, argv, note) in floors {
            let mut row = Row::new(label, Unit::Ms, "");
            row.note(note);
            for _ in 0..self.options.runs {
                let mut command = Command::new(argv[0]);
                command.args(&argv[1..]).current_dir(workspace.path());
                row.time(process::start(&mut command)?.wait()?.wall);
            }
            rows.push(row);
        }
        Ok(())
    }

    /// What the sandbox costs a tool turn: 20-turn jobs with the sandbox (the default at
    /// medium) and with `--sandbox off`.
    fn sandbox(&self, rows: &mut Vec<Row>) -> Result<()> {
        self.compare_turns(
            &[
                ("sandbox on (Landlock + seccomp)", &[]),
                ("--sandbox off", &["--sandbox", "off"]),
            ],
            "difference ≤ 0.3 ms",
            FREE_TEXT_ANSWER,
            rows,
        )?;
        // At medium a workspace's git metadata is checked (and put back) after every call
        // that may write: what that costs a turn, against the row above (no repository).
        self.compare_turns_in(
            &[("sandbox on, in a git repository (its metadata kept)", &[])],
            "difference ≤ 0.3 ms",
            FREE_TEXT_ANSWER,
            |workspace| {
                let status = Command::new("git")
                    .args(["init", "--quiet"])
                    .current_dir(workspace)
                    .status()?;
                ensure!(status.success(), "git init failed");
                Ok(())
            },
            rows,
        )
    }

    /// What a guardian costs on its own, running `/bin/true`: unconfined, and confined as a
    /// command at `--auto medium` is (Landlock, the socket allow-list, every capability
    /// dropped). The descriptor sweep is in both. The guardian is started as the runtime
    /// starts it: `zero __guard`, its report pipe as stdin.
    fn guardian(&self, rows: &mut Vec<Row>) -> Result<()> {
        let workspace = self.temp_dir()?;
        let root = format!("--write-root={}", workspace.path().display());
        let cases: [(&str, Vec<&str>); 2] = [
            ("guardian alone, unconfined: /bin/true", Vec::new()),
            (
                "guardian alone, confined as at medium: /bin/true",
                vec![
                    "--confine-writes",
                    &root,
                    "--block-network",
                    "--drop-privileges",
                ],
            ),
        ];
        for (label, flags) in cases {
            let mut row = Row::new(label, Unit::Ms, "difference ≤ 0.1 ms");
            for _ in 0..self.options.runs {
                let (report, writer) = std::io::pipe()?;
                let mut command = Command::new(&self.options.bin);
                command
                    .args(["__guard", "--grace-ms", "100"])
                    .args(&flags)
                    .args(["--", "true"])
                    .current_dir(workspace.path())
                    .stdin(writer)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null());
                let running = process::start(&mut command)?;
                // Only the guardian holds the writing end now.
                drop(command);
                row.time(running.wait()?.wall);
                drop(report);
            }
            rows.push(row);
        }
        Ok(())
    }

    /// What the bounds of a run cost a tool turn: a deadline, a token budget (checked after
    /// every response) and a window the run never comes near (estimated before every
    /// request), against none of them.
    fn bounds(&self, rows: &mut Vec<Row>) -> Result<()> {
        self.compare_turns(
            &[
                (
                    "--timeout, --max-tokens, --context-window",
                    &[
                        "--timeout",
                        "1h",
                        "--max-tokens",
                        "100000000",
                        "--context-window",
                        "1000000",
                    ],
                ),
                ("no bounds", &[]),
            ],
            "no slower",
            FREE_TEXT_ANSWER,
            rows,
        )
    }

    /// What keeping the session costs a tool turn: each turn's messages are serialised and
    /// handed to the session's writer thread, which appends and fsyncs them.
    fn sessions(&self, rows: &mut Vec<Row>) -> Result<()> {
        self.compare_turns(
            &[("session kept", &[]), ("--no-session", &["--no-session"])],
            "difference ≤ 0.5 ms",
            FREE_TEXT_ANSWER,
            rows,
        )
    }

    /// What `--output-schema` costs: a tool turn (the schema rides in every request), the
    /// check of the final answer (answer → exit), and a rejected answer's way back to the
    /// model (answer → the retry request), against the same jobs without a schema.
    fn structured(&self, rows: &mut Vec<Row>) -> Result<()> {
        let schema_dir = self.temp_dir()?;
        let schema = schema_dir.path().join("verdict.json");
        fs::write(&schema, VERDICT_SCHEMA)?;
        let schema = schema.to_str().context("a UTF-8 scratch path")?;
        let with_schema: &[&str] = &["--output-schema", schema];
        self.compare_turns(
            &[("--output-schema", with_schema), ("no schema", &[])],
            "no slower",
            VERDICT,
            rows,
        )?;
        let mut checked = Row::new(
            "--output-schema: final answer → exit",
            Unit::Ms,
            "≤ no schema + 0.5 ms",
        );
        let mut unchecked = Row::new("no schema: final answer → exit", Unit::Ms, "");
        let mut retry = Row::new(
            "--output-schema: rejected answer → retry request",
            Unit::Ms,
            "≤ 5 ms",
        );
        for _ in 0..self.options.runs {
            let mut replies = tool_turns();
            replies.extend([Reply::text("Everything looks fine."), Reply::text(VERDICT)]);
            let workspace = self.temp_dir()?;
            let job = self.job_with(replies, workspace.path(), with_schema)?;
            retry.time(job.turn(ANSWER_TURNS));
            checked.time(job.answer_to_exit(ANSWER_TURNS + 1));
            unchecked.time(self.answer_to_exit(VERDICT, &[])?);
        }
        rows.extend([checked, unchecked, retry]);
        Ok(())
    }

    /// What a passing `--verify true` check costs a run: its final answer → exit (the check
    /// through the runtime's door, in a guardian of its own, and its two events), against
    /// the same job without a check, interleaved.
    fn verify(&self, rows: &mut Vec<Row>) -> Result<()> {
        let mut verified = Row::new(
            "--verify true: final answer → exit",
            Unit::Ms,
            "≤ no check + one command",
        );
        let mut unverified = Row::new("no check: final answer → exit", Unit::Ms, "");
        for _ in 0..self.options.runs {
            verified.time(self.answer_to_exit(FREE_TEXT_ANSWER, &["--verify", "true"])?);
            unverified.time(self.answer_to_exit(FREE_TEXT_ANSWER, &[])?);
        }
        rows.extend([verified, unverified]);
        Ok(())
    }

    /// The time from a job's final `answer` (after [`ANSWER_TURNS`] tool turns) to its exit,
    /// under `flags`.
    fn answer_to_exit(&self, answer: &str, flags: &[&str]) -> Result<Duration> {
        let mut replies = tool_turns();
        replies.push(Reply::text(answer));
        let workspace = self.temp_dir()?;
        let job = self.job_with(replies, workspace.path(), flags)?;
        Ok(job.answer_to_exit(ANSWER_TURNS))
    }

    /// What MCP costs: nothing for a run without MCP configuration (its rows against the
    /// same rows of a build before MCP, in docs/PERFORMANCE.md), and for a run with one stdio
    /// server (the tests' `mcp-test-server`) its start before the first request and a tool
    /// turn through it, against `bash` turns of the same job shape, interleaved.
    fn mcp(&self, rows: &mut Vec<Row>) -> Result<()> {
        const TURNS: usize = 20;
        let Some(server) = mcp_test_server() else {
            rows.push(Row::not_measured(
                "one stdio MCP server: launch → first request",
                "",
                "no mcp-test-server: cargo build --release --example mcp-test-server, or \
                 ZERO_BENCH_MCP_SERVER",
            ));
            return Ok(());
        };
        let config_dir = self.temp_dir()?;
        let config = config_dir.path().join("mcp.json");
        fs::write(
            &config,
            json!({"mcpServers": {"t": {"command": server}}}).to_string(),
        )?;
        let config = config.to_str().context("a UTF-8 scratch path")?;
        let mut plain_first = Row::new("no MCP config: launch → first request", Unit::Ms, "");
        let mut mcp_first = Row::new(
            "one stdio MCP server: launch → first request",
            Unit::Ms,
            "≤ no MCP + server start",
        );
        let mut plain_turn = Row::new(
            format!("{TURNS}-turn job, bash echo: per tool turn"),
            Unit::Ms,
            "",
        );
        let mut mcp_turn = Row::new(
            format!("{TURNS}-turn job, MCP tool (stdio echo): per tool turn"),
            Unit::Ms,
            "≤ 5 ms",
        );
        let median_turn = |job: &Job| {
            let mut gaps: Vec<Duration> = (0..TURNS).map(|from| job.turn(from)).collect();
            gaps.sort();
            gaps[gaps.len() / 2]
        };
        for _ in 0..self.options.runs {
            let replies = |call: &dyn Fn(usize) -> Reply| {
                (1..=TURNS)
                    .map(call)
                    .chain([Reply::text(FREE_TEXT_ANSWER)])
                    .collect::<Vec<_>>()
            };
            let workspace = self.temp_dir()?;
            let bash = |n: usize| {
                Reply::tool_call("bash", json!({"command": format!("echo {n} >> log.txt")}))
            };
            let job = self.job(replies(&bash), workspace.path())?;
            plain_first.time(job.requests[0].at - job.launched);
            plain_turn.time(median_turn(&job));
            let workspace = self.temp_dir()?;
            let echo = |n: usize| Reply::tool_call("mcp__t__echo", json!({"text": n.to_string()}));
            let job = self.job_with(replies(&echo), workspace.path(), &["--mcp-config", config])?;
            mcp_first.time(job.requests[0].at - job.launched);
            mcp_turn.time(median_turn(&job));
        }
        rows.extend([plain_first, mcp_first, plain_turn, mcp_turn]);
        Ok(())
    }

    /// `--provider local` against the tests' stand-in llama-server (a Python script serving
    /// the socket, `tests/integration/support/fake_llama_server.py`): what zero adds to a local
    /// run — a service started, its `/health` awaited, one request over the Unix socket, the
    /// service stopped — beside the same one-answer job over TCP. The real model's load and
    /// turns are in docs/LOCAL_MODEL.md.
    fn local(&self, rows: &mut Vec<Row>) -> Result<()> {
        let mut tcp = Row::new("one-answer job over TCP: launch → exit", Unit::Ms, "");
        let mut local = Row::new(
            "--provider local, stand-in server: launch → exit",
            Unit::Ms,
            "≤ TCP + server start + 100 ms",
        );
        for _ in 0..self.options.runs {
            let workspace = self.temp_dir()?;
            let job = self.job(vec![Reply::text(FREE_TEXT_ANSWER)], workspace.path())?;
            tcp.time(job.finished.wall);

            let cache = self.temp_dir()?;
            fs::create_dir(cache.path().join("bin"))?;
            let record = workspace.path().join("record.json");
            let server = cache.path().join("bin/llama-server");
            fs::write(
                &server,
                include_str!("../../tests/integration/support/fake_llama_server.py")
                    .replace("@MODE@", "serve")
                    .replace("@RECORD@", record.to_str().context("a UTF-8 scratch path")?),
            )?;
            fs::set_permissions(&server, fs::Permissions::from_mode(0o755))?;
            fs::write(
                cache.path().join("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
                "stand-in",
            )?;
            let scratch = self.temp_dir()?;
            let mut command = self.zero(scratch.path())?;
            command
                .args(["exec", "--provider", "local", "--auto", "medium", "go"])
                .env("ZERO_LOCAL_MODEL_CACHE", cache.path())
                .current_dir(workspace.path());
            let finished = process::start(&mut command)?.wait()?;
            ensure!(
                finished.code == 0,
                "the local job exited {}; stderr:\n{}",
                finished.code,
                tail(&scratch.path().join("stderr")),
            );
            local.time(finished.wall);
        }
        rows.extend([tcp, local]);
        Ok(())
    }

    /// What a `pre_tool_use` hook costs a tool turn: one more command (`cat > /dev/null`,
    /// which reads its input and has no opinion) before each `bash` call, against no hook.
    fn hooks(&self, rows: &mut Vec<Row>) -> Result<()> {
        let dir = self.temp_dir()?;
        let file = dir.path().join("hooks.toml");
        fs::write(
            &file,
            "[[hooks.pre_tool_use]]\ncommand = \"cat > /dev/null\"\nmatcher = \"bash\"\n",
        )?;
        let file = file.to_str().context("the scratch path is not UTF-8")?;
        self.compare_turns(
            &[
                ("no hooks", &[]),
                ("one pre_tool_use hook", &["--hooks", file]),
            ],
            "difference ≈ one command",
            FREE_TEXT_ANSWER,
            rows,
        )
    }

    /// What 20 permission rules cost a tool turn (each `bash` line parsed, its command and
    /// its redirection matched), against none: under 0.05 ms, below what a turn's time can
    /// resolve (`rules::tests::twenty_rules_cost_a_call_far_less_than_a_millisecond` measures
    /// the check alone).
    fn rules(&self, rows: &mut Vec<Row>) -> Result<()> {
        let mut rules: Vec<String> = ["bash(echo *)", "write_file(**)", "read_file(src/**)"]
            .map(|rule| format!("--allow={rule}"))
            .into();
        rules.extend((0..7).map(|n| format!("--allow=bash(tool{n} sub *)")));
        rules.extend((0..10).map(|n| format!("--deny=bash(bad{n} *)")));
        let twenty: Vec<&str> = rules.iter().map(String::as_str).collect();
        self.compare_turns(
            &[("no rules", &[]), ("20 rules", &twenty)],
            "difference < 0.05 ms",
            FREE_TEXT_ANSWER,
            rows,
        )
    }

    /// The median tool turn of 20-turn jobs under each case's flags, the cases interleaved so
    /// all see the same machine.
    fn compare_turns(
        &self,
        cases: &[(&str, &[&str])],
        target: &'static str,
        answer: &str,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        self.compare_turns_in(cases, target, answer, |_| Ok(()), rows)
    }

    /// [`Bench::compare_turns`] in a workspace `prepare` made first.
    fn compare_turns_in(
        &self,
        cases: &[(&str, &[&str])],
        target: &'static str,
        answer: &str,
        prepare: impl Fn(&Path) -> Result<()>,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        const TURNS: usize = 20;
        let mut per_turn: Vec<Row> = cases
            .iter()
            .map(|(label, _)| {
                Row::new(
                    format!("{TURNS}-turn job, {label}: per tool turn"),
                    Unit::Ms,
                    target,
                )
            })
            .collect();
        for _ in 0..self.options.runs {
            for ((_, flags), row) in cases.iter().zip(per_turn.iter_mut()) {
                let replies: Vec<Reply> = (1..=TURNS)
                    .map(|n| {
                        Reply::tool_call("bash", json!({"command": format!("echo {n} >> log.txt")}))
                    })
                    .chain([Reply::text(answer)])
                    .collect();
                let workspace = self.temp_dir()?;
                prepare(workspace.path())?;
                let job = self.job_with(replies, workspace.path(), flags)?;
                let mut gaps: Vec<Duration> = (0..TURNS).map(|from| job.turn(from)).collect();
                gaps.sort();
                row.time(gaps[gaps.len() / 2]);
            }
        }
        rows.extend(per_turn);
        Ok(())
    }

    /// A job of `turns` × `bash echo N >> log.txt`, then a final answer.
    fn turns(&self, turns: usize, rows: &mut Vec<Row>) -> Result<()> {
        let name = |what: &str| format!("{turns}-turn job: {what}");
        let mut first = Row::new(name("launch → first request"), Unit::Ms, "≤ 10 ms");
        let mut per_turn = Row::new(
            name("per tool turn (median gap)"),
            Unit::Ms,
            "≤ 5 ms + tool",
        );
        // The run's first command starts its own guardian (a sandbox that confines writes
        // needs the run's directory, which that command opens); every later one finds one
        // started while the model answered (a warm guardian), which the median shows.
        let mut cold = Row::new(
            name("first tool turn (guardian started for it)"),
            Unit::Ms,
            "",
        );
        let mut exit = Row::new(name("launch → exit"), Unit::Ms, "");
        let mut tree = Row::new(name("peak RSS, process tree"), Unit::MiB, "≤ 20 MiB");
        let mut own = Vec::new();
        let mut connections = 0;
        for _ in 0..self.options.runs {
            let mut replies: Vec<Reply> = (1..=turns)
                .map(|n| {
                    Reply::tool_call("bash", json!({"command": format!("echo {n} >> log.txt")}))
                })
                .collect();
            replies.push(Reply::text("Appended the lines."));
            let workspace = self.temp_dir()?;
            let job = self.job(replies, workspace.path())?;
            let lines = fs::read_to_string(workspace.path().join("log.txt"))
                .context("the job wrote no log.txt")?
                .lines()
                .count();
            ensure!(lines == turns, "log.txt holds {lines} lines, not {turns}");
            first.time(job.requests[0].at - job.launched);
            cold.time(job.turn(0));
            let mut gaps: Vec<Duration> = (0..turns).map(|from| job.turn(from)).collect();
            gaps.sort();
            per_turn.time(gaps[gaps.len() / 2]);
            exit.time(job.finished.wall);
            tree.kib(job.finished.tree_peak_kib);
            own.push(job.finished.own_peak_kib);
            // One client port for every request means the connection was kept alive.
            let peers: HashSet<_> = job.requests.iter().map(|r| r.peer).collect();
            connections = connections.max(peers.len());
        }
        per_turn.note(format!("TCP connections per job: {connections}"));
        own.sort();
        tree.note(format!(
            "zero alone: {:.1} MiB",
            own[own.len() / 2] as f64 / 1024.0
        ));
        rows.extend([first, per_turn]);
        if turns == 5 {
            rows.push(cold);
        }
        rows.extend([exit, tree]);
        Ok(())
    }

    /// A background specialist (`Task` with `run_in_background`): from the request that got
    /// the `Task` call to the child's first request, and the child's own peak RSS.
    fn specialist(&self, rows: &mut Vec<Row>) -> Result<()> {
        let spawn_name = "background specialist: Task call → child's first request";
        if !self.offers_tool("Task")? {
            rows.push(Row::not_measured(
                spawn_name,
                "",
                "n/a (Task tool not built)",
            ));
            return Ok(());
        }
        let mut spawn = Row::new(spawn_name, Unit::Ms, "");
        let mut rss = Row::new("background specialist: child's peak RSS", Unit::MiB, "");
        for _ in 0..self.options.runs {
            let script = self
                .script(vec![
                    Reply::tool_call(
                        "Task",
                        json!({"name": "worker", "prompt": "Say done.", "run_in_background": true}),
                    ),
                    Reply::tool_call(
                        "TaskOutput",
                        json!({"task_id": TASK_ID, "block": true, "timeout_ms": 60000}),
                    ),
                    Reply::text("the worker finished"),
                ])
                // The child's answer is held back so the sampler (every 5 ms) finds the child
                // alive, waiting for it; an instant answer ends the child between samples.
                .route(
                    Route::body_contains(CHILD_MARK).reply(
                        self.reply(Reply::text("done"))
                            .delay(self.options.delay.max(CHILD_HOLD)),
                    ),
                );
            let workspace = self.temp_dir()?;
            let job = self.specialist_job(script, workspace.path())?;
            spawn.time(job.child_start);
            rss.kib(job.finished.descendant_peak_kib);
        }
        rss.note("largest descendant's VmHWM, sampled while it waits");
        rows.extend([spawn, rss]);
        Ok(())
    }

    /// Runs a job answered by `script` in `workspace` whose model launches a specialist (its
    /// requests marked by [`CHILD_MARK`]), to its end, and checks it succeeded and the child
    /// asked the model.
    fn specialist_job(&self, script: Script, workspace: &Path) -> Result<SpecialistJob> {
        let (server, running, scratch) = self.start_job(script, 3, workspace, None)?;
        let finished = running.wait()?;
        let requests = server.requests();
        let child = requests.iter().find(|r| r.raw_body.contains(CHILD_MARK));
        let (Some(child), 0) = (child, finished.code) else {
            bail!(
                "the specialist job exited {} (child request seen: {}); stderr:\n{}",
                finished.code,
                child.is_some(),
                tail(&scratch.path().join("stderr"))
            );
        };
        Ok(SpecialistJob {
            child_start: child.at - requests[0].at,
            finished,
            requests,
        })
    }

    /// Whether `zero exec --auto medium --list-tools` lists `tool`.
    fn offers_tool(&self, tool: &str) -> Result<bool> {
        let scratch = self.temp_dir()?;
        let mut command = self.zero(scratch.path())?;
        command.args(["exec", "--auto", "medium", "--list-tools"]);
        let code = process::start(&mut command)?.wait()?.code;
        ensure!(code == 0, "--list-tools exited {code}");
        let listing = fs::read_to_string(scratch.path().join("stdout"))?;
        Ok(listing
            .lines()
            .any(|line| line.split_whitespace().next() == Some(tool)))
    }

    /// SIGINT to zero while the model's `calls` keep a `sleep` running: how long until zero
    /// exits, and until everything it started is gone.
    fn interrupt(
        &self,
        label: &str,
        calls: Vec<Reply>,
        target: &'static str,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        let mut exit = Row::new(format!("{label}: → zero exits"), Unit::Ms, target);
        let mut gone = Row::new(format!("{label}: → tree gone"), Unit::Ms, target);
        let mut leaked = 0;
        let mut codes = Vec::new();
        for _ in 0..self.options.runs {
            let mut replies = calls.clone();
            replies.push(Reply::text("interrupted"));
            let turns = replies.len();
            let workspace = self.temp_dir()?;
            let (_server, running, _scratch) =
                self.start_job(self.script(replies), turns, workspace.path(), None)?;
            let pid = running.pid();
            let started = process::wait_until(Duration::from_secs(10), || {
                process::descendants(pid)
                    .into_iter()
                    .any(|child| process::name(child).as_deref() == Some("sleep"))
            });
            ensure!(started.is_some(), "the job's `sleep` never started");
            let tree = process::descendants(pid);
            let sent = Instant::now();
            kill(Pid::from_raw(pid), Signal::SIGINT)?;
            let finished = running.wait()?;
            exit.time(finished.ended - sent);
            codes.push(finished.code);
            match process::wait_until(LEAK_LIMIT, || !tree.iter().any(|&p| process::alive(p))) {
                Some(_) => gone.time(sent.elapsed()),
                None => {
                    leaked += 1;
                    // Ours to clean up: zero left them running.
                    for &child in &tree {
                        let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
                    }
                }
            }
        }
        codes.sort();
        codes.dedup();
        exit.note(format!("exit code {codes:?}; grace {KILL_GRACE:?}"));
        if leaked > 0 {
            gone.note(format!(
                "{leaked} of {} runs left processes alive after {LEAK_LIMIT:?}",
                self.options.runs
            ));
        }
        rows.extend([exit, gone]);
        Ok(())
    }

    /// SIGTERM to zero while nobody reads its stdout (the pipe is full, a write blocks) and a
    /// background task runs: the close goes ahead, the output gets its drain grace, and what
    /// could not be written is dropped. How long until zero exits, and its tree is gone.
    fn stalled_reader(&self, rows: &mut Vec<Row>) -> Result<()> {
        const LABEL: &str = "SIGTERM, stdout never read, background task";
        const TARGET: &str = "drain 2 s + ε";
        let mut exit = Row::new(format!("{LABEL}: → zero exits"), Unit::Ms, TARGET);
        let mut gone = Row::new(format!("{LABEL}: → tree gone"), Unit::Ms, TARGET);
        let mut codes = Vec::new();
        // Far more than the pipe and zero's queue hold together; its words numbered, since
        // one word over and over is a model in a loop, which zero cuts.
        let answer: String = (0..300 * 1024).map(|n| format!("word{n} ")).collect();
        for _ in 0..self.options.runs {
            let replies = vec![
                Reply::tool_call(
                    "bash",
                    json!({"command": "sleep 30", "run_in_background": true}),
                ),
                Reply::text(&answer).in_pieces(2048),
                Reply::text("done"),
            ];
            let workspace = self.temp_dir()?;
            let (unread, stdout) = nix::unistd::pipe()?;
            let (_server, running, _scratch) = self.start_job(
                self.script(replies),
                3,
                workspace.path(),
                Some(Stdio::from(stdout)),
            )?;
            let pid = running.pid();
            let stalled = process::wait_until(Duration::from_secs(10), || {
                let sleeping = process::descendants(pid)
                    .into_iter()
                    .any(|child| process::name(child).as_deref() == Some("sleep"));
                sleeping && blocked_writing_stdout(pid)
            });
            ensure!(stalled.is_some(), "the job never filled its stdout");
            let tree = process::descendants(pid);
            let sent = Instant::now();
            kill(Pid::from_raw(pid), Signal::SIGTERM)?;
            // A zero that lets the stalled write hold up its close never exits by itself.
            if process::wait_until(STALLED_EXIT_LIMIT, || !process::alive(pid)).is_none() {
                for &process in tree.iter().chain([&pid]) {
                    let _ = kill(Pid::from_raw(process), Signal::SIGKILL);
                }
                running.wait()?;
                bail!("zero was still running {STALLED_EXIT_LIMIT:?} after SIGTERM");
            }
            let finished = running.wait()?;
            exit.time(finished.ended - sent);
            codes.push(finished.code);
            let ended =
                process::wait_until(LEAK_LIMIT, || !tree.iter().any(|&p| process::alive(p)));
            ensure!(ended.is_some(), "the stalled job left processes running");
            gone.time(sent.elapsed());
            drop(unread);
        }
        codes.sort();
        codes.dedup();
        exit.note(format!("exit code {codes:?}; grace {KILL_GRACE:?}"));
        rows.extend([exit, gone]);
        Ok(())
    }

    /// `TaskOutput` on a finished background task whose output is `size` bytes (sparse: the
    /// task truncates its own log to that size, then appends a marker).
    fn task_output(&self, label: &str, size: u64, rows: &mut Vec<Row>) -> Result<()> {
        let mut time = Row::new(
            format!("TaskOutput on {label}: tool turn"),
            Unit::Ms,
            "≤ 2× 1 KiB",
        );
        let mut rss = Row::new(
            format!("TaskOutput on {label}: zero's peak RSS"),
            Unit::MiB,
            "",
        );
        for _ in 0..self.options.runs {
            let replies = vec![
                Reply::tool_call(
                    "bash",
                    json!({"command": format!("truncate -s {size} /dev/stdout && echo end-of-output"),
                           "run_in_background": true}),
                ),
                Reply::tool_call(
                    "TaskOutput",
                    json!({"task_id": TASK_ID, "block": true, "timeout_ms": 60000,
                           "max_bytes": TASK_OUTPUT_TAIL}),
                ),
                Reply::tool_call(
                    "TaskOutput",
                    json!({"task_id": TASK_ID, "max_bytes": TASK_OUTPUT_TAIL}),
                ),
                Reply::text("read it"),
            ];
            let workspace = self.temp_dir()?;
            let job = self.job(replies, workspace.path())?;
            ensure!(
                job.body(3).contains("end-of-output"),
                "TaskOutput did not show the end of the output"
            );
            time.time(job.turn(2));
            rss.kib(job.finished.own_peak_kib);
        }
        rows.extend([time, rss]);
        Ok(())
    }

    /// The `grep` tool over `files` small files, and `rg` over the same tree when installed.
    fn grep(&self, files: usize, rows: &mut Vec<Row>) -> Result<()> {
        let tree = self.temp_dir()?;
        let matches = generate_tree(tree.path(), files)?;
        let pattern = "needle_[0-9]+";
        let mut tool = Row::new(format!("grep tool, {files} files: tool turn"), Unit::Ms, "");
        for _ in 0..self.options.runs {
            let replies = vec![
                Reply::tool_call("grep", json!({"pattern": pattern})),
                Reply::text("found them"),
            ];
            let job = self.job(replies, tree.path())?;
            ensure!(
                job.body(1).matches("needle_").count() >= matches,
                "grep did not find the {matches} needles"
            );
            tool.time(job.turn(0));
        }
        rows.push(tool);
        rows.push(self.ripgrep(tree.path(), pattern, files)?);
        Ok(())
    }

    /// `rg` with the grep tool's pattern over the same tree, or a note that it is not installed.
    fn ripgrep(&self, tree: &Path, pattern: &str, files: usize) -> Result<Row> {
        let name = format!("rg, same {files} files");
        if !installed("rg") {
            return Ok(Row::not_measured(name, "", "rg not installed"));
        }
        let mut row = Row::new(name, Unit::Ms, "");
        for _ in 0..self.options.runs {
            let mut command = Command::new("rg");
            command
                .args(["-n", pattern, "."])
                .current_dir(tree)
                .stdout(Stdio::null());
            let finished = process::start(&mut command)?.wait()?;
            ensure!(finished.code == 0, "rg exited {}", finished.code);
            row.time(finished.wall);
        }
        Ok(row)
    }
}

/// Writes `files` small files in directories of 100, one in 1000 holding a needle; returns
/// how many needles there are.
/// The tests' MCP server: `ZERO_BENCH_MCP_SERVER`, else the example cargo built in the
/// harness's own profile (`cargo test` builds the debug one, `cargo build --release --example
/// mcp-test-server` the release one).
fn mcp_test_server() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ZERO_BENCH_MCP_SERVER") {
        return Some(PathBuf::from(path));
    }
    let profile_dir = Path::new(env!("CARGO_BIN_EXE_zero")).parent()?;
    Some(profile_dir.join("examples/mcp-test-server")).filter(|path| path.exists())
}

fn generate_tree(root: &Path, files: usize) -> Result<usize> {
    let mut needles = 0;
    for n in 0..files {
        let dir = root.join(format!("d{:04}", n / 100));
        if n % 100 == 0 {
            // Not `create_dir_all`: once a Ctrl-C has removed the scratch root, nothing may
            // make it again.
            fs::create_dir(&dir)?;
        }
        let mut text = format!("// file {n}\nfn item_{n}() -> u32 {{\n    {n}\n}}\n");
        if n % 1000 == 0 {
            text.push_str(&format!("const NAME: &str = \"needle_{n}\";\n"));
            needles += 1;
        }
        fs::write(dir.join(format!("f{n:05}.rs")), text)?;
    }
    Ok(needles)
}

/// The last lines of a file, for a failure message.
fn tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Whether `program` is installed (it runs with `--version`).
fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}
