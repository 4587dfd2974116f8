//! The run's cassette: `--record FILE` or `--replay FILE` (with `--replay-lenient` and
//! `--replay-timing`) in a run of its own, or the cassette its parent shares with a
//! specialist (`ZERO_CASSETTE`, read only when the run is one, with the specialist's task
//! tag). A cassette that cannot be read, or a `--record` path zero will not write, is a
//! usage error (exit 2) before anything starts; the recording's file is made only when the
//! run connects, so a run refused earlier leaves nothing half-made.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cassette::{
    self, Link, LinkMode, Masks, Matching, ROOT_TASK, Recording, Replaying, Tape,
};
use crate::cli::ExecArgs;
use crate::provider::{DEFAULT_MAX_OUTPUT_TOKENS, Provider, ProviderConfig, ProviderKind, Tuning};
use crate::redact::Secrets;
use crate::tasks::Parent;

use crate::exec::failure::Failure;

/// What the run does with a cassette.
pub(crate) enum CassetteSettings {
    /// Nothing.
    Off,
    /// Records its traffic.
    Record {
        /// The cassette, absolute.
        path: PathBuf,
        /// The run's task tag.
        task: String,
        /// Whether this run makes the file (the run itself) or appends to it (a specialist).
        fresh: bool,
        /// The flags it was started with, for the `start` line.
        args: Vec<String>,
    },
    /// Replays it.
    Replay {
        /// The cassette, read and checked.
        tape: Arc<Tape>,
        /// The run's task tag.
        task: String,
        /// How requests are held to the recorded ones.
        matching: Matching,
        /// Whether the recorded pace is kept.
        timing: bool,
    },
}

impl CassetteSettings {
    /// The cassette the flags or the parent (`parent`, when this run is a specialist) name.
    pub(super) fn resolve(args: &ExecArgs, parent: Option<&Parent>) -> Result<Self, Failure> {
        let shared = match parent {
            Some(parent) => parent.cassette().map_err(Failure::config)?,
            None => None,
        };
        let recorded_args = || {
            args.to_argv()
                .iter()
                .map(|word| word.to_string_lossy().into_owned())
                .collect()
        };
        if let Some(link) = shared {
            return Ok(match link.mode {
                LinkMode::Record => CassetteSettings::Record {
                    path: link.path,
                    task: link.task,
                    fresh: false,
                    args: recorded_args(),
                },
                LinkMode::Replay | LinkMode::ReplayLenient => CassetteSettings::Replay {
                    tape: read(&link.path)?,
                    matching: match link.mode {
                        LinkMode::ReplayLenient => Matching::Shape,
                        _ => Matching::Exact,
                    },
                    task: link.task,
                    timing: link.timing,
                },
            });
        }
        if let Some(path) = &args.record {
            cassette::check_target(path).map_err(Failure::usage)?;
            return Ok(CassetteSettings::Record {
                path: absolute(path)?,
                task: ROOT_TASK.to_string(),
                fresh: true,
                args: recorded_args(),
            });
        }
        match &args.replay {
            Some(path) => Ok(CassetteSettings::Replay {
                tape: read(path)?,
                task: ROOT_TASK.to_string(),
                matching: match args.replay_lenient {
                    true => Matching::Shape,
                    false => Matching::Exact,
                },
                timing: args.replay_timing,
            }),
            None => Ok(CassetteSettings::Off),
        }
    }

    /// With `--replay`, the provider the cassette recorded: its wire and model, no URL to
    /// reach and no key (the flags' output limit, which a request's canonical form does not
    /// hold). A cassette without this run's task is a usage error.
    pub(super) fn replayed_provider(
        &self,
        max_output_tokens: Option<u32>,
    ) -> Option<Result<ProviderConfig, Failure>> {
        let CassetteSettings::Replay { tape, task, .. } = self else {
            return None;
        };
        let Some(start) = tape.start_of(task) else {
            return Some(Err(Failure::usage(format!(
                "--replay {}: the cassette has no task `{task}` (a specialist launched in an \
                 order the recording did not have)",
                tape.path().display()
            ))));
        };
        let kind = ProviderKind::from_word(&start.wire).unwrap_or(ProviderKind::Openai);
        Some(Ok(ProviderConfig {
            kind,
            base_url: "http://replay.invalid".into(),
            api_key: None,
            model: start.model.clone(),
            max_output_tokens: max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
            reasoning_effort: None,
            fallbacks: Vec::new(),
            tuning: Tuning::default(),
            socket: None,
        }))
    }

    /// The cassette a specialist of this run shares (its tag set at launch).
    pub(crate) fn link(&self) -> Option<Link> {
        match self {
            CassetteSettings::Off => None,
            CassetteSettings::Record { path, task, .. } => Some(Link {
                mode: LinkMode::Record,
                path: path.clone(),
                task: task.clone(),
                timing: false,
            }),
            CassetteSettings::Replay {
                tape,
                task,
                matching,
                timing,
            } => Some(Link {
                mode: match matching {
                    Matching::Exact => LinkMode::Replay,
                    Matching::Shape => LinkMode::ReplayLenient,
                },
                path: tape.path().to_path_buf(),
                task: task.clone(),
                timing: *timing,
            }),
        }
    }

    /// The provider the run talks to: with `--replay` the cassette's, else the one `build`
    /// makes — recorded with `--record`, its lines masked with `secrets` (and the requests'
    /// canonical forms with the `workspace` root too).
    pub(crate) fn provider(
        &self,
        build: impl FnOnce() -> Result<Arc<dyn Provider>, Failure>,
        secrets: &Secrets,
        workspace: &Path,
    ) -> Result<Arc<dyn Provider>, Failure> {
        let masks = Masks::new(secrets.clone(), workspace);
        match self {
            CassetteSettings::Off => build(),
            CassetteSettings::Replay {
                tape,
                task,
                matching,
                timing,
            } => Ok(Arc::new(Replaying::new(
                Arc::clone(tape),
                task,
                *matching,
                *timing,
                masks,
            ))),
            CassetteSettings::Record {
                path,
                task,
                fresh,
                args,
            } => {
                let inner = build()?;
                let writer = match fresh {
                    true => cassette::Writer::create(path, secrets.clone()),
                    false => cassette::Writer::append_to(path, secrets.clone()),
                }
                .map_err(|e| Failure::usage(format!("--record {}: {e}", path.display())))?;
                let recording =
                    Recording::start(inner, Arc::new(writer), task, args.clone(), masks)
                        .map_err(|e| Failure::usage(format!("--record {}: {e}", path.display())))?;
                Ok(Arc::new(recording))
            }
        }
    }
}

/// The cassette at `path`, read and checked (exit 2 naming the line).
fn read(path: &Path) -> Result<Arc<Tape>, Failure> {
    let tape = Tape::read(&absolute(path)?).map_err(|e| Failure::usage(format!("--replay {e}")))?;
    Ok(Arc::new(tape))
}

/// `path` made absolute against the current directory (a specialist works elsewhere).
fn absolute(path: &Path) -> Result<PathBuf, Failure> {
    std::path::absolute(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))
}
