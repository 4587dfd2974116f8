//! Assembling the prompt from argv, `--file` and (only when asked) stdin, and the images
//! `--image` attaches to it.
//!
//! stdin is read in exactly two cases: a prompt word that is a lone `-`, and
//! `--input-format stream-json` without `--file`. A parent that leaves an inherited stdin pipe
//! open forever therefore never stalls a run that did not ask for stdin.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::fsutil;
use crate::image::{self, Image, ImageError};
use crate::output::{InputFormat, SCHEMA_VERSION};

use super::failure::Failure;

/// How to ask for a prompt, for the "no prompt" error.
const HOW_TO_PROMPT: &str = "no prompt given: pass it as an argument (zero exec \"fix the failing \
                             test\"), with -p TEXT, with -f FILE, or as - to read it from stdin";

/// Where the prompt comes from.
#[derive(Debug, Clone)]
pub(crate) struct PromptSources {
    /// Positional words and `-p` values, in argv order.
    pub(crate) parts: Vec<String>,
    /// `--file`, relative to the workspace.
    pub(crate) file: Option<PathBuf>,
    /// `--image`, each relative to the workspace.
    pub(crate) images: Vec<PathBuf>,
    /// `--input-format`.
    pub(crate) format: InputFormat,
}

/// The prompt text, or a usage error naming what is wrong.
pub(crate) fn assemble(
    sources: &PromptSources,
    workspace: &Path,
    stdin: &mut dyn Read,
) -> Result<String, Failure> {
    let prompt = match sources.format {
        InputFormat::Text => text_prompt(sources, workspace, stdin)?,
        InputFormat::StreamJson => {
            if !sources.parts.is_empty() {
                return Err(Failure::usage(
                    "-i stream-json reads the prompt from --file or stdin; drop the prompt arguments"
                        .into(),
                ));
            }
            let input = match &sources.file {
                Some(file) => read_prompt_file(file, workspace)?,
                None => read_all(stdin)?,
            };
            parse_stream_json(&input)?
        }
    };
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return Err(Failure::usage(HOW_TO_PROMPT.into()));
    }
    Ok(prompt.to_string())
}

/// The images `--image` attaches, read and checked, in argv order; a usage error names the
/// file and why it cannot be attached (not an image, past a limit, unreadable).
pub(crate) fn images(sources: &PromptSources, workspace: &Path) -> Result<Vec<Image>, Failure> {
    sources
        .images
        .iter()
        .map(|file| {
            attach(&workspace.join(file))
                .map_err(|why| Failure::usage(format!("--image {}: {why}", file.display())))
        })
        .collect()
}

/// The image at `path`; no more of a file than the limit is read.
fn attach(path: &Path) -> Result<Image, String> {
    let (file, meta) = fsutil::open_regular(path).map_err(|e| e.to_string())?;
    if meta.len() > image::MAX_BYTES as u64 {
        let bytes = usize::try_from(meta.len()).unwrap_or(usize::MAX);
        return Err(ImageError::TooLarge { bytes }.to_string());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(image::MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    Image::new(bytes).map_err(|e| e.to_string())
}

fn text_prompt(
    sources: &PromptSources,
    workspace: &Path,
    stdin: &mut dyn Read,
) -> Result<String, Failure> {
    let mut words = Vec::with_capacity(sources.parts.len());
    for part in &sources.parts {
        if part == "-" {
            words.push(read_all(stdin)?.trim().to_string());
        } else {
            words.push(part.clone());
        }
    }
    let mut prompt = words.join(" ");
    if let Some(file) = &sources.file {
        let text = read_prompt_file(file, workspace)?;
        if !prompt.trim().is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(text.trim());
    }
    Ok(prompt)
}

fn read_prompt_file(file: &Path, workspace: &Path) -> Result<String, Failure> {
    let path = workspace.join(file);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failure::usage(format!("cannot read prompt file {}: {e}", file.display())))?;
    if text.trim().is_empty() {
        return Err(Failure::usage(format!(
            "prompt file {} is empty",
            file.display()
        )));
    }
    Ok(text)
}

fn read_all(stdin: &mut dyn Read) -> Result<String, Failure> {
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(|e| Failure::usage(format!("cannot read the prompt from stdin: {e}")))?;
    Ok(text)
}

/// One line of `-i stream-json` input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct InputLine {
    #[serde(rename = "type")]
    kind: InputKind,
    content: String,
    role: Option<String>,
    schema_version: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum InputKind {
    Prompt,
    Message,
}

/// Joins the contents of `prompt` and user `message` lines with blank lines.
fn parse_stream_json(input: &str) -> Result<String, Failure> {
    let mut contents = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: InputLine = serde_json::from_str(line).map_err(|e| {
            Failure::usage(format!("invalid stream-json input at line {number}: {e}"))
        })?;
        // Input lines are the same in every version that has them (2 on).
        if let Some(version) = parsed
            .schema_version
            .filter(|v| !(2..=SCHEMA_VERSION).contains(v))
        {
            return Err(Failure::usage(format!(
                "invalid stream-json input at line {number}: schemaVersion {version} is not supported (use {SCHEMA_VERSION})"
            )));
        }
        match (parsed.kind, parsed.role.as_deref()) {
            (InputKind::Prompt, None) | (InputKind::Message, Some("user")) => {}
            (InputKind::Prompt, Some(_)) => {
                return Err(Failure::usage(format!(
                    "invalid stream-json input at line {number}: a prompt line has no role"
                )));
            }
            (InputKind::Message, None) => {
                return Err(Failure::usage(format!(
                    "invalid stream-json input at line {number}: a message line needs \"role\": \"user\" (the only role accepted as input)"
                )));
            }
            (InputKind::Message, Some(role)) => {
                return Err(Failure::usage(format!(
                    "invalid stream-json input at line {number}: role {role:?} is not accepted; a message line's role must be \"user\" (the only role accepted as input)"
                )));
            }
        }
        if !parsed.content.trim().is_empty() {
            contents.push(parsed.content.trim().to_string());
        }
    }
    Ok(contents.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble_text(parts: &[&str], stdin: &str) -> Result<String, Failure> {
        let parts: Vec<String> = parts.iter().map(|s| s.to_string()).collect();
        let sources = PromptSources {
            parts,
            file: None,
            images: Vec::new(),
            format: InputFormat::Text,
        };
        assemble(&sources, Path::new("/"), &mut stdin.as_bytes())
    }

    #[test]
    fn words_join_with_spaces_and_dash_reads_stdin() {
        assert_eq!(assemble_text(&["fix", "it"], "").unwrap(), "fix it");
        assert_eq!(assemble_text(&["-"], "from stdin\n").unwrap(), "from stdin");
        assert_eq!(assemble_text(&["see:", "-"], "x").unwrap(), "see: x");
    }

    #[test]
    fn no_prompt_is_a_usage_error_that_says_how() {
        let err = assemble_text(&[], "").unwrap_err();
        assert!(err.message.contains("-p TEXT"), "{}", err.message);
        assert!(assemble_text(&["  "], "").is_err());
    }

    #[test]
    fn stream_json_input_joins_contents_and_names_bad_lines() {
        let input = "{\"type\":\"prompt\",\"content\":\"a\"}\n\n{\"type\":\"message\",\"role\":\"user\",\"content\":\"b\"}\n";
        assert_eq!(parse_stream_json(input).unwrap(), "a\n\nb");
        let err = parse_stream_json("{\"type\":\"prompt\",\"content\":\"a\"}\n{\"type\":\"prompt\",\"content\":\"a\",\"x\":1}").unwrap_err();
        assert!(
            err.message.contains("line 2") && err.message.contains("unknown field"),
            "{}",
            err.message
        );
        let err = parse_stream_json("{\"type\":\"tool\",\"content\":\"a\"}").unwrap_err();
        assert!(err.message.contains("line 1"), "{}", err.message);
        let err =
            parse_stream_json("{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"a\"}")
                .unwrap_err();
        assert!(
            err.message.contains("role \"assistant\" is not accepted")
                && err.message.contains("must be \"user\""),
            "{}",
            err.message
        );
        assert!(!err.message.contains("Some("), "{}", err.message);
        let err = parse_stream_json("{\"type\":\"message\",\"content\":\"a\"}").unwrap_err();
        assert!(
            err.message.contains("needs \"role\": \"user\""),
            "{}",
            err.message
        );
    }
}
