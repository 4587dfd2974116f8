//! Writing `zero exec` flags back as a command line: how a run starts a specialist, a child
//! `zero exec` (see `tasks::child`). The flags are taken from the same [`ExecArgs`] the CLI
//! parses, and each value is written the way clap reads it back (a value enum by its
//! `ValueEnum` name), so the child parses exactly what the parent meant; a test parses every
//! flag back.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::ExecArgs;
use crate::session::SessionId;

impl ExecArgs {
    /// The arguments after `zero exec` that parse back into exactly these flags. Prompt words
    /// come last, after `--`, so a word that starts with `-` stays a word.
    // One exhaustive destructure, a line or two per flag, so a new flag is a compile error
    // here until it is handed on: split, the list of flags would read apart.
    #[allow(clippy::too_many_lines)]
    pub(crate) fn to_argv(&self) -> Vec<OsString> {
        let mut argv = Argv::default();
        let ExecArgs {
            prompt_words,
            prompt,
            file,
            image,
            cwd,
            worktree,
            add_dir,
            auto,
            skip_permissions_unsafe,
            sandbox,
            network,
            env_keep,
            enabled_tools,
            disabled_tools,
            allow,
            deny,
            rules,
            mcp_config,
            mcp_project,
            strict_mcp_config,
            hooks,
            hooks_fail_open,
            skills_dir,
            skill,
            no_skills,
            skill_in_use,
            web_fetch,
            output_format,
            input_format,
            output_last_message,
            output_schema,
            schema_retries,
            verify,
            verify_timeout,
            verify_retries,
            strict,
            model,
            provider,
            base_url,
            max_output_tokens,
            reasoning_effort,
            fallback_model,
            max_turns,
            timeout,
            max_tokens,
            max_cost_usd,
            context_window,
            prompt_style,
            resume,
            fork,
            session_id,
            no_session,
            any_workspace,
            record,
            replay,
            replay_lenient,
            replay_timing,
            list_tools,
            list_specialists,
            list_skills,
        } = self;
        argv.values("--prompt", prompt);
        argv.path("--file", file.as_deref());
        argv.paths("--image", image);
        argv.path("--cwd", cwd.as_deref());
        argv.optional_value("--worktree", worktree.as_ref());
        argv.paths("--add-dir", add_dir);
        argv.choice("--auto", Some(auto));
        argv.switch("--skip-permissions-unsafe", *skip_permissions_unsafe);
        argv.choice("--sandbox", sandbox.as_ref());
        argv.switch("--network", *network);
        argv.values("--env-keep", env_keep);
        argv.values("--enabled-tools", enabled_tools);
        argv.values("--disabled-tools", disabled_tools);
        argv.values("--allow", allow);
        argv.values("--deny", deny);
        argv.path("--rules", rules.as_deref());
        argv.paths("--mcp-config", mcp_config);
        argv.switch("--mcp-project", *mcp_project);
        argv.switch("--strict-mcp-config", *strict_mcp_config);
        argv.paths("--hooks", hooks);
        argv.switch("--hooks-fail-open", *hooks_fail_open);
        argv.paths("--skills-dir", skills_dir);
        argv.values("--skill", skill);
        argv.switch("--no-skills", *no_skills);
        argv.values("--skill-in-use", skill_in_use);
        argv.switch("--web-fetch", *web_fetch);
        argv.choice("--output-format", Some(output_format));
        argv.choice("--input-format", Some(input_format));
        argv.path("--output-last-message", output_last_message.as_deref());
        argv.path("--output-schema", output_schema.as_deref());
        argv.shown("--schema-retries", *schema_retries);
        argv.values("--verify", verify);
        argv.shown(
            "--verify-timeout",
            verify_timeout.map(humantime::format_duration),
        );
        argv.shown("--verify-retries", *verify_retries);
        argv.switch("--strict", *strict);
        argv.shown("--model", model.as_ref());
        argv.choice("--provider", provider.as_ref());
        argv.shown("--base-url", base_url.as_ref());
        argv.shown("--max-output-tokens", *max_output_tokens);
        argv.choice("--reasoning-effort", reasoning_effort.as_ref());
        argv.values("--fallback-model", fallback_model);
        argv.shown("--max-turns", *max_turns);
        argv.shown("--timeout", timeout.map(humantime::format_duration));
        argv.shown("--max-tokens", *max_tokens);
        argv.shown("--max-cost-usd", max_cost_usd.as_ref());
        argv.shown("--context-window", *context_window);
        argv.choice("--prompt-style", prompt_style.as_ref());
        argv.shown("--resume", resume.as_ref());
        argv.shown("--fork", fork.as_ref().map(SessionId::as_str));
        argv.shown("--session-id", session_id.as_ref().map(SessionId::as_str));
        argv.switch("--no-session", *no_session);
        argv.switch("--any-workspace", *any_workspace);
        argv.path("--record", record.as_deref());
        argv.path("--replay", replay.as_deref());
        argv.switch("--replay-lenient", *replay_lenient);
        argv.switch("--replay-timing", *replay_timing);
        argv.switch("--list-tools", *list_tools);
        argv.switch("--list-specialists", *list_specialists);
        argv.switch("--list-skills", *list_skills);
        if !prompt_words.is_empty() {
            argv.0.push("--".into());
            argv.0.extend(prompt_words.iter().map(OsString::from));
        }
        argv.0
    }
}

/// A command line being written, flag by flag.
#[derive(Default)]
struct Argv(Vec<OsString>);

impl Argv {
    /// A flag whose value is optional (`--worktree [NAME]`): `--flag=value`, the bare flag, or
    /// nothing when it is not set.
    fn optional_value(&mut self, flag: &str, value: Option<&Option<String>>) {
        match value {
            Some(Some(value)) => self.value(flag, value),
            Some(None) => self.switch(flag, true),
            None => {}
        }
    }

    /// `--flag=value`, in one word: a value that starts with `-` stays a value.
    fn joined(&mut self, flag: &str, value: &OsStr) {
        let mut word = OsString::from(flag);
        word.push("=");
        word.push(value);
        self.0.push(word);
    }

    fn value(&mut self, flag: &str, value: &str) {
        self.joined(flag, value.as_ref());
    }

    /// `--flag=value` when there is a value, written as it displays (a number, a duration,
    /// a text).
    fn shown(&mut self, flag: &str, value: Option<impl std::fmt::Display>) {
        if let Some(value) = value {
            self.value(flag, &value.to_string());
        }
    }

    /// `--flag=value` for each of `values`, in order.
    fn values(&mut self, flag: &str, values: &[String]) {
        for value in values {
            self.value(flag, value);
        }
    }

    /// `--flag=path` for each of `paths`, in order.
    fn paths(&mut self, flag: &str, paths: &[PathBuf]) {
        for path in paths {
            self.path(flag, Some(path));
        }
    }

    fn path(&mut self, flag: &str, path: Option<&Path>) {
        if let Some(path) = path {
            self.joined(flag, path.as_os_str());
        }
    }

    fn switch(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.into());
        }
    }

    /// A value enum, written as its `ValueEnum` name: the word clap reads back.
    fn choice(&mut self, flag: &str, choice: Option<&impl ValueEnum>) {
        if let Some(value) = choice.and_then(ValueEnum::to_possible_value) {
            self.value(flag, value.get_name());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};
    use crate::output::{InputFormat, OutputFormat};
    use crate::provider::ProviderKind;
    use crate::runtime::sandbox::SandboxMode;
    use crate::session::SessionId;
    use crate::tools::policy::Autonomy;

    fn parse_back(args: &ExecArgs) -> ExecArgs {
        let argv = [OsString::from("zero"), "exec".into()]
            .into_iter()
            .chain(args.to_argv());
        match Cli::try_parse_from(argv)
            .expect("the written flags parse")
            .command
        {
            Command::Exec(parsed) => *parsed,
            other => panic!("parsed as {other:?}"),
        }
    }

    /// Every field set away from its default: a flag added to ExecArgs fails to compile here
    /// until it is written by `to_argv` and checked.
    fn every_flag_set() -> ExecArgs {
        ExecArgs {
            prompt_words: vec!["-fix".into(), "the test".into()],
            prompt: vec!["first".into(), "--second".into()],
            file: Some(PathBuf::from("/run/task-prompt-0")),
            cwd: Some(PathBuf::from("/work space")),
            worktree: Some(Some("ci-1".into())),
            add_dir: vec![PathBuf::from("/a"), PathBuf::from("-b")],
            auto: Autonomy::Medium,
            skip_permissions_unsafe: true,
            sandbox: Some(SandboxMode::Required),
            network: true,
            env_keep: vec!["GITHUB_TOKEN".into(), "-X".into()],
            enabled_tools: vec!["bash,read_file".into(), "grep".into()],
            disabled_tools: vec!["write_file".into()],
            allow: vec!["bash(cargo test *)".into(), "-x".into()],
            deny: vec!["Bash(git push:*)".into()],
            rules: Some(PathBuf::from("-settings.json")),
            mcp_config: vec![PathBuf::from("a.json"), PathBuf::from("-b.json")],
            mcp_project: true,
            strict_mcp_config: true,
            hooks: vec![PathBuf::from("hooks.toml"), PathBuf::from("-settings.json")],
            hooks_fail_open: true,
            skills_dir: vec![PathBuf::from("/skills"), PathBuf::from("-s")],
            skill: vec!["notes".into(), "-x".into()],
            no_skills: false,
            skill_in_use: vec![r#"{"skill":"notes","allowed_tools":["Read"]}"#.into()],
            web_fetch: true,
            output_format: OutputFormat::StreamJson,
            input_format: InputFormat::StreamJson,
            output_last_message: Some(PathBuf::from("/tmp/last")),
            output_schema: Some(PathBuf::from("-schema.json")),
            schema_retries: Some(0),
            verify: vec!["cargo test".into(), "-x --y".into()],
            verify_timeout: Some(std::time::Duration::from_secs(75)),
            verify_retries: Some(0),
            strict: true,
            model: Some("-model".into()),
            provider: Some(ProviderKind::Anthropic),
            base_url: Some("http://127.0.0.1:1/v1".into()),
            max_output_tokens: Some(77),
            reasoning_effort: Some(crate::provider::ReasoningEffort::Xhigh),
            fallback_model: vec!["-small".into(), "anthropic:claude-haiku-4-5".into()],
            max_turns: Some(3),
            timeout: Some(std::time::Duration::from_millis(90_500)),
            max_tokens: Some(2_000_000),
            max_cost_usd: Some(crate::usage::Usd::parse("0.125").unwrap()),
            context_window: Some(16_384),
            prompt_style: Some(crate::tools::PromptStyle::Compact),
            resume: Some("last".into()),
            fork: None,
            session_id: None,
            no_session: false,
            any_workspace: true,
            record: None,
            replay: Some(PathBuf::from("-ci.cassette")),
            replay_lenient: true,
            replay_timing: true,
            list_tools: true,
            list_specialists: false,
            list_skills: false,
            image: Vec::new(),
        }
    }

    #[test]
    fn every_flag_parses_back_to_what_was_written() {
        let args = every_flag_set();
        assert_eq!(parse_back(&args), args);
        let forking = ExecArgs {
            resume: None,
            any_workspace: false,
            fork: Some(SessionId::parse("ses-1").unwrap()),
            session_id: Some(SessionId::parse("ci-2").unwrap()),
            ..args.clone()
        };
        assert_eq!(parse_back(&forking), forking);
        let private = ExecArgs {
            resume: None,
            any_workspace: false,
            no_session: true,
            ..args.clone()
        };
        assert_eq!(parse_back(&private), private);
        let listing = ExecArgs {
            list_tools: false,
            list_specialists: true,
            ..args.clone()
        };
        assert_eq!(parse_back(&listing), listing);
        let skill_less = ExecArgs {
            list_tools: false,
            list_skills: true,
            skills_dir: Vec::new(),
            skill: Vec::new(),
            no_skills: true,
            skill_in_use: vec!["-{}".into()],
            ..args
        };
        assert_eq!(parse_back(&skill_less), skill_less);
        let recording = ExecArgs {
            record: Some(PathBuf::from("-run.cassette")),
            replay: None,
            replay_lenient: false,
            replay_timing: false,
            ..skill_less
        };
        assert_eq!(parse_back(&recording), recording);
    }
}
