//! The listing modes: `--list-tools` (the tools the model would see under these flags, with
//! the MCP servers' started for it), `--list-specialists` (the specialists the `Task` tool
//! can launch) and `--list-skills` (the skills the model would be offered). Each emits a
//! `run_start` without provider or model, then its listing.

use std::path::Path;
use std::sync::Arc;

use crate::exit::ExitCode;
use crate::lifecycle::{self, CloseOnDrop};
use crate::mcp;
use crate::output::{
    Decision, EventKind, McpServerInfo, Output, RuleInfo, SkillInfo, SpecialistInfo, ToolInfo,
};
use crate::rules::Effect;
use crate::tasks;
use crate::tools::PromptStyle;

use super::driver::async_runtime;
use super::failure::Failure;
use super::mcp_servers;
use super::pieces::Pieces;
use super::settings::Settings;

/// Lists the tools the model would see, the run's MCP servers started to know theirs.
pub(super) fn tools(
    settings: &Settings,
    pieces: &Pieces,
    output: &Output,
) -> Result<ExitCode, Failure> {
    // An async runtime only when there are servers to start: a plain listing stays as cheap
    // as it was before MCP.
    let runtime = match settings.mcp.servers.is_empty() {
        true => None,
        false => Some(async_runtime()?),
    };
    // Closes the runtime (and with it every server started) on every way out.
    let _guard = runtime
        .as_ref()
        .map(|runtime| CloseOnDrop::new(Arc::clone(&pieces.runtime), runtime));
    let started = match &runtime {
        Some(runtime) => {
            let cancel = output.stop_token();
            lifecycle::watch(cancel.clone());
            runtime.block_on(mcp_servers::start(
                settings,
                &pieces.runtime,
                output,
                &cancel,
            ))?
        }
        None => mcp::Started::default(),
    };
    start_listing(
        output,
        &settings.workspace.root,
        mcp_servers::infos(&started.states),
    );
    mcp_servers::warn(&started.states, &settings.mcp, output);
    warn_skills(settings, output);
    // The style the caller chose (the listing asks no server): compact for the local provider.
    let style = match &settings.model.prompt_style {
        Ok(Some(choice)) => choice.style,
        _ => PromptStyle::Full,
    };
    let toolset = pieces.toolset(&started, &settings.workspace.policy, style, output);
    output.emit(EventKind::Tools {
        tools: toolset
            .visible()
            .iter()
            .map(|tool| ToolInfo {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                side_effect: tool.side_effect(),
                input_schema: tool.input_schema(),
            })
            .collect(),
        rules: settings
            .controls
            .rules
            .rules()
            .iter()
            .map(|rule| RuleInfo {
                effect: match rule.effect {
                    Effect::Allow => Decision::Allow,
                    Effect::Deny => Decision::Deny,
                },
                rule: rule.text.clone(),
                source: rule.origin.to_string(),
            })
            .collect(),
    });
    if let Some(runtime) = &runtime {
        runtime.block_on(async {
            started.servers.close().await;
            pieces.close(output).await;
        });
    }
    Ok(ExitCode::Success)
}

/// Discovers the specialists under this workspace and lists them. Broken manifests are
/// warnings, emitted before the listing so `-o json` can carry them in it.
pub(super) fn specialists(settings: &Settings, output: &Output) -> ExitCode {
    start_listing(output, &settings.workspace.root, Vec::new());
    let found = tasks::discover(&settings.workspace.specialists);
    for warning in &found.warnings {
        output.emit(EventKind::Warning {
            message: warning.to_string(),
        });
    }
    output.emit(EventKind::Specialists {
        specialists: found
            .specialists
            .into_iter()
            .map(|s| SpecialistInfo {
                name: s.name,
                description: s.description,
                source: s.source.to_string(),
                tools: s
                    .tools
                    .into_iter()
                    .map(str::to_string)
                    .chain(s.mcp_tools)
                    .collect(),
                model: s.model,
                skills: s.skills,
            })
            .collect(),
    });
    ExitCode::Success
}

/// Lists the skills the run would offer, after the warnings about those it skipped (so `-o
/// json` carries them in the listing).
pub(super) fn skills(settings: &Settings, output: &Output) -> ExitCode {
    start_listing(output, &settings.workspace.root, Vec::new());
    warn_skills(settings, output);
    output.emit(EventKind::Skills {
        skills: settings
            .skills
            .offered()
            .iter()
            .map(|skill| SkillInfo {
                name: skill.name.clone(),
                description: skill.description.clone(),
                source: skill.file().display().to_string(),
                allowed_tools: skill.allowed_tools.clone(),
            })
            .collect(),
    });
    ExitCode::Success
}

/// The warnings of the skills' discovery (broken `SKILL.md`s, unknown `--skill` names).
pub(super) fn warn_skills(settings: &Settings, output: &Output) {
    for message in settings.skills.warnings() {
        output.emit(EventKind::Warning { message });
    }
}

/// The `run_start` of a listing: the workspace and the MCP servers started for it, and no
/// provider or model.
fn start_listing(output: &Output, workspace: &Path, mcp_servers: Vec<McpServerInfo>) {
    output.emit(EventKind::RunStart {
        cwd: workspace.display().to_string(),
        provider: None,
        model: None,
        sandbox: None,
        withheld_env: Vec::new(),
        session_id: None,
        resumed_from: None,
        permissions_changed: None,
        mcp_servers,
        worktree: None,
        prompt_style: None,
        skills: Vec::new(),
    });
}
