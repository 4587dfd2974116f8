//! `zero review`: a read-only review of a change, as one command CI can act on.
//!
//! [`run`] is the list of its steps: the flags checked (and every output file's directory,
//! before anything is spent), the change read (`source`: from git or stdin, bounded) and
//! its diff parsed, the reviewer's prompt built (`prompt`), the agent run through exec's
//! run path at `--auto low` with the findings' schema in place of `--output-schema` and the
//! answer kept off stdout, the findings placed on the diff (those off it dropped with a
//! warning), each `--format` written, and the exit code from `--fail-on`: 5 when a finding is
//! at or above it. A run that fails ends with its own exit code, and writes no findings.

mod prompt;
mod source;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::ReviewArgs;
use crate::exec::{self, Invocation};
use crate::exit::ExitCode;
use crate::findings::{Answer, Diff, Format, FormatTarget, Report};
use crate::output::{self, OutputFormat, stderr_line_if_writable};
use crate::redact::{RedactingWriter, Secrets};
use crate::structured::OutputSchema;
use crate::tools::policy::Autonomy;
use source::Source;

/// The largest file whose line hashes (code scanning's `primaryLocationLineHash`) a review
/// computes; for a larger one the SARIF upload computes them.
const MAX_HASHED_FILE: u64 = 16 * 1024 * 1024;

/// Why a review could not run: the message and its exit code.
#[derive(Debug)]
pub(crate) struct Problem {
    message: String,
    exit: ExitCode,
}

impl Problem {
    /// A usage error (exit 2): a flag, a ref or the diff the user gave.
    pub(crate) fn usage(message: String) -> Self {
        Problem {
            message,
            exit: ExitCode::Usage,
        }
    }

    /// An internal error (exit 1): a bug, or a file zero could not write.
    fn internal(message: String) -> Self {
        Problem {
            message,
            exit: ExitCode::Internal,
        }
    }
}

/// A parsed `zero review` command line.
pub struct ReviewInvocation {
    /// The flags.
    pub args: ReviewArgs,
    /// Positional words and `-p` values, in argv order: extra instructions, or `-` alone for
    /// a diff on stdin.
    pub prompt_parts: Vec<String>,
}

/// Runs the review and returns its exit code (see the module documentation).
pub fn run(invocation: ReviewInvocation) -> ExitCode {
    let secrets = exec::known_secrets();
    match review(invocation, &secrets) {
        Ok(exit) => exit,
        Err(problem) => {
            stderr_line_if_writable(&format!("zero: error: {}", secrets.apply(&problem.message)));
            problem.exit
        }
    }
}

/// The steps of [`run`].
fn review(
    ReviewInvocation { args, prompt_parts }: ReviewInvocation,
    secrets: &Secrets,
) -> Result<ExitCode, Problem> {
    check_flags(&args)?;
    check_targets(&args.format)?;
    let (source, extra) = source_and_extra(&args, prompt_parts)?;
    let workspace = args.exec.cwd.clone().unwrap_or_else(|| PathBuf::from("."));
    let change = source.read(&workspace)?;
    let diff = Diff::parse(&change.diff).map_err(|e| Problem::usage(e.to_string()))?;
    for refused in diff.refused() {
        warn(
            &format!("{refused} is left out of the review: its path cannot be reported"),
            secrets,
        );
    }
    if diff.shown_lines() == 0 {
        warn(
            &format!("nothing to review: {} is empty", change.described),
            secrets,
        );
        let report = Report {
            summary: "Nothing to review: the diff is empty.".into(),
            findings: Vec::new(),
        };
        return write_all(&report, &args.format, secrets).map(|()| ExitCode::Success);
    }
    let prompt = prompt::build(&change, &diff, &extra);
    let schema = OutputSchema::new(Answer::schema())
        .map_err(|e| Problem::internal(format!("the findings' schema: {e}")))?;
    let mut exec_args = args.exec.clone();
    exec_args.prompt_words.clear();
    exec_args.prompt.clear();
    let invocation = Invocation {
        args: exec_args,
        prompt_parts: vec![prompt],
    };
    let answer = match exec::run_for_answer(invocation, schema) {
        (ExitCode::Success, Some(answer)) => answer,
        (ExitCode::Success, None) => {
            return Err(Problem::internal(
                "the review ended without the findings' answer (a bug)".into(),
            ));
        }
        // The run said why on stderr; no findings are written for a failed review.
        (failed, _) => return Ok(failed),
    };
    let answer = Answer::from_checked(answer).map_err(Problem::internal)?;
    let (mut report, dropped) = Report::place(answer, &diff);
    for warning in dropped {
        warn(&warning, secrets);
    }
    // Before any format escapes it: a secret the reviewer quoted is still whole here.
    report.rewrite_text(|text| secrets.apply(text));
    report.hash_lines(|path| change.whole_new_version(path, MAX_HASHED_FILE));
    write_all(&report, &args.format, secrets)?;
    let fails = report
        .findings
        .iter()
        .any(|placed| args.fail_on.fails(placed.finding.severity));
    Ok(if fails {
        ExitCode::Findings
    } else {
        ExitCode::Success
    })
}

/// Refuses the flags of `zero exec` that a review sets itself or cannot honour.
fn check_flags(args: &ReviewArgs) -> Result<(), Problem> {
    let exec = &args.exec;
    let refused = [
        (
            exec.output_schema.is_some(),
            "--output-schema: the findings' schema is fixed",
        ),
        (
            exec.output_format != OutputFormat::Text,
            "-o/--output-format: use --format",
        ),
        (
            exec.auto != Autonomy::Low || exec.skip_permissions_unsafe,
            "--auto above low or --skip-permissions-unsafe: a review is read-only",
        ),
        (
            exec.worktree.is_some(),
            "--worktree: a review changes nothing",
        ),
        (
            !exec.verify.is_empty()
                || exec.verify_timeout.is_some()
                || exec.verify_retries.is_some(),
            "--verify, --verify-timeout or --verify-retries: a review changes nothing, so there \
             is no work of its own to check",
        ),
        (
            exec.list_tools || exec.list_specialists || exec.list_skills,
            "--list-tools/--list-specialists/--list-skills: use `zero exec`",
        ),
        (
            exec.input_format != crate::output::InputFormat::Text,
            "-i/--input-format: the prompt is the change",
        ),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, why)) => Err(Problem::usage(format!("zero review does not take {why}"))),
        None => Ok(()),
    }
}

/// Refuses an output file whose directory does not exist, before the review spends anything.
fn check_targets(targets: &[FormatTarget]) -> Result<(), Problem> {
    for file in targets.iter().filter_map(|target| target.file.as_deref()) {
        let parent = match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            return Err(Problem::usage(format!(
                "--format …={}: {} is not a directory",
                file.display(),
                parent.display()
            )));
        }
    }
    Ok(())
}

/// What to review, and the extra instructions (the prompt words other than a lone `-`).
fn source_and_extra(
    args: &ReviewArgs,
    mut parts: Vec<String>,
) -> Result<(Source, String), Problem> {
    let stdin = parts.iter().any(|part| part == "-");
    parts.retain(|part| part != "-");
    let named = [args.base.is_some(), args.commit.is_some(), args.uncommitted];
    let source = match (stdin, &args.base, &args.commit, args.uncommitted) {
        (true, ..) if named.contains(&true) => {
            return Err(Problem::usage(
                "a diff on stdin (`-`) and --base/--commit/--uncommitted name two changes; \
                 give one"
                    .into(),
            ));
        }
        (true, ..) => Source::Stdin,
        (false, _, Some(commit), _) => Source::Commit(commit.clone()),
        (false, _, _, true) => Source::Uncommitted,
        (false, base, None, false) => Source::Base(base.clone()),
    };
    Ok((source, parts.join(" ")))
}

/// Writes `report` in each format: to its file (atomically), or to stdout, in the order given.
/// Every format is written even when one fails; the first failure is reported.
fn write_all(report: &Report, targets: &[FormatTarget], secrets: &Secrets) -> Result<(), Problem> {
    let mut first_failure = None;
    let mut stdout = RedactingWriter::new(std::io::stdout().lock(), secrets);
    for FormatTarget { format, file } in targets {
        let text = match format {
            // The reviewer's words, for a person or a CI log: inert. Every other format is
            // exact (`github`'s commands are zero's own, its data escaped as the runner wants).
            Format::Text => output::neutralise(&format.write(report)).into_owned(),
            _ => format.write(report),
        };
        let written = match file {
            Some(file) => crate::fsutil::write_atomic(file, secrets.apply(&text).as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", file.display())),
            None => stdout
                .write_all(text.as_bytes())
                .map_err(|e| format!("cannot write to stdout: {e}")),
        };
        if let Err(message) = written {
            first_failure.get_or_insert(Problem::internal(message));
        }
    }
    if let Err(e) = stdout.finish() {
        first_failure.get_or_insert(Problem::internal(format!("cannot write to stdout: {e}")));
    }
    first_failure.map_or(Ok(()), Err)
}

/// A warning on stderr, with the known secrets hidden.
fn warn(message: &str, secrets: &Secrets) {
    stderr_line_if_writable(&format!("zero: warning: {}", secrets.apply(message)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Format;
    use clap::Parser;

    fn parsed(argv: &[&str]) -> ReviewArgs {
        let mut full = vec!["zero", "review"];
        full.extend(argv);
        match crate::cli::Cli::parse_from(full).command {
            crate::cli::Command::Review(args) => *args,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_source_is_what_the_flags_name() {
        let cases: [(&[&str], Source); 4] = [
            (&[], Source::Base(None)),
            (&["--base", "main"], Source::Base(Some("main".into()))),
            (&["--commit", "abc"], Source::Commit("abc".into())),
            (&["--uncommitted"], Source::Uncommitted),
        ];
        for (argv, expected) in cases {
            let (source, extra) = source_and_extra(&parsed(argv), Vec::new()).unwrap();
            assert_eq!(source, expected, "{argv:?}");
            assert_eq!(extra, "");
        }
        let parts = vec!["-".to_string(), "look".to_string(), "closely".to_string()];
        let (source, extra) = source_and_extra(&parsed(&[]), parts).unwrap();
        assert_eq!((source, extra.as_str()), (Source::Stdin, "look closely"));
        let both = source_and_extra(&parsed(&["--uncommitted"]), vec!["-".into()]);
        assert!(both.unwrap_err().message.contains("two changes"));
    }

    #[test]
    fn flags_a_review_sets_itself_are_refused() {
        for argv in [
            &["--output-schema", "s.json"][..],
            &["-o", "json"],
            &["--auto", "medium"],
            &["--skip-permissions-unsafe"],
            &["--worktree"],
            &["--list-tools"],
        ] {
            let problem = check_flags(&parsed(argv)).unwrap_err();
            assert_eq!(problem.exit, ExitCode::Usage, "{argv:?}");
            assert!(problem.message.starts_with("zero review does not take"));
        }
        assert!(check_flags(&parsed(&["--model", "m", "--max-turns", "3"])).is_ok());
    }

    #[test]
    fn the_flags_a_review_refuses_are_the_ones_its_help_does_not_list() {
        let mut command = <crate::cli::Cli as clap::CommandFactory>::command();
        command.build();
        let command = command.find_subcommand("review").unwrap();
        let hidden: Vec<&str> = command
            .get_arguments()
            .filter(|arg| arg.is_hide_set())
            .map(|arg| arg.get_id().as_str())
            .collect();
        assert_eq!(hidden, crate::cli::NOT_FOR_REVIEW);
        let given: [(&str, &[&str]); 11] = [
            ("worktree", &["--worktree"]),
            ("skip_permissions_unsafe", &["--skip-permissions-unsafe"]),
            ("output_format", &["--output-format", "json"]),
            ("input_format", &["--input-format", "stream-json"]),
            ("output_schema", &["--output-schema", "s.json"]),
            ("verify", &["--verify", "cargo test"]),
            ("verify_timeout", &["--verify-timeout", "1m"]),
            ("verify_retries", &["--verify-retries", "1"]),
            ("list_tools", &["--list-tools"]),
            ("list_specialists", &["--list-specialists"]),
            ("list_skills", &["--list-skills"]),
        ];
        assert_eq!(given.map(|(id, _)| id), crate::cli::NOT_FOR_REVIEW);
        for (_, argv) in given {
            let problem = check_flags(&parsed(argv)).unwrap_err();
            assert!(
                problem.message.contains(argv[0]),
                "{argv:?}: {}",
                problem.message
            );
        }
    }

    #[test]
    fn the_formats_default_to_text_on_stdout() {
        let args = parsed(&[]);
        assert_eq!(
            args.format,
            [FormatTarget {
                format: Format::Text,
                file: None
            }]
        );
        let missing = check_targets(&parsed(&["--format", "sarif=/no/such/dir/x"]).format);
        assert!(missing.unwrap_err().message.contains("is not a directory"));
    }
}
