//! zero's benchmark harness: where time and memory go, measured on the real binary against a
//! scripted model that answers instantly. It never fails on a number — only when something it
//! drives breaks (a job that does not finish, a log with the wrong line count) — so CI can run
//! it to prove it works without turning timings into flaky assertions.
//!
//! ```text
//! cargo bench --bench harness                      # release binary, 10 runs per row
//! cargo bench --bench harness -- --quick           # 3 runs, small sizes
//! cargo bench --profile dev --bench harness -- --quick   # the debug binary (what CI runs)
//! ```
//!
//! Options: `--quick`, `--runs N`, `--delay-ms N` (the model waits N ms before each answer),
//! `--only GROUP,...` (only those groups of rows: `scenarios::GROUPS`).
//! `ZERO_BENCH_BIN` measures another binary instead of the one cargo built alongside the
//! harness. See `docs/PERFORMANCE.md` for what each row means and the latest results.

// The integration tests' support code, shared so the harness drives zero exactly as the tests
// do. The harness uses only part of it (the fake model, process lookups, the provider variables);
// the test crate, which must use every helper, is where unused ones are caught.
#[allow(dead_code)]
#[path = "../../tests/integration/support/mod.rs"]
mod support;

mod process;
mod scenarios;
mod table;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// How the harness was asked to run.
pub struct Options {
    /// Few runs and small sizes.
    pub quick: bool,
    /// Runs per measurement.
    pub runs: usize,
    /// How long the fake model waits before each answer.
    pub delay: Duration,
    /// The binary measured.
    pub bin: PathBuf,
    /// Only these groups of rows (`--only`); every group when `None`.
    pub only: Option<Vec<String>>,
}

impl Options {
    fn parse() -> Result<Options> {
        let mut quick = false;
        let mut runs = None;
        let mut delay = Duration::ZERO;
        let mut only = None;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut value = |name: &str| -> Result<u64> {
                let text = args
                    .next()
                    .with_context(|| format!("{name} needs a value"))?;
                text.parse()
                    .with_context(|| format!("{name} wants a whole number, not {text:?}"))
            };
            match arg.as_str() {
                "--quick" => quick = true,
                "--runs" => runs = Some(value("--runs")?.max(1) as usize),
                "--delay-ms" => delay = Duration::from_millis(value("--delay-ms")?),
                "--only" => only = Some(groups(args.next())?),
                // `cargo bench` passes this to every bench binary.
                "--bench" => {}
                other => {
                    bail!(
                        "unknown argument {other:?} (known: --quick, --runs N, --delay-ms N, --only GROUP,...)"
                    )
                }
            }
        }
        let bin = std::env::var_os("ZERO_BENCH_BIN")
            .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zero")), PathBuf::from);
        if !bin.exists() {
            bail!(
                "{} does not exist: build it (cargo build --release) or point ZERO_BENCH_BIN at \
                 a zero binary",
                bin.display()
            );
        }
        Ok(Options {
            quick,
            runs: runs.unwrap_or(if quick { 3 } else { 10 }),
            delay,
            bin,
            only,
        })
    }
}

/// The groups `--only` names, each one checked against [`scenarios::GROUPS`].
fn groups(value: Option<String>) -> Result<Vec<String>> {
    let known = scenarios::GROUPS.join(", ");
    let value = value.with_context(|| format!("--only needs groups, of: {known}"))?;
    value
        .split(',')
        .map(|group| {
            if scenarios::GROUPS.contains(&group) {
                Ok(group.to_string())
            } else {
                bail!("--only: no group {group:?} (known: {known})")
            }
        })
        .collect()
}

fn main() -> std::process::ExitCode {
    let options = match Options::parse() {
        Ok(options) => options,
        Err(error) => {
            eprintln!("harness: {error:#}");
            return std::process::ExitCode::from(2);
        }
    };
    eprintln!(
        "harness: measuring {} ({} runs per row{}{})",
        options.bin.display(),
        options.runs,
        if options.quick { ", quick" } else { "" },
        if options.delay.is_zero() {
            String::new()
        } else {
            format!(", model delay {:?}", options.delay)
        },
    );
    // Every scratch directory (workspaces, homes, the generated grep tree) lives below one
    // root, so a Ctrl-C can remove them all before the harness goes.
    let scratch = match tempfile::Builder::new().prefix("zero-bench-").tempdir() {
        Ok(scratch) => scratch,
        Err(error) => {
            eprintln!("harness: cannot create a scratch directory: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let root = scratch.path().to_path_buf();
    if let Err(error) = ctrlc::set_handler(move || {
        INTERRUPTED.store(true, Ordering::SeqCst);
        remove_while_in_use(&root);
        eprintln!("harness: interrupted; scratch directories removed");
        std::process::exit(130);
    }) {
        eprintln!("harness: cannot handle Ctrl-C: {error}");
        return std::process::ExitCode::FAILURE;
    }
    let mut rows = Vec::new();
    let result = scenarios::run_all(&options, scratch.path(), &mut rows);
    if INTERRUPTED.load(Ordering::SeqCst) {
        // The scenario failed because its directory went: the Ctrl-C handler ends the process
        // once the clean-up is done, with no table and no failure of ours.
        loop {
            std::thread::park();
        }
    }
    print!("{}", table::render(&rows));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("harness: FAILED: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Set by the Ctrl-C handler before it removes the scratch directories.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Removes `root` while the scenario in progress and the zero processes closing on the same
/// Ctrl-C may still be writing below it. Renaming it first makes every path the scenario holds
/// dangle, so its next write fails instead of racing the removal; then the old path is removed
/// until it has stayed gone for a moment (a closing zero may make its data directory again),
/// for two seconds at most.
fn remove_while_in_use(root: &std::path::Path) {
    let mut doomed = root.as_os_str().to_owned();
    doomed.push(".removing");
    if std::fs::rename(root, &doomed).is_ok() {
        let _ = std::fs::remove_dir_all(&doomed);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let mut gone_since: Option<std::time::Instant> = None;
    while std::time::Instant::now() < deadline {
        let _ = std::fs::remove_dir_all(root);
        if root.exists() {
            gone_since = None;
        } else if gone_since.is_some_and(|since| since.elapsed() >= Duration::from_millis(100)) {
            return;
        } else {
            gone_since.get_or_insert_with(std::time::Instant::now);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
