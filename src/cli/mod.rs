//! Command-line definitions, and nothing else.
//!
//! Every flag lives here so that `--help`, shell completions and man pages are generated from
//! one place (`zero __generate`). Behaviour belongs in `exec`; this module only says what the
//! user may type and which values clap itself can reject.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod argv;
mod duration;

pub(crate) use duration::parse_timeout;

use crate::findings::{FailOn, FormatTarget};
use crate::output::{InputFormat, OutputFormat};
use crate::provider::{MIN_CONTEXT_WINDOW, ProviderKind, ReasoningEffort};
use crate::runtime::sandbox::SandboxMode;
use crate::runtime::{RunId, TaskId, WorktreeName};
use crate::session::SessionId;
use crate::tools::PromptStyle;
use crate::tools::policy::Autonomy;
use crate::usage::Usd;

/// The top-level `zero` command.
#[derive(Debug, Parser)]
#[command(
    name = "zero",
    version,
    about = "A headless coding agent: one job, real tools, exact exit codes, nothing left running",
    long_about = None,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `zero`.
///
/// Each one's flags are built only when it is the one parsed (`defer`): `zero --version`,
/// `--help` and `zero exec` do not build the flags of every other subcommand first (clap's
/// builder allocates and runs code for every flag, a cost paid at every start). Code that
/// reads a subcommand's flags from [`Cli::command`] builds it first (`Command::build`).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// `zero exec` (`about::EXEC`).
    #[command(
        about = about::EXEC,
        after_help = "Exit codes: 0 success, 1 internal error, 2 usage, 3 provider or configuration, \
                      4 incomplete (a turn, time, token or cost budget ran out, a --verify check never \
                      passed, or --strict and the work was blocked), 129/130/143 ended by \
                      SIGHUP/SIGINT/SIGTERM."
    )]
    Exec(Box<ExecArgs>),
    /// `zero review` (`about::REVIEW`).
    #[command(
        about = about::REVIEW,
        after_help = "What to review: --base REF (default: the branch's upstream, else origin/HEAD), \
                      --commit SHA, --uncommitted, or a unified diff on stdin (`zero review -`); \
                      at most 10 MiB of diff. Everything `zero exec` takes for the model, budgets, \
                      rules and sandbox applies; the review runs at --auto low.\n\n\
                      Exit codes: 0 no finding at or above --fail-on, 5 findings at or above it, \
                      1 internal error, 2 usage (a bad ref, no base, a diff too large or malformed), \
                      3 provider or configuration, 4 incomplete (a budget ran out, or no answer in \
                      the findings' shape), 129/130/143 ended by SIGHUP/SIGINT/SIGTERM."
    )]
    Review(Box<ReviewArgs>),
    /// `zero tasks` (`about::TASKS`).
    #[command(
        about = about::TASKS,
        after_help = "A task recorded `running` whose run is no longer alive is shown as \
                      `interrupted`. Exit codes: 0 success, 1 I/O error, 2 usage or unknown task id."
    )]
    Tasks(TasksArgs),
    /// `zero sessions` (`about::SESSIONS`).
    #[command(
        about = about::SESSIONS,
        after_help = "A session recorded `running` whose run is no longer alive is shown as \
                      `interrupted`. Exit codes: 0 success, 1 I/O error or a damaged session, 2 \
                      usage, an unknown session id, or a session in use."
    )]
    Sessions(SessionsArgs),
    /// `zero replay` (`about::REPLAY`).
    #[command(
        about = about::REPLAY,
        after_help = "Exit codes: 0 success, 2 a cassette that cannot be read or is malformed \
                      (the message names the line)."
    )]
    Replay(ReplayArgs),
    /// `zero worktrees` (`about::WORKTREES`).
    #[command(
        about = about::WORKTREES,
        after_help = "Dead runs are reconciled first, so a worktree is shown as it is settled: \
                      `active` only while its run is alive. Exit codes: 0 success, 1 I/O error, 2 \
                      usage, an unknown worktree, or a worktree in use."
    )]
    Worktrees(WorktreesArgs),
    /// `zero __generate` (`about::GENERATE`).
    #[command(name = "__generate", hide = true, about = about::GENERATE)]
    Generate(GenerateArgs),
}

/// Each subcommand's one-line description, given twice: by its [`Command`] variant to the
/// list in `zero --help`, and by its flags' struct to its own help. The flags are deferred,
/// so the struct's attributes are applied last, and its doc comment (written for the code)
/// would otherwise become the description.
mod about {
    /// `zero exec`.
    pub(super) const EXEC: &str =
        "Run one agent job headlessly and exit with a code a script can act on";
    /// `zero review`.
    pub(super) const REVIEW: &str = "Review a change read-only and report findings where CI \
        shows them (text, JSON, SARIF, GitHub annotations, GitLab Code Quality, a Markdown comment)";
    /// `zero tasks`.
    pub(super) const TASKS: &str =
        "Inspect, follow, stop and clean up background tasks and specialists of every run";
    /// `zero sessions`.
    pub(super) const SESSIONS: &str =
        "List, show and clean up the sessions `zero exec --resume` continues";
    /// `zero worktrees`.
    pub(super) const WORKTREES: &str =
        "List, show and clean up the worktrees `zero exec --worktree` made";
    /// `zero replay`.
    pub(super) const REPLAY: &str =
        "Read and check the cassettes `zero exec --record` writes and `--replay` serves";
    /// `zero __generate`.
    pub(super) const GENERATE: &str =
        "Write shell completions and man pages (used to refresh the committed copies)";
}

/// Flags of `zero exec`.
#[derive(Debug, Args, Clone, PartialEq, Eq)]
#[command(about = about::EXEC)]
pub struct ExecArgs {
    /// The prompt; several words are joined with spaces. A lone `-` reads the prompt from stdin.
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt_words: Vec<String>,

    /// Prompt text (repeatable; joined with the positional words in argv order).
    #[arg(short = 'p', long = "prompt", value_name = "TEXT")]
    pub(crate) prompt: Vec<String>,

    /// Read (more of) the prompt from a file, appended after a blank line.
    #[arg(short = 'f', long = "file", value_name = "PATH")]
    pub(crate) file: Option<PathBuf>,

    /// Attach an image to the prompt (repeatable): PNG, JPEG, GIF or WebP, at most 5 MB and
    /// 8000×8000 px.
    #[arg(long = "image", value_name = "FILE")]
    pub(crate) image: Vec<PathBuf>,

    /// Workspace root (default: the current directory).
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,

    /// Run in a new git worktree of the workspace's repository, on the branch `zero/NAME`
    /// (NAME defaults to a fresh id); at the end the changes are committed there, the
    /// worktree directory is removed and the branch is kept. Write it `--worktree=NAME`
    /// before a prompt word.
    #[arg(long, value_name = "NAME", num_args = 0..=1, require_equals = true)]
    pub(crate) worktree: Option<Option<String>>,

    /// An extra directory the agent may write to (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub(crate) add_dir: Vec<PathBuf>,

    /// How much the agent may do without asking: low = read only, medium = edit files in the
    /// workspace and run commands, high = everything.
    #[arg(long, value_enum, default_value_t = Autonomy::Low)]
    pub(crate) auto: Autonomy,

    /// Allow every tool, writes anywhere and any command (same as `--auto high`).
    #[arg(long = "skip-permissions-unsafe")]
    pub(crate) skip_permissions_unsafe: bool,

    /// The kernel sandbox for commands: auto = apply what the kernel supports and warn about
    /// the rest, required = exit 3 when a rule cannot be enforced, off = none [default: auto,
    /// or `sandbox` in config.toml].
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) sandbox: Option<SandboxMode>,

    /// Let commands open network connections at --auto low and medium (`network = true` in
    /// config.toml does the same).
    #[arg(long)]
    pub(crate) network: bool,

    /// Pass this variable to commands although its name looks like a secret (repeatable;
    /// `env_keep` in config.toml adds more).
    #[arg(long = "env-keep", value_name = "NAME")]
    pub(crate) env_keep: Vec<String>,

    /// Only these tools are offered to the model (comma or space separated).
    #[arg(long = "enabled-tools", value_name = "LIST")]
    pub(crate) enabled_tools: Vec<String>,

    /// These tools are never offered to the model (comma or space separated).
    #[arg(long = "disabled-tools", value_name = "LIST")]
    pub(crate) disabled_tools: Vec<String>,

    /// A permission rule: calls of the tool it names run only when an allow rule matches them
    /// (repeatable): `bash(cargo test *)`, `read_file(src/**)`, `Task(explorer)`,
    /// `mcp__github__*`, or Claude Code's `Bash(git log:*)`. Rules only narrow what --auto
    /// grants.
    #[arg(long = "allow", value_name = "RULE")]
    pub(crate) allow: Vec<String>,

    /// A permission rule: calls it matches are denied, whatever allows them (repeatable):
    /// `bash(git push *)`, `write_file(.github/**)`.
    #[arg(long = "deny", value_name = "RULE")]
    pub(crate) deny: Vec<String>,

    /// Read permission rules from this file: `[permissions]` with `allow` and `deny` in TOML,
    /// or a Claude Code settings.json (its `ask` rules are denied). A workspace's own files are
    /// never read without it.
    #[arg(long = "rules", value_name = "FILE")]
    pub(crate) rules: Option<PathBuf>,

    /// Start the MCP servers this file names (the `.mcp.json` format; repeatable). Their
    /// tools are offered as `mcp__SERVER__TOOL`.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub(crate) mcp_config: Vec<PathBuf>,

    /// Also start the servers of the workspace's own `.mcp.json` (never read without this:
    /// a checkout must not start the processes it names).
    #[arg(long = "mcp-project")]
    pub(crate) mcp_project: bool,

    /// Start only the servers of the --mcp-config files, none from config.toml or the
    /// workspace.
    #[arg(long = "strict-mcp-config")]
    pub(crate) strict_mcp_config: bool,

    /// Run the hooks this file configures, besides config.toml's `[hooks]` (repeatable): TOML
    /// or JSON in zero's shape (`[[hooks.pre_tool_use]]`), or a Claude Code settings.json
    /// (`{"hooks": {"PreToolUse": [...]}}`). A workspace's own files are never read without it.
    #[arg(long = "hooks", value_name = "FILE")]
    pub(crate) hooks: Vec<PathBuf>,

    /// Let a call through when a hook fails (crashes, times out, prints what is not a reply)
    /// instead of denying it.
    #[arg(long = "hooks-fail-open")]
    pub(crate) hooks_fail_open: bool,

    /// Also look for skills in this directory, before the workspace's and the user's
    /// (repeatable): each skill a subdirectory with a SKILL.md.
    #[arg(long = "skills-dir", value_name = "DIR", conflicts_with = "no_skills")]
    pub(crate) skills_dir: Vec<PathBuf>,

    /// Offer only this skill (repeatable) [default: every skill found].
    #[arg(long = "skill", value_name = "NAME", conflicts_with = "no_skills")]
    pub(crate) skill: Vec<String>,

    /// Offer no skills: none is looked for.
    #[arg(long = "no-skills")]
    pub(crate) no_skills: bool,

    /// A skill in use in the run that launched this one, as JSON (`{"skill": NAME,
    /// "allowed_tools": [ENTRY, ...]}`, repeatable): its `allowed-tools` narrow this run from
    /// its start. What a specialist is handed; a caller gains nothing by it (it only narrows).
    #[arg(long = "skill-in-use", value_name = "JSON", hide = true)]
    pub(crate) skill_in_use: Vec<String>,

    /// Offer the web_fetch tool, which fetches a web page as text (also `web_fetch = true` in
    /// config.toml, or any web_fetch/WebFetch allow rule).
    #[arg(long = "web-fetch")]
    pub(crate) web_fetch: bool,

    /// What goes to stdout: the final answer, one JSON summary, or a JSON event per line.
    #[arg(short = 'o', long = "output-format", value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) output_format: OutputFormat,

    /// How the prompt arrives: plain text, or JSON lines (from `--file` or stdin).
    #[arg(short = 'i', long = "input-format", value_enum, default_value_t = InputFormat::Text)]
    pub(crate) input_format: InputFormat,

    /// Also write the final answer to this file (atomically), in every output format.
    #[arg(long = "output-last-message", value_name = "FILE")]
    pub(crate) output_last_message: Option<PathBuf>,

    /// A JSON Schema (draft 2020-12 or 7) the final answer must satisfy: the answer is then
    /// one JSON value, printed compact on one line. No valid answer: exit 4.
    #[arg(long = "output-schema", value_name = "FILE")]
    pub(crate) output_schema: Option<PathBuf>,

    /// How many times an answer that misses --output-schema goes back to the model with the
    /// errors [default: 2].
    #[arg(long = "schema-retries", value_name = "N", requires = "output_schema")]
    pub(crate) schema_retries: Option<u32>,

    /// A check that must pass for the run to succeed (repeatable; also `verify` in
    /// config.toml or the --rules file): a command run in the workspace when the model gives
    /// its final answer. One that fails goes back to the model with its exit code and the end
    /// of its output, up to --verify-retries times; never passing is exit 4.
    #[arg(long = "verify", value_name = "CMD")]
    pub(crate) verify: Vec<String>,

    /// How long one check may run before it is stopped with everything it started [default:
    /// 10m, or `verify_timeout` in config.toml].
    #[arg(long = "verify-timeout", value_name = "DURATION", value_parser = duration::parse_timeout)]
    pub(crate) verify_timeout: Option<Duration>,

    /// How many times a check that fails goes back to the model [default: 2, or
    /// `verify_retries` in config.toml].
    #[arg(long = "verify-retries", value_name = "N")]
    pub(crate) verify_retries: Option<u32>,

    /// End the run with exit 4 when its work was blocked, after the answer is printed: a call
    /// refused by --auto, a rule or a hook, an MCP server that failed or went away, a
    /// specialist that failed, a call cut at the output limit and never made again (also
    /// `strict = true` in config.toml).
    #[arg(long)]
    pub(crate) strict: bool,

    /// Model name, as the provider knows it.
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub(crate) model: Option<String>,

    /// Which wire protocol the endpoint speaks.
    #[arg(long, value_enum)]
    pub(crate) provider: Option<ProviderKind>,

    /// Base URL of the model endpoint (e.g. http://127.0.0.1:8080/v1).
    #[arg(long = "base-url", value_name = "URL")]
    pub(crate) base_url: Option<String>,

    /// The most tokens the model may produce in one response [default: 8192, or
    /// `max_output_tokens` in config.toml]. A response cut there is reported as a warning.
    #[arg(long = "max-output-tokens", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_output_tokens: Option<u32>,

    /// How hard a reasoning model thinks (also `reasoning_effort` in config.toml): OpenAI's
    /// `reasoning_effort`, or Anthropic's extended thinking with a budget of 1024, 2048, 8192,
    /// 16384 or 32768 tokens. A server that refuses it is asked again without it, with a
    /// warning.
    #[arg(long = "reasoning-effort", value_name = "LEVEL", value_enum)]
    pub(crate) reasoning_effort: Option<ReasoningEffort>,

    /// A model to turn to when the current one stays overloaded, rate-limited, unreachable
    /// or unknown after its retries; repeat for more, tried in order (also `fallback_models`
    /// in config.toml). `PROVIDER:MODEL` names a model of another wire (`anthropic:…`,
    /// `openai:…`), reached through that wire's own variables.
    #[arg(long = "fallback-model", value_name = "MODEL", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) fallback_model: Vec<String>,

    /// A wall-clock limit for the whole run, children included (`90s`, `20m`, `1h`; also
    /// `timeout` in config.toml). When it passes everything is stopped and the run exits 4.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse_timeout)]
    pub(crate) timeout: Option<Duration>,

    /// A token budget (input plus output) for the whole run, children included (also
    /// `max_tokens` in config.toml). The response that passes it ends the run: exit 4.
    #[arg(long = "max-tokens", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_tokens: Option<u64>,

    /// A budget in US dollars for the whole run, children included (also `max_cost_usd` in
    /// config.toml); needs the model's price in the `[prices]` table of config.toml.
    #[arg(long = "max-cost-usd", value_name = "DOLLARS", value_parser = Usd::parse)]
    pub(crate) max_cost_usd: Option<Usd>,

    /// The model's context window in tokens, when the server does not report it and zero's
    /// table does not know the model (also `context_window` in config.toml) [default: 128000].
    #[arg(long = "context-window", value_name = "TOKENS",
          value_parser = clap::value_parser!(u32).range(i64::from(MIN_CONTEXT_WINDOW)..))]
    pub(crate) context_window: Option<u32>,

    /// The system prompt and tool list: `compact` (a short prompt and the tools a small model
    /// uses well) or `full` (also `prompt_style` in config.toml) [default: compact for
    /// `--provider local`, for a llama.cpp server and for a window under 32768 tokens; else
    /// full].
    #[arg(long = "prompt-style", value_name = "STYLE", value_enum)]
    pub(crate) prompt_style: Option<PromptStyle>,

    /// Continue a session: its conversation, then this prompt. `last` is this workspace's
    /// most recent session.
    #[arg(long, value_name = "ID|last", conflicts_with_all = ["fork", "no_session"])]
    pub(crate) resume: Option<String>,

    /// Start a new session from a copy of this one's conversation (it is left as it was).
    #[arg(long, value_name = "ID", value_parser = SessionId::parse,
          conflicts_with = "no_session")]
    pub(crate) fork: Option<SessionId>,

    /// The id of the new session, chosen in advance (1 to 64 letters, digits, `.`, `_`, `-`).
    #[arg(long = "session-id", value_name = "ID", value_parser = SessionId::parse,
          conflicts_with_all = ["resume", "no_session"])]
    pub(crate) session_id: Option<SessionId>,

    /// Keep no session: nothing of the conversation is written to the data directory.
    #[arg(long = "no-session")]
    pub(crate) no_session: bool,

    /// Let --resume continue a session that belongs to another workspace, in this one.
    #[arg(long = "any-workspace", requires = "resume")]
    pub(crate) any_workspace: bool,

    /// Give up after this many model turns (exit 4).
    #[arg(long = "max-turns", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_turns: Option<u32>,

    /// Record the run's model traffic to this cassette (JSON lines, docs/REPLAY.md): every
    /// request in canonical form and every response as received, specialists' included,
    /// redacted. An existing file is replaced; a symbolic link is refused.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub(crate) record: Option<PathBuf>,

    /// Serve the model's side from this cassette: no network, no key. Tools, rules, hooks,
    /// MCP servers and checks run for real; a request that differs from the recorded one
    /// ends the run with exit 3 (`replay_drift`) and what changed.
    #[arg(long, value_name = "FILE")]
    pub(crate) replay: Option<PathBuf>,

    /// With --replay: hold each request to the recorded conversation's shape only (the same
    /// tool calls in order), not to its every byte, for tests whose tool output changes.
    #[arg(long = "replay-lenient", requires = "replay")]
    pub(crate) replay_lenient: bool,

    /// With --replay: stream at the recorded pace instead of as fast as possible.
    #[arg(long = "replay-timing", requires = "replay")]
    pub(crate) replay_timing: bool,

    /// Print the tools the model would see under these flags, then exit.
    #[arg(long = "list-tools")]
    pub(crate) list_tools: bool,

    /// Print the specialists the `Task` tool can launch, then exit.
    #[arg(long = "list-specialists", conflicts_with = "list_tools")]
    pub(crate) list_specialists: bool,

    /// Print the skills the model would be offered, then exit.
    #[arg(long = "list-skills", conflicts_with_all = ["list_tools", "list_specialists"])]
    pub(crate) list_skills: bool,
}

/// The flags of `zero exec` (by their ids) that `zero review` sets itself or cannot honour:
/// they are refused when given (`review::check_flags` says why), so its help and man page do
/// not list them (clap's completion scripts still offer hidden flags). In the order `ExecArgs`
/// declares them.
pub(crate) const NOT_FOR_REVIEW: [&str; 11] = [
    "worktree",
    "skip_permissions_unsafe",
    "output_format",
    "input_format",
    "output_schema",
    "verify",
    "verify_timeout",
    "verify_retries",
    "list_tools",
    "list_specialists",
    "list_skills",
];

/// `arg` hidden from `zero review`'s help and man page when it is one of [`NOT_FOR_REVIEW`].
fn hidden_in_review(arg: clap::Arg) -> clap::Arg {
    let hidden = NOT_FOR_REVIEW.contains(&arg.get_id().as_str());
    arg.hide(hidden)
}

/// Flags of `zero review`: what to review, how to write the findings, when they fail the
/// review, and every flag of `zero exec` for the run itself.
#[derive(Debug, Args, Clone, PartialEq, Eq)]
#[command(about = about::REVIEW)]
#[command(mut_arg("prompt_words", |arg| arg.help(
    "Extra instructions for the reviewer; a lone `-` reads the diff to review from stdin."
)))]
#[command(mut_args(hidden_in_review))]
pub struct ReviewArgs {
    /// Review the change from the merge base of REF and HEAD to the working tree [default:
    /// the branch's upstream, else origin/HEAD].
    #[arg(long, value_name = "REF", conflicts_with_all = ["commit", "uncommitted"])]
    pub(crate) base: Option<String>,

    /// Review one commit (against its first parent).
    #[arg(long, value_name = "SHA", conflicts_with = "uncommitted")]
    pub(crate) commit: Option<String>,

    /// Review what is not committed yet (staged and unstaged, against HEAD).
    #[arg(long)]
    pub(crate) uncommitted: bool,

    /// How to write the findings: text, json, sarif, github, gitlab or markdown; `FORMAT=FILE`
    /// writes that format to FILE (atomically). Repeatable; what names no file goes to stdout.
    #[arg(long = "format", value_name = "FORMAT[=FILE]", default_value = "text",
          value_parser = FormatTarget::parse)]
    pub(crate) format: Vec<FormatTarget>,

    /// The least severe finding that fails the review with exit code 5 (`never`: findings
    /// never fail it).
    #[arg(long = "fail-on", value_enum, value_name = "SEVERITY", default_value_t = FailOn::Error)]
    pub(crate) fail_on: FailOn,

    /// The run's flags, as `zero exec` takes them.
    #[command(flatten)]
    pub(crate) exec: ExecArgs,
}

/// `zero tasks`: the operator's view of the data directory.
#[derive(Debug, Args)]
#[command(about = about::TASKS)]
pub struct TasksArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TasksCommand,
}

/// The subcommands of `zero tasks`.
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// List tasks, newest first.
    List(TasksListArgs),
    /// Show one task's record.
    Show(TasksShowArgs),
    /// Print a task's raw output (a specialist's is its stream-json).
    Output(TasksOutputArgs),
    /// Stop a running task of a live run (from any shell): SIGTERM, grace period, SIGKILL.
    Stop(TasksStopArgs),
    /// Delete the records and outputs of finished tasks older than a cutoff.
    Gc(TasksGcArgs),
}

/// Flags of `zero tasks list`.
#[derive(Debug, Args)]
pub struct TasksListArgs {
    /// Only the tasks of this run (a run id, like run_20260102030405_0a1b2c).
    #[arg(long = "run", value_name = "RUN_ID", value_parser = RunId::parse)]
    pub(crate) run: Option<RunId>,
    /// Only tasks with this status.
    #[arg(long, value_enum)]
    pub(crate) status: Option<TaskStatusArg>,
    /// One JSON array of records instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Flags of `zero tasks show`.
#[derive(Debug, Args)]
pub struct TasksShowArgs {
    /// The task id (task_ and 12 hex digits).
    #[arg(value_name = "ID", value_parser = TaskId::parse)]
    pub(crate) id: TaskId,
    /// The record as JSON instead of `key: value` lines.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Flags of `zero tasks output`.
#[derive(Debug, Args)]
pub struct TasksOutputArgs {
    /// The task id.
    #[arg(value_name = "ID", value_parser = TaskId::parse)]
    pub(crate) id: TaskId,
    /// Only the last BYTES bytes (read by seeking from the end).
    #[arg(long, value_name = "BYTES")]
    pub(crate) tail: Option<u64>,
    /// Keep printing new output until the task ends (or Ctrl-C).
    #[arg(long)]
    pub(crate) follow: bool,
}

/// Flags of `zero tasks stop`.
#[derive(Debug, Args)]
pub struct TasksStopArgs {
    /// The task id.
    #[arg(value_name = "ID", value_parser = TaskId::parse)]
    pub(crate) id: TaskId,
    /// The final record as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Flags of `zero tasks gc`.
#[derive(Debug, Args)]
pub struct TasksGcArgs {
    /// Only tasks that ended longer ago than this (`30m`, `12h`, `7d`, `2w`).
    #[arg(long = "older-than", value_name = "AGE", default_value = "7d",
          value_parser = duration::parse_duration)]
    pub(crate) older_than: std::time::Duration,
    /// Say what would be deleted, delete nothing.
    #[arg(long = "dry-run")]
    pub(crate) dry_run: bool,
    /// The report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `zero sessions`: the operator's view of the sessions in the data directory.
#[derive(Debug, Args)]
#[command(about = about::SESSIONS)]
pub struct SessionsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: SessionsCommand,
}

/// The subcommands of `zero sessions`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, most recently used first.
    List {
        /// One JSON array of session records instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one session: its record, then its conversation.
    Show {
        /// The session id.
        #[arg(value_name = "ID", value_parser = SessionId::parse)]
        id: SessionId,
        /// `{"session": record, "messages": [...]}` instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session (refused while a run uses it).
    Rm {
        /// The session id.
        #[arg(value_name = "ID", value_parser = SessionId::parse)]
        id: SessionId,
    },
    /// Delete the sessions last used longer ago than a cutoff (never one in use).
    Gc {
        /// Only sessions last used longer ago than this (`12h`, `7d`, `2w`).
        #[arg(long = "older-than", value_name = "AGE", default_value = "30d",
              value_parser = duration::parse_duration)]
        older_than: std::time::Duration,
        /// Say what would be deleted, delete nothing.
        #[arg(long = "dry-run")]
        dry_run: bool,
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `zero worktrees`: the operator's view of the worktrees in the data directory.
#[derive(Debug, Args)]
#[command(about = about::WORKTREES)]
pub struct WorktreesArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: WorktreesCommand,
}

/// The subcommands of `zero worktrees`.
#[derive(Debug, Subcommand)]
pub enum WorktreesCommand {
    /// List worktrees, by name.
    List {
        /// One JSON array of records instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one worktree's record.
    Show {
        /// The worktree's name.
        #[arg(value_name = "NAME", value_parser = WorktreeName::parse)]
        name: WorktreeName,
        /// The record as JSON instead of `key: value` lines.
        #[arg(long)]
        json: bool,
    },
    /// Delete a worktree: its directory, lock, branch and record (refused while a run uses it).
    Rm {
        /// The worktree's name.
        #[arg(value_name = "NAME", value_parser = WorktreeName::parse)]
        name: WorktreeName,
    },
    /// Delete the records (and kept directories) of worktrees that ended longer ago than a
    /// cutoff; their branches stay.
    Gc {
        /// Only worktrees that ended longer ago than this (`12h`, `7d`, `2w`).
        #[arg(long = "older-than", value_name = "AGE", default_value = "7d",
              value_parser = duration::parse_duration)]
        older_than: std::time::Duration,
        /// Interrupted worktrees too (their directories may hold uncommitted work).
        #[arg(long = "include-interrupted")]
        include_interrupted: bool,
        /// Say what would be deleted, delete nothing.
        #[arg(long = "dry-run")]
        dry_run: bool,
    },
}

/// `zero replay`: cassettes read and checked without running anything.
#[derive(Debug, Args)]
#[command(about = about::REPLAY)]
pub struct ReplayArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ReplayCommand,
}

/// The subcommands of `zero replay`.
#[derive(Debug, Subcommand)]
pub enum ReplayCommand {
    /// Print the recorded run as `-o text` printed it (progress on stderr, the answer on
    /// stdout), each specialist after it.
    Show {
        /// The cassette.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Check a cassette: every line's schema, its version, every request's hash; exit 2
    /// naming the first line that is wrong.
    Check {
        /// The cassette.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// A task status, as `--status` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TaskStatusArg {
    /// Started and not seen to end (and its run is alive).
    Running,
    /// Exited 0.
    Completed,
    /// Exited non-zero, or could not start.
    Failed,
    /// Stopped by TaskStop, `zero tasks stop`, or its run ending.
    Killed,
    /// Its run died while it was running.
    Interrupted,
}

/// Flags of the hidden `zero __generate`.
#[derive(Debug, Args)]
#[command(about = about::GENERATE)]
pub struct GenerateArgs {
    /// Directory that receives the shell completions.
    #[arg(long, default_value = "completions")]
    pub(crate) completions: PathBuf,
    /// Directory that receives the man pages.
    #[arg(long, default_value = "man")]
    pub(crate) man: PathBuf,
}

/// `zero __guard`: run a command under a guardian. Internal: zero starts it for every command
/// it runs, with the report pipe as its stdin and the lifeline inherited (see
/// `docs/LIFECYCLE.md`). It is
/// parsed on its own, before the rest of the CLI is built, because it starts once per command
/// and every millisecond of its start-up is a tool turn's.
#[derive(Debug, Parser)]
#[command(name = "zero __guard")]
pub struct GuardArgs {
    /// Milliseconds between SIGTERM and SIGKILL when the command is stopped.
    #[arg(long = "grace-ms", value_name = "MS")]
    pub grace_ms: u64,
    /// Confine the command's writes to the `--write-root`s (with Landlock).
    #[arg(long = "confine-writes")]
    pub confine_writes: bool,
    /// A directory the command may write beneath (repeatable).
    #[arg(long = "write-root", value_name = "DIR")]
    pub write_roots: Vec<PathBuf>,
    /// Allow the command Unix sockets only (with seccomp).
    #[arg(long = "block-network")]
    pub block_network: bool,
    /// Allow the command only the socket families a network client needs (with seccomp).
    #[arg(long = "client-network")]
    pub client_network: bool,
    /// Drop every capability before the command starts, with `no_new_privs`.
    #[arg(long = "drop-privileges")]
    pub drop_privileges: bool,
    /// A deny rule every exec of the command's tree is checked against, as JSON (the rule as
    /// written and its pattern; repeatable).
    #[arg(long = "deny-exec", value_name = "RULE")]
    pub deny_exec: Vec<String>,
    /// Give the command the guardian's stdout as its stdin too: a service's socket, which the
    /// runtime both writes and reads.
    #[arg(long = "stdin-from-stdout")]
    pub stdin_from_stdout: bool,
    /// Start warm: make everything ready, then wait for the command as an order on stdin (a
    /// socket pair the reports go back on too), instead of taking it from the command line.
    #[arg(long = "warm")]
    pub warm: bool,
    /// The program to run, then its arguments (none with `--warm`).
    #[arg(
        required_unless_present = "warm",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}
