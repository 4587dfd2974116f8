//! Shell completions and man pages, generated from the clap definitions in [`crate::cli`].
//!
//! The generated files are committed (`completions/`, `man/`) so packagers need no build step;
//! a test regenerates them into a temporary directory and fails when the committed copies are
//! stale.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateArgs};

/// The shells completions are generated for.
pub(crate) const SHELLS: [Shell; 5] = [
    Shell::Bash,
    Shell::Zsh,
    Shell::Fish,
    Shell::Elvish,
    Shell::PowerShell,
];

/// Writes every completion script and man page into the directories named in `args`.
pub fn write_all(args: &GenerateArgs) -> Result<()> {
    write_completions(&args.completions)?;
    write_man_pages(&args.man)
}

/// Writes one completion script per shell into `dir`.
pub fn write_completions(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for shell in SHELLS {
        let mut command = Cli::command();
        clap_complete::generate_to(shell, &mut command, "zero", dir)
            .with_context(|| format!("writing {shell} completions into {}", dir.display()))?;
    }
    Ok(())
}

/// Writes `zero.1` and one page per visible subcommand at every depth into `dir`:
/// `zero-exec.1`, `zero-tasks.1`, `zero-tasks-list.1`, ...
pub fn write_man_pages(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Every subcommand's flags and subcommands (deferred until built, see `cli::Command`).
    let mut command = Cli::command();
    command.build();
    render_man_page(&command, &dir.join("zero.1"))?;
    write_subcommand_pages(&command, "zero", dir)
}

/// Writes a page for each visible subcommand of `command` (named `<prefix>-<name>`), and for
/// theirs in turn.
fn write_subcommand_pages(command: &clap::Command, prefix: &str, dir: &Path) -> Result<()> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{prefix}-{}", sub.get_name());
        let page = sub.clone().name(name.clone());
        render_man_page(&page, &dir.join(format!("{name}.1")))?;
        write_subcommand_pages(sub, &name, dir)?;
    }
    Ok(())
}

fn render_man_page(command: &clap::Command, path: &Path) -> Result<()> {
    let mut buffer = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut buffer)
        .with_context(|| format!("rendering {}", path.display()))?;
    fs::write(path, buffer).with_context(|| format!("writing {}", path.display()))
}
