//! What the job is asked: the prompt's sources, where the last message goes, the session, and
//! the shape the answer must have. What `run` reads the prompt and opens the session with.

use std::path::PathBuf;

use crate::cli::ExecArgs;
use crate::structured::OutputSchema;

use crate::exec::failure::Failure;
use crate::exec::prompt::PromptSources;
use crate::exec::session::SessionWanted;

/// The default `--schema-retries`: enough for a model to fix a slip, few enough that a model
/// that cannot produce the shape fails fast.
pub(crate) const DEFAULT_SCHEMA_RETRIES: u32 = 2;

/// The request's settings.
pub(crate) struct RequestSettings {
    /// Where the prompt comes from (argv, `--file`, stdin) and in which format.
    pub(crate) prompt: PromptSources,
    /// `--output-last-message`, as given: checked only when the run needs it.
    pub(crate) last_message: Option<PathBuf>,
    /// The session the flags ask for.
    pub(crate) session: SessionWanted,
    /// The schema the final answer must satisfy (`--output-schema`, or the one a caller
    /// fixed: `zero review`'s), read and checked.
    pub(crate) output_schema: Option<OutputSchema>,
    /// How many answers that miss the schema go back to the model (`--schema-retries`).
    pub(crate) schema_retries: u32,
}

impl RequestSettings {
    /// The request the flags and `prompt_parts` (positional words and `-p` values, in argv
    /// order) make. An `--output-schema` that cannot be read or is not a schema is a usage
    /// error.
    pub(super) fn resolve(args: &ExecArgs, prompt_parts: Vec<String>) -> Result<Self, Failure> {
        let output_schema = args
            .output_schema
            .as_deref()
            .map(OutputSchema::load)
            .transpose()
            .map_err(Failure::usage)?;
        Ok(RequestSettings {
            prompt: PromptSources {
                parts: prompt_parts,
                file: args.file.clone(),
                images: args.image.clone(),
                format: args.input_format,
            },
            last_message: args.output_last_message.clone(),
            session: SessionWanted::of(
                args.resume.clone(),
                args.fork.clone(),
                args.session_id.clone(),
                args.no_session,
                args.any_workspace,
            ),
            output_schema,
            schema_retries: args.schema_retries.unwrap_or(DEFAULT_SCHEMA_RETRIES),
        })
    }
}
