//! The `zero` binary: install the lifecycle hooks, parse argv, dispatch, and exit with the
//! code the job decided.

#![warn(clippy::too_many_lines)]

use std::ffi::OsString;
use std::process::ExitCode as ProcessExitCode;
use std::time::Duration;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser};

use zero::cli::{Cli, Command, ExecArgs, GenerateArgs, GuardArgs, ReplayCommand, ReviewArgs};
use zero::exec::{self, Failure, Invocation};
use zero::exit::ExitCode;
use zero::lifecycle;
use zero::output::OutputFormat;
use zero::review::ReviewInvocation;
use zero::runtime::guardian::{self, GuardianArgs};
use zero::runtime::sandbox::{ExecRules, GuardFlags, Sandbox};

fn main() -> ProcessExitCode {
    // Before anything else, and so before any child can exist: a signal from here on ends the
    // run through its close. A guardian handles its own signals instead.
    let is_guardian = std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == zero::runtime::GUARD_SUBCOMMAND);
    if is_guardian {
        return run_guardian();
    }
    // SAFETY: nothing has started a thread yet, and nothing holds a pointer into the
    // environment.
    unsafe { zero::environ::hide_secret_values() };
    if let Err(error) = lifecycle::install() {
        eprintln!("zero: error: {error}");
        return ExitCode::Internal.into();
    }
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(error) => return clap_failure(error).into(),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => return clap_failure(error).into(),
    };
    match cli.command {
        Command::Exec(args) => run_exec(*args, &matches),
        Command::Review(args) => run_review(*args, &matches),
        Command::Tasks(args) => zero::operator::run(args, &exec::known_secrets()).into(),
        Command::Worktrees(args) => {
            zero::operator::worktrees::run(args, &exec::known_secrets()).into()
        }
        Command::Sessions(args) => {
            zero::operator::sessions::run(args, &exec::known_secrets()).into()
        }
        Command::Replay(args) => match args.command {
            ReplayCommand::Show { file } => zero::cassette::show(&file, exec::known_secrets()),
            ReplayCommand::Check { file } => zero::cassette::check(&file),
        }
        .into(),
        Command::Generate(args) => generate(&args),
    }
}

/// `zero exec`: one job, its prompt parts in argv order; the process exits with its code.
fn run_exec(args: ExecArgs, matches: &ArgMatches) -> ProcessExitCode {
    let exec_matches = matches
        .subcommand_matches("exec")
        .expect("clap returned the exec subcommand");
    let invocation = Invocation {
        args,
        prompt_parts: prompt_parts_in_argv_order(exec_matches),
    };
    let exit = exec::run(invocation);
    lifecycle::exit(exit.code())
}

/// `zero review`: one review; the process exits with its code.
fn run_review(args: ReviewArgs, matches: &ArgMatches) -> ProcessExitCode {
    let review_matches = matches
        .subcommand_matches("review")
        .expect("clap returned the review subcommand");
    let invocation = ReviewInvocation {
        args,
        prompt_parts: prompt_parts_in_argv_order(review_matches),
    };
    let exit = zero::review::run(invocation);
    lifecycle::exit(exit.code())
}

/// `zero __generate`: the completions and man pages.
fn generate(args: &GenerateArgs) -> ProcessExitCode {
    match zero::generate::write_all(args) {
        Ok(()) => ProcessExitCode::SUCCESS,
        Err(error) => {
            eprintln!("zero: error: {error:#}");
            ExitCode::Internal.into()
        }
    }
}

/// `zero __guard ...`: parsed without building the rest of the CLI (see [`GuardArgs`]).
fn run_guardian() -> ProcessExitCode {
    // The first element is taken as the binary name: here, the `__guard` word itself.
    let args = match GuardArgs::try_parse_from(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::Usage.into();
        }
    };
    let mut words = args.command.into_iter();
    let command = match (args.warm, words.next()) {
        (false, Some(program)) => guardian::Command::Given {
            program,
            args: words.collect(),
        },
        (true, None) => guardian::Command::Ordered,
        (true, Some(_)) | (false, None) => {
            eprintln!("zero __guard: give either the command or --warm, not both");
            return ExitCode::Usage.into();
        }
    };
    let exec_rules = match ExecRules::from_guard_flags(&args.deny_exec) {
        Ok(rules) => rules,
        Err(error) => {
            eprintln!("zero __guard: {error}");
            return ExitCode::Usage.into();
        }
    };
    lifecycle::exit(guardian::run(GuardianArgs {
        grace: Duration::from_millis(args.grace_ms),
        sandbox: Sandbox::from_guard_flags(GuardFlags {
            confine_writes: args.confine_writes,
            write_roots: args.write_roots,
            block_network: args.block_network,
            client_network: args.client_network,
            drop_privileges: args.drop_privileges,
        }),
        exec_rules,
        stdin_from_stdout: args.stdin_from_stdout,
        command,
    }))
}

/// Positional words and `-p` values interleaved as they appeared on the command line.
fn prompt_parts_in_argv_order(matches: &ArgMatches) -> Vec<String> {
    let mut parts: Vec<(usize, String)> = Vec::new();
    for id in ["prompt_words", "prompt"] {
        if let (Some(values), Some(indices)) =
            (matches.get_many::<String>(id), matches.indices_of(id))
        {
            parts.extend(indices.zip(values.cloned()));
        }
    }
    parts.sort_by_key(|(index, _)| *index);
    parts.into_iter().map(|(_, value)| value).collect()
}

/// Prints clap's message (help and version go to stdout with exit 0). For a usage error under
/// `-o json`/`-o stream-json`, the machine-readable error and `run_end` follow on stdout too.
fn clap_failure(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = error.print();
        return ExitCode::Success;
    }
    let _ = error.print();
    if let Some(format) = requested_output_format() {
        let message = error
            .render()
            .to_string()
            .lines()
            .next()
            .unwrap_or("invalid arguments")
            .trim_start_matches("error: ")
            .to_string();
        exec::report_early_failure(format, Failure::usage(message))
    } else {
        ExitCode::Usage
    }
}

/// The machine-readable `-o` format named in argv, when clap could not parse the rest: the
/// first place in argv where `zero exec`'s own `-o` definition parses (every spelling clap
/// takes: `-o json`, `-ojson`, `-o=json`, `--output-format json`, `--output-format=json`).
fn requested_output_format() -> Option<OutputFormat> {
    // Only `zero exec`'s flags are built (the subcommands' flags are deferred, see `Command`).
    let flag = ExecArgs::augment_args(clap::Command::new("exec"))
        .get_arguments()
        .find(|arg| arg.get_id() == "output_format")?
        .clone()
        .default_value(None);
    // A clap parser (not a process): only the one flag.
    let only_the_flag = clap::Command::default()
        .no_binary_name(true)
        .ignore_errors(true)
        .arg(flag);
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    let format = (0..argv.len()).find_map(|start| {
        let matches = only_the_flag
            .clone()
            .try_get_matches_from(&argv[start..])
            .ok()?;
        matches.get_one::<OutputFormat>("output_format").copied()
    })?;
    Some(format).filter(|format| *format != OutputFormat::Text)
}
