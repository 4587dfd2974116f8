//! `-o text`: only the final answer on stdout; a line per tool call and its outcome on stderr,
//! and a spinner while the model thinks — but only when stderr is a terminal that wants it.
//! Every line, on either stream, is [`neutralise`]d: what the model or the workspace wrote in it
//! reaches a terminal or a CI runner as text, never as a command.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use super::event::{CheckStatus, git_restored_message};
use super::{
    CallStatus, EventKind, Family, McpServerInfo, McpState, RuleInfo, SandboxInForce, SkillInfo,
    SpecialistInfo, ToolInfo, Writer, neutralise, word,
};
use crate::environ::names::NO_COLOR;
use crate::hooks::HookDecision;
use crate::redact::Secrets;
use crate::runtime::{TaskKind, TaskStatus};
use crate::tools::policy::FilesystemConfinement;

/// Longest one-line summary of a call's arguments or outcome on stderr.
const SUMMARY_MAX: usize = 160;

/// The human-facing writer.
pub(crate) struct TextWriter {
    secrets: Secrets,
    spinner: Option<Spinner>,
}

impl TextWriter {
    /// A writer that shows a spinner only on an interactive stderr.
    pub(crate) fn new(secrets: Secrets) -> Self {
        let spinner = decorations_allowed().then(Spinner::default);
        TextWriter { secrets, spinner }
    }

    fn stderr_line(&mut self, line: &str) {
        if let Some(spinner) = &mut self.spinner {
            spinner.hide();
        }
        // Progress is best effort: a closed stderr must not end the run.
        let line = self.secrets.apply(line);
        let _ = writeln!(io::stderr().lock(), "{}", neutralise(&line));
    }

    fn stdout(&mut self, text: &str) -> io::Result<()> {
        if let Some(spinner) = &mut self.spinner {
            spinner.hide();
        }
        let mut text = neutralise(&self.secrets.apply(text)).into_owned();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }

    fn waiting_for_model(&mut self) {
        if let Some(spinner) = &mut self.spinner {
            spinner.show("waiting for the model");
        }
    }
}

impl Writer for TextWriter {
    fn write(&mut self, event: &EventKind) -> io::Result<()> {
        match event.family() {
            Family::Run => self.run(event),
            Family::Listing => return self.listing(event),
            Family::Model => return self.model(event),
            Family::Call => self.call(event),
            Family::Task => self.task(event),
        }
        Ok(())
    }
}

/// One method per [`Family`]: each is given only its family's events.
impl TextWriter {
    /// The run's banners, its warnings and errors, and its end.
    fn run(&mut self, event: &EventKind) {
        match event {
            EventKind::RunStart {
                sandbox,
                withheld_env,
                mcp_servers,
                ..
            } => {
                if let Some(sandbox) = sandbox {
                    self.stderr_line(&sandbox_banner(sandbox, withheld_env));
                }
                if !mcp_servers.is_empty() {
                    self.stderr_line(&mcp_banner(mcp_servers));
                }
                self.waiting_for_model();
            }
            EventKind::Warning { message } => {
                self.stderr_line(&format!("zero: warning: {message}"))
            }
            EventKind::GitMetadataRestored { .. } => {
                self.stderr_line(&format!("zero: warning: {}", git_restored_message(event)))
            }
            EventKind::Error { message, .. } => {
                self.stderr_line(&format!("zero: error: {message}"))
            }
            EventKind::RunEnd { .. } => {
                if let Some(spinner) = &mut self.spinner {
                    spinner.hide();
                }
            }
            _ => {}
        }
    }

    /// A listing, on stdout.
    fn listing(&mut self, event: &EventKind) -> io::Result<()> {
        match event {
            EventKind::Tools { tools, rules } => self.stdout(&tool_listing(tools, rules)),
            EventKind::Specialists { specialists } => self.stdout(&specialist_listing(specialists)),
            EventKind::Skills { skills } => self.stdout(&skill_listing(skills)),
            _ => Ok(()),
        }
    }

    /// The final answer on stdout, and on stderr the waits on the model and the compactions
    /// (its text, reasoning and spending are not shown).
    fn model(&mut self, event: &EventKind) -> io::Result<()> {
        match event {
            EventKind::Retry { .. } | EventKind::Waiting { .. } | EventKind::ModelSwitch { .. } => {
                if let Some(line) = event.waiting_line() {
                    self.stderr_line(&line);
                }
                self.waiting_for_model();
            }
            EventKind::Compaction {
                tokens_before,
                tokens_after,
                ..
            } => self.stderr_line(&format!(
                "▸ compacted the conversation to fit the context window: about {tokens_before} \
                 → {tokens_after} tokens"
            )),
            // With --output-schema stdout is the checked JSON value alone, compact.
            EventKind::Final {
                structured: Some(value),
                ..
            } => return self.stdout(&value.to_string()),
            EventKind::Final { text, .. } => return self.stdout(text),
            _ => {}
        }
        Ok(())
    }

    /// A line per call and per outcome, the hooks that objected or rewrote, the plan's
    /// progress (a refusal is in the call's outcome), a line per check and its outcome.
    fn call(&mut self, event: &EventKind) {
        match event {
            EventKind::ToolCall { name, args, .. } => {
                let line = format!("▸ {name}  {}", summarize_args(args));
                self.stderr_line(line.trim_end());
            }
            EventKind::ToolResult { status, output, .. } => {
                let mark = match status {
                    CallStatus::Ok => "✓",
                    CallStatus::Error => "✗",
                };
                self.stderr_line(&format!("  {mark} {}", one_line(output)));
                self.waiting_for_model();
            }
            EventKind::Hook(report) if report.decision != HookDecision::None => {
                self.stderr_line(&format!(
                    "  ▸ {} hook `{}`: {}{}",
                    word(&report.event),
                    one_line(&report.command),
                    word(&report.decision),
                    report
                        .reason
                        .as_deref()
                        .map(|reason| format!(" ({})", one_line(reason)))
                        .unwrap_or_default()
                ));
            }
            EventKind::VerifyStart { command, attempt } => self.stderr_line(&format!(
                "▸ verify  {} (answer {attempt})",
                one_line(command)
            )),
            EventKind::VerifyEnd {
                status,
                exit_code,
                duration_ms,
                ..
            } => {
                let mark = match status {
                    CheckStatus::Passed => "✓",
                    _ => "✗",
                };
                let code = exit_code
                    .filter(|code| *code != 0)
                    .map(|code| format!(", exit {code}"))
                    .unwrap_or_default();
                self.stderr_line(&format!(
                    "  {mark} {}{code} ({:.1}s)",
                    word(status),
                    *duration_ms as f64 / 1000.0
                ));
                self.waiting_for_model();
            }
            EventKind::Plan { steps } => {
                let done = steps
                    .iter()
                    .filter(|s| s.status == crate::tools::StepStatus::Completed)
                    .count();
                self.stderr_line(&format!("▸ plan  {done}/{} steps done", steps.len()));
            }
            _ => {}
        }
    }

    /// A line when a background task starts and when it ends.
    fn task(&mut self, event: &EventKind) {
        match event {
            EventKind::TaskStarted { task_id, kind, .. } => self.stderr_line(&format!(
                "▸ task {task_id} started ({})",
                one_line(kind.label())
            )),
            EventKind::TaskFinished {
                task_id,
                kind,
                status,
                exit_code,
            } => self.stderr_line(&task_finished_line(task_id, kind, *status, *exit_code)),
            _ => {}
        }
    }
}

/// One aligned line per tool: name, side effect, and the first sentence of its description;
/// then the rules in force.
fn tool_listing(tools: &[ToolInfo], rules: &[RuleInfo]) -> String {
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    let effects = tools
        .iter()
        .map(|t| word(&t.side_effect).len() + 2)
        .max()
        .unwrap_or(0);
    let mut listing = String::new();
    for tool in tools {
        let effect = format!("[{}]", word(&tool.side_effect));
        listing.push_str(&format!(
            "{:width$}  {effect:effects$}  {}\n",
            tool.name,
            first_sentence(&tool.description),
        ));
    }
    if tools.is_empty() {
        listing.push_str("(no tools are enabled)\n");
    }
    listing + &rule_listing(rules)
}

/// The rules in force after the tools: one `allow RULE (source)` line each.
fn rule_listing(rules: &[RuleInfo]) -> String {
    if rules.is_empty() {
        return String::new();
    }
    let lines: String = rules
        .iter()
        .map(|rule| {
            format!(
                "  {:5}  {}  ({})\n",
                word(&rule.effect),
                rule.rule,
                rule.source
            )
        })
        .collect();
    format!("\nrules:\n{lines}")
}

/// `▸ task ID STATUS[, exit code N] (what it ran)`: the exit code only when it did not
/// complete.
fn task_finished_line(
    task_id: &str,
    kind: &TaskKind,
    status: TaskStatus,
    exit_code: Option<i32>,
) -> String {
    let code = match exit_code {
        Some(code) if status != TaskStatus::Completed => format!(", exit code {code}"),
        _ => String::new(),
    };
    format!(
        "▸ task {task_id} {}{code} ({})",
        word(&status),
        one_line(kind.label())
    )
}

/// One aligned line per specialist: name, source, tools, and the first sentence of its
/// description.
fn specialist_listing(specialists: &[SpecialistInfo]) -> String {
    let rows: Vec<[String; 4]> = specialists
        .iter()
        .map(|s| {
            let tools = if s.tools.is_empty() {
                "none".to_string()
            } else {
                s.tools.join(",")
            };
            let summary = first_sentence(&s.description);
            [s.name.clone(), s.source.clone(), tools, summary]
        })
        .collect();
    aligned(&rows)
}

/// One aligned line per skill: name, source, and the first sentence of its description.
fn skill_listing(skills: &[SkillInfo]) -> String {
    let rows: Vec<[String; 3]> = skills
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                s.source.clone(),
                first_sentence(&s.description),
            ]
        })
        .collect();
    aligned(&rows)
}

/// `rows` as lines of columns two spaces apart, every column but the last padded to its
/// widest cell.
fn aligned<const N: usize>(rows: &[[String; N]]) -> String {
    // `format!` pads by characters, so widths count characters too (paths may be non-ASCII).
    let widths: [usize; N] = std::array::from_fn(|column| {
        rows.iter()
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    });
    let mut listing = String::new();
    for (last, padded) in rows.iter().filter_map(|row| row.split_last()) {
        for (cell, width) in padded.iter().zip(widths) {
            listing.push_str(&format!("{cell:width$}  "));
        }
        listing.push_str(last);
        listing.push('\n');
    }
    listing
}

/// Spinners and colour only on a terminal, and never when `NO_COLOR` or `TERM=dumb` says no.
fn decorations_allowed() -> bool {
    io::stderr().is_terminal()
        && std::env::var_os(NO_COLOR).is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// An elapsed-time spinner on stderr, created on first use.
#[derive(Default)]
struct Spinner {
    bar: Option<ProgressBar>,
}

impl Spinner {
    fn show(&mut self, message: &'static str) {
        self.hide();
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(message);
        bar.enable_steady_tick(Duration::from_millis(100));
        self.bar = Some(bar);
    }

    fn hide(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// The most telling argument of a call, on one line: a command, a path, a pattern.
fn summarize_args(args: &Value) -> String {
    let text = ["command", "path", "pattern", "name"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| match args {
            Value::Object(map) if map.is_empty() => String::new(),
            other => other.to_string(),
        });
    one_line(&text)
}

/// The first line of `text`, shortened to [`SUMMARY_MAX`] bytes.
fn one_line(text: &str) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let cut = crate::tools::text::prefix_at_boundary(first, SUMMARY_MAX);
    if cut.len() < first.len() {
        format!("{cut}…")
    } else {
        cut.to_string()
    }
}

/// The first sentence of a description, for one-line listings: up to the first ". " that is
/// followed by a capital letter and not inside backticks.
fn first_sentence(description: &str) -> String {
    let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut in_code = false;
    let chars: Vec<(usize, char)> = flat.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        match c {
            '`' => in_code = !in_code,
            '.' if !in_code
                && chars.get(i + 1).is_some_and(|(_, n)| *n == ' ')
                && chars
                    .get(i + 2)
                    .is_some_and(|(_, n)| n.is_uppercase() || *n == '`') =>
            {
                return flat[..=at].to_string();
            }
            _ => {}
        }
    }
    flat
}

/// The stderr line naming the run's MCP servers and how each start went.
fn mcp_banner(servers: &[McpServerInfo]) -> String {
    let states: Vec<String> = servers
        .iter()
        .map(|server| match server.state {
            McpState::Ready => format!("{} ({} tools)", server.name, server.tools),
            McpState::Failed => format!("{} {}", server.name, word(&server.state)),
        })
        .collect();
    format!("zero: MCP servers: {}", states.join(", "))
}

/// The one line that says what confines the run's commands.
fn sandbox_banner(sandbox: &SandboxInForce, withheld: &[String]) -> String {
    let writes = match sandbox.filesystem {
        FilesystemConfinement::None => "commands may write anywhere".to_string(),
        tool @ FilesystemConfinement::Landlock => {
            format!("commands' writes confined ({})", word(&tool))
        }
    };
    let withheld = match withheld.len() {
        0 => String::new(),
        n => format!(
            ", {n} variable{} withheld: {}",
            if n == 1 { "" } else { "s" },
            withheld.join(" ")
        ),
    };
    format!(
        "zero: sandbox: {writes}, network {}{withheld}",
        word(&sandbox.network)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_skips_code_and_abbreviations() {
        assert_eq!(first_sentence("Read a file. Then more."), "Read a file.");
        assert_eq!(
            first_sentence("Search (escape `( ) . *` first; e.g. this). Next one."),
            "Search (escape `( ) . *` first; e.g. this)."
        );
        assert_eq!(first_sentence("No period"), "No period");
    }
}
