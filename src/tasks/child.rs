//! Everything about a child `zero exec`, from both sides: how a parent writes a specialist's
//! command line, environment and private files, how the child recognises that it is one and
//! takes the key it was handed, and how the parent reads the child's stream-json back.
//!
//! The child gets everything through channels that stay private: the provider's endpoint and
//! model through its environment, its API key and its prompt through 0600 files in the run's
//! private directory. The key never travels in the environment, which every command below the
//! child would inherit: the child reads the file and removes it at start
//! ([`Parent::take_handed_key`]), and the spawn door withholds the variable naming it from
//! commands.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Specialist;
use crate::cassette::Link;
use crate::cli::ExecArgs;
use crate::environ::names::{ZERO_CASSETTE, ZERO_DEADLINE_UNIX_MS, ZERO_PARENT_RUN};
use crate::environ::names::{ZERO_HANDED_KEY_FILE, ZERO_USAGE_REPORT_FILE};
use crate::output::{InputFormat, OutputFormat};
use crate::provider::ReasoningEffort;
use crate::rules::InUse;
use crate::runtime::{Launch, RunId};
use crate::skills::Finding;
use crate::tools::{ForSpecialists, ToolContext, ToolId};
use crate::usage::Limits;

/// The longest key file a child accepts: far beyond any real key, so a wrong path cannot make
/// it read without bound.
const HANDED_KEY_MAX: u64 = 64 * 1024;

/// The private file holding a child's prompt (see [`private_file_name`]).
pub(super) const PROMPT_FILE: &str = "prompt";
/// The private file holding a child's key (see [`private_file_name`]).
pub(super) const KEY_FILE: &str = "key";
/// The private file a child reports its spending to (see [`private_file_name`]).
pub(super) const USAGE_FILE: &str = "usage";
/// The private file holding the schema a child's answer must satisfy (see
/// [`private_file_name`]).
pub(super) const SCHEMA_FILE: &str = "schema";
/// The private file holding the MCP servers a child starts (see [`private_file_name`]).
pub(super) const MCP_FILE: &str = "mcp";
/// The private file holding the hooks a child runs (see [`private_file_name`]).
pub(super) const HOOKS_FILE: &str = "hooks";

/// The launching run's hooks as a specialist gets them: every one (a specialist never has
/// fewer hooks than its parent), written in zero's shape, and `--hooks-fail-open`.
#[derive(Debug, Clone)]
pub(crate) struct HandedHooks {
    /// The hooks file's text (`hooks::HookSet::to_file_text`).
    pub(crate) text: String,
    /// Whether a failing hook lets the call through.
    pub(crate) fail_open: bool,
}

/// The launching run's permission rules as a specialist gets them: every one, written as
/// `--allow` and `--deny` flags. A specialist reads no rules of its own (not config.toml's,
/// which are among these), and no manifest names any, so its rules are exactly its parent's:
/// never fewer, never wider.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandedRules {
    /// The allow rules, as written.
    pub(crate) allow: Vec<String>,
    /// The deny rules, as written (Claude Code's `ask` rules among them).
    pub(crate) deny: Vec<String>,
}

/// The launching run's skills as a specialist may get them: those its manifest lists that the
/// launching run offers, found where the launching run found them — never another skill.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandedSkills {
    /// The skills the launching run offers (`None`, or none found, with `--no-skills`).
    pub(crate) found: Option<Arc<Finding>>,
    /// The launching run's `--skills-dir` directories.
    pub(crate) dirs: Vec<PathBuf>,
}

impl HandedSkills {
    /// The skills of `wanted` (a manifest's list) the launching run offers.
    fn for_specialist(&self, wanted: &[String]) -> Vec<String> {
        let offered = self.found.as_ref().map_or(&[][..], |found| found.skills());
        wanted
            .iter()
            .filter(|name| offered.iter().any(|skill| &skill.name == *name))
            .cloned()
            .collect()
    }
}

/// The run that launched this process, when this process is a specialist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parent {
    /// [`ZERO_PARENT_RUN`] as the parent set it (checked only where it decides a path).
    run: OsString,
    /// [`ZERO_HANDED_KEY_FILE`]: the file the parent handed the key over in, if any.
    handed_key: Option<PathBuf>,
    /// [`ZERO_DEADLINE_UNIX_MS`]: when the parent's run must end, if it has a deadline.
    deadline: Option<SystemTime>,
    /// [`ZERO_USAGE_REPORT_FILE`]: where to report this run's spending, if the parent follows it.
    usage_report: Option<PathBuf>,
    /// [`ZERO_CASSETTE`]: the parent's cassette and this run's tag in it, if it has one.
    cassette: Option<OsString>,
}

impl Parent {
    /// The parent named by the environment `var` looks up; `None` for a run of its own.
    pub(crate) fn from_env(var: impl Fn(&str) -> Option<OsString>) -> Option<Parent> {
        let run = var(ZERO_PARENT_RUN).filter(|value| !value.is_empty())?;
        let deadline = var(ZERO_DEADLINE_UNIX_MS)
            .and_then(|ms| ms.to_str()?.parse::<u64>().ok())
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
        Some(Parent {
            run,
            handed_key: var(ZERO_HANDED_KEY_FILE).map(PathBuf::from),
            deadline,
            usage_report: var(ZERO_USAGE_REPORT_FILE).map(PathBuf::from),
            cassette: var(ZERO_CASSETTE),
        })
    }

    /// The cassette the parent shares with this run, if it records or replays one.
    pub(crate) fn cassette(&self) -> Result<Option<Link>, String> {
        let Some(value) = &self.cassette else {
            return Ok(None);
        };
        let text = value
            .to_str()
            .ok_or_else(|| format!("{ZERO_CASSETTE} is not UTF-8"))?;
        Link::from_env(text)
            .map(Some)
            .map_err(|e| format!("{ZERO_CASSETTE}: {e}"))
    }

    /// When the parent's run must end, if it has a deadline: this run ends by then too.
    pub(crate) fn deadline(&self) -> Option<SystemTime> {
        self.deadline
    }

    /// The file to report this run's spending to, when the parent follows it; an error when
    /// the variable names a file that is not one a parent run would have this run write.
    pub(crate) fn usage_report(&self) -> Result<Option<PathBuf>, String> {
        match &self.usage_report {
            Some(path) if !self.is_private_path(path, USAGE_FILE) => Err(format!(
                "{ZERO_USAGE_REPORT_FILE} names {}, which is not a report file of a parent run; \
                 nothing was written to it",
                path.display()
            )),
            report => Ok(report.clone()),
        }
    }

    /// Takes the key the parent handed over: reads the file [`ZERO_HANDED_KEY_FILE`] names and
    /// removes it, so nothing the child starts can find it. `Ok(None)` when no key was handed
    /// over.
    pub(crate) fn take_handed_key(&self) -> Result<Option<String>, String> {
        let Some(path) = &self.handed_key else {
            return Ok(None);
        };
        // The variable is input like any other, and the file it names is removed: only what a
        // parent run writes is taken.
        if !self.is_private_path(path, KEY_FILE) {
            return Err(format!(
                "{ZERO_HANDED_KEY_FILE} names {}, which is not a key file a parent run wrote; \
                 it was left alone",
                path.display()
            ));
        }
        let unreadable = |e: std::io::Error| {
            format!(
                "cannot read the API key the parent run handed over in {}: {e}",
                path.display()
            )
        };
        let mut key = String::new();
        std::fs::File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .and_then(|file| file.take(HANDED_KEY_MAX).read_to_string(&mut key))
            .map_err(unreadable)?;
        std::fs::remove_file(path).map_err(unreadable)?;
        Ok(Some(key))
    }

    /// Whether `path` is one of the parent run's private files holding `what`: an absolute
    /// path, in the run directory of the parent's run (a directory named by its run id), under
    /// a name [`private_file_name`] gives such a file.
    fn is_private_path(&self, path: &Path, what: &str) -> bool {
        let parent_run = self.run.to_str().and_then(|run| RunId::parse(run).ok());
        let dir = path.parent().and_then(Path::file_name);
        let name = path.file_name().and_then(OsStr::to_str);
        path.is_absolute()
            && parent_run.is_some_and(|run| dir == Some(run.as_str().as_ref()))
            && name.is_some_and(|name| is_private_file_name(name, what))
    }
}

/// The name of the `number`th private file holding `what` in the run directory.
pub(super) fn private_file_name(what: &str, number: u64) -> String {
    format!("task-{what}-{number}")
}

/// Whether `name` is exactly what [`private_file_name`] makes for `what`.
fn is_private_file_name(name: &str, what: &str) -> bool {
    name.strip_prefix("task-")
        .and_then(|rest| rest.strip_prefix(what))
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|number| number.parse::<u64>().is_ok_and(|n| n.to_string() == number))
}

/// The parent's provider configuration as a child resolves it: the variables for its endpoint
/// (see `ProviderConfig::child_variables`), the key, which is handed over in a file instead,
/// and the model choices that travel as flags (`--reasoning-effort`, `--fallback-model`).
#[derive(Clone)]
pub(crate) struct ChildEnv {
    vars: Vec<(&'static str, String)>,
    api_key: Option<String>,
    choices: ModelChoices,
}

/// How a child's model works, as its parent's does unless the specialist says otherwise.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelChoices {
    /// The parent's reasoning effort; a specialist's manifest may name its own.
    pub(crate) reasoning_effort: Option<ReasoningEffort>,
    /// The parent's fallback models, in order, as `--fallback-model` takes them.
    pub(crate) fallback_models: Vec<String>,
    /// The prompt style the parent's caller chose (`--prompt-style`, config.toml), if any.
    pub(crate) prompt_style: Option<crate::tools::PromptStyle>,
}

impl ChildEnv {
    /// The provider of a child: `vars` set in its environment, `api_key` handed over in a
    /// private file, `choices` written as flags.
    pub(crate) fn new(
        vars: Vec<(&'static str, String)>,
        api_key: Option<String>,
        choices: ModelChoices,
    ) -> Self {
        ChildEnv {
            vars,
            api_key,
            choices,
        }
    }

    /// The key to hand over in a private file, if the parent has one.
    pub(super) fn api_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }
}

/// What one child run is made of.
pub(super) struct ChildRun<'a> {
    /// The specialist it runs.
    pub(crate) specialist: &'a Specialist,
    /// Its prompt, in a private file.
    pub(crate) prompt_file: &'a Path,
    /// The private file holding the schema the child's answer must satisfy, if the call
    /// gave one.
    pub(crate) output_schema: Option<&'a Path>,
    /// The MCP servers its tools name, in a private file (`.mcp.json` format), if any.
    pub(crate) mcp_config: Option<&'a Path>,
    /// Its key, in a private file, when the parent has one.
    pub(crate) key_file: Option<&'a Path>,
    /// The parent's hooks, in a private file, with `--hooks-fail-open`, when it has any.
    pub(crate) hooks: Option<(&'a Path, bool)>,
    /// The parent's permission rules.
    pub(crate) rules: &'a HandedRules,
    /// The parent's skills.
    pub(crate) skills: &'a HandedSkills,
    /// The parent's skills in use when the child is launched: they narrow the child too.
    pub(crate) in_use: Vec<InUse>,
    /// The launching call's context: the workspace and the policy the child inherits.
    pub(crate) ctx: &'a ToolContext,
    /// Where the child works: the launching call's workspace, or the same place in the
    /// child's own worktree when it is isolated.
    pub(crate) workspace: &'a Path,
    /// What an isolated child's commands may write beyond its worktree: the git directory
    /// entries its commits need. Empty otherwise.
    pub(crate) git_paths: &'a [PathBuf],
    /// The parent's provider.
    pub(crate) provider: &'a ChildEnv,
    /// The parent's run id, handed over in [`ZERO_PARENT_RUN`].
    pub(crate) parent_run: &'a RunId,
    /// What is left of the parent's budget: the child's own.
    pub(crate) allowance: Limits,
    /// Where the child reports its spending, for the parent's totals and budget.
    pub(crate) usage_report: &'a Path,
    /// The checks its work must pass: its specialist's and the `Task` call's.
    pub(crate) verify: &'a [String],
    /// The run's cassette, with the child's own task tag, in [`ZERO_CASSETTE`].
    pub(crate) cassette: Option<&'a Link>,
}

impl ChildRun<'_> {
    /// The child's flags. Every `zero exec` flag is decided here (the struct is written out,
    /// so a new flag must be): the child gets the launching run's effective `--auto` level and
    /// roots, sandbox, network and kept variables, never more, its specialist's tools and
    /// model, and stream-json on stdout.
    fn args(&self) -> ExecArgs {
        let skills = self.skills.for_specialist(&self.specialist.skills);
        let (enabled_tools, disabled_tools) = tool_flags(
            &self.specialist.tools,
            &self.specialist.mcp_tools,
            !skills.is_empty(),
        );
        ExecArgs {
            prompt_words: Vec::new(),
            prompt: Vec::new(),
            file: Some(self.prompt_file.to_path_buf()),
            // The task's prompt is text; the parent's images are its own prompt's.
            image: Vec::new(),
            cwd: Some(self.workspace.to_path_buf()),
            // A specialist works in its parent's workspace, or in the worktree made for it.
            worktree: None,
            add_dir: [self.ctx.policy.extra_roots(), self.git_paths].concat(),
            auto: self.ctx.policy.autonomy(),
            skip_permissions_unsafe: false,
            // The same sandbox, network and environment rules as the parent's commands.
            sandbox: Some(self.ctx.policy.commands().mode),
            network: self.ctx.policy.commands().network,
            env_keep: self.ctx.policy.commands().env_keep.clone(),
            enabled_tools,
            disabled_tools,
            // The parent's rules, every one of them; none read from a file of the child's.
            allow: self.rules.allow.clone(),
            deny: self.rules.deny.clone(),
            rules: None,
            // A specialist starts only the MCP servers its tools name, from the launching
            // run's configuration; none from config.toml or the workspace of its own.
            mcp_config: self.mcp_config.map(Path::to_path_buf).into_iter().collect(),
            mcp_project: false,
            strict_mcp_config: true,
            // The parent's hooks, all of them: config.toml's are among them, and a specialist
            // reads no hooks of its own.
            hooks: self
                .hooks
                .map(|(file, _)| file.to_path_buf())
                .into_iter()
                .collect(),
            hooks_fail_open: self.hooks.is_some_and(|(_, fail_open)| fail_open),
            // The skills its manifest lists that the parent offers, found where the parent
            // found them; none without such a list (a specialist inherits no skills).
            skills_dir: match skills.is_empty() {
                true => Vec::new(),
                false => self.skills.dirs.clone(),
            },
            no_skills: skills.is_empty(),
            // What the parent's skills in use leave it, the child's from its start.
            skill_in_use: self.in_use.iter().map(InUse::flag_value).collect(),
            skill: skills,
            // Fetching the web is the caller's choice for the run, not a specialist's.
            web_fetch: false,
            output_format: OutputFormat::StreamJson,
            input_format: InputFormat::Text,
            output_last_message: None,
            output_schema: self.output_schema.map(Path::to_path_buf),
            schema_retries: None,
            // Its own checks only: config.toml's are the parent's, for the whole run's work.
            verify: self.verify.to_vec(),
            verify_timeout: None,
            verify_retries: None,
            // What blocks a specialist shows in its result; the parent's own --strict judges
            // the specialist's failure.
            strict: false,
            // A specialist's conversation lives in its task's output, not in a session.
            resume: None,
            fork: None,
            session_id: None,
            no_session: true,
            any_workspace: false,
            model: self.specialist.model.clone(),
            // The provider travels in the environment, with zero's own variables.
            provider: None,
            base_url: None,
            max_output_tokens: None,
            // The specialist's own effort, else its parent's; the parent's fallback chain.
            reasoning_effort: self
                .specialist
                .reasoning_effort
                .or(self.provider.choices.reasoning_effort),
            fallback_model: self.provider.choices.fallback_models.clone(),
            max_turns: None,
            // The deadline travels as an absolute time, in the environment.
            timeout: None,
            max_tokens: self.allowance.tokens,
            max_cost_usd: self.allowance.cost,
            // The child's model may differ: it finds its own window, from its own config.
            context_window: None,
            // Its parent's, when the parent's caller chose one; else its server decides.
            prompt_style: self.provider.choices.prompt_style,
            // The cassette travels in the environment, with the child's task tag.
            record: None,
            replay: None,
            replay_lenient: false,
            replay_timing: false,
            list_tools: false,
            list_specialists: false,
            list_skills: false,
        }
    }

    /// The `zero exec` command line and environment that run the specialist.
    pub(crate) fn launch(&self, program: PathBuf) -> Launch {
        let mut args: Vec<OsString> = vec!["exec".into()];
        args.extend(self.args().to_argv());
        let mut env: Vec<(OsString, OsString)> = self
            .provider
            .vars
            .iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect();
        env.push((ZERO_PARENT_RUN.into(), self.parent_run.as_str().into()));
        if let Some(deadline) = self.ctx.policy.deadline() {
            let ms = deadline
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis();
            env.push((ZERO_DEADLINE_UNIX_MS.into(), ms.to_string().into()));
        }
        if let Some(key_file) = self.key_file {
            env.push((ZERO_HANDED_KEY_FILE.into(), key_file.into()));
        }
        env.push((ZERO_USAGE_REPORT_FILE.into(), self.usage_report.into()));
        if let Some(link) = self.cassette {
            env.push((ZERO_CASSETTE.into(), link.to_env().into()));
        }
        // The child is zero: it must reach the model and its data directory, and it confines
        // its own commands as its flags (the parent's, never wider) say.
        Launch::program(program, args, self.workspace.to_path_buf(), env).unconfined()
    }
}

/// The tool filters for a child, as `--enabled-tools` and `--disabled-tools` lists: its tools
/// (plus `TaskOutput` and `TaskStop` when it has `bash`, so it can manage its own background
/// shells, and `Skill` when it has `skills`) and its MCP tools. With no tools at all every
/// tool is disabled, since an empty `--enabled-tools` would mean "no filter".
fn tool_flags(
    tools: &[&'static str],
    mcp_tools: &[String],
    skills: bool,
) -> (Vec<String>, Vec<String>) {
    let mut enabled = tools.to_vec();
    if tools.contains(&ToolId::Bash.name()) {
        enabled.extend(ToolId::for_specialists(ForSpecialists::WithShell).map(|id| id.name()));
    }
    if skills {
        enabled.extend(ToolId::for_specialists(ForSpecialists::WithSkills).map(|id| id.name()));
    }
    enabled.extend(mcp_tools.iter().map(String::as_str));
    if enabled.is_empty() {
        let all: Vec<&str> = ToolId::ALL.iter().map(|id| id.name()).collect();
        return (Vec::new(), vec![all.join(",")]);
    }
    (vec![enabled.join(",")], Vec::new())
}

/// The child's prompt: the specialist's instructions, the task, and how to report (in the
/// shape of its output schema, when it has one).
pub(super) fn envelope(specialist: &Specialist, task: &str, typed: bool) -> String {
    let report = if typed {
        "End with a final answer that is the JSON value the final answer format asks for"
    } else {
        "End with a final answer that summarises what you did and what you found"
    };
    format!(
        "{instructions}\n\n## Assigned task\n\n{task}\n\n## Reporting\n\nYou run headless: \
         nobody answers questions, so state your assumptions and carry on. {report}; it is all \
         the agent that launched you will see.\n",
        instructions = specialist.prompt.trim(),
        task = task.trim(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_zero_gives_its_private_files_are_taken_for_them() {
        for number in [0, 7, 1234] {
            assert!(is_private_file_name(
                &private_file_name(KEY_FILE, number),
                KEY_FILE
            ));
        }
        for stray in [
            "task-key-",
            "task-key-+1",
            "task-key-01",
            "task-key-1x",
            "task-prompt-1",
            "thesis",
            "..",
        ] {
            assert!(!is_private_file_name(stray, KEY_FILE), "{stray}");
        }
    }

    #[test]
    fn a_child_gets_its_tools_and_task_tools_only_with_bash() {
        assert_eq!(
            tool_flags(&["glob", "read_file"], &[], false),
            (vec!["glob,read_file".to_string()], vec![])
        );
        assert_eq!(
            tool_flags(&[], &["mcp__gh__*".to_string()], false),
            (vec!["mcp__gh__*".to_string()], vec![])
        );
        assert_eq!(
            tool_flags(&["bash", "read_file"], &[], false),
            (
                vec!["bash,read_file,TaskOutput,TaskStop".to_string()],
                vec![]
            )
        );
        assert_eq!(
            tool_flags(&[], &[], true),
            (vec!["Skill".to_string()], vec![])
        );
        let (enabled, disabled) = tool_flags(&[], &[], false);
        assert!(enabled.is_empty());
        for tool in ["read_file", "TaskStop", "Skill", "web_fetch"] {
            assert!(disabled[0].contains(tool), "{tool}");
        }
    }
}
