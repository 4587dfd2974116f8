//! The spawn door: every process zero starts is spawned here, so the rules live in one place.
//! Every command runs under a guardian (`zero __guard`, see [`crate::runtime::guardian`]), which gets
//! its own process group, the report pipe as its stdin and the lifeline on the fd
//! [`ZERO_LIFELINE_FD`] names, and which starts the command in a process group of its own.
//! Nothing runs between fork and exec, so the guardian is spawned the `vfork` way
//! (`posix_spawn`): forking a multi-threaded runtime of several MB costs more than the whole
//! guardian start. A command counts as started only once its guardian has said so (the
//! handshake).
//!
//! [`GuardianCommand`] is the one builder of a guardian's command line: the argv, the
//! environment rules (no command ever sees the provider's key), the stdin, the process group
//! and a named [`Stdio`] policy for stdout and stderr. It prints itself for error messages.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::sys::signal::Signal;

use crate::environ::names::{
    KEY_VARIABLES, TMPDIR, ZERO_CASSETTE, ZERO_HANDED_KEY_FILE, ZERO_LIFELINE_FD,
    ZERO_USAGE_REPORT_FILE,
};
use crate::runtime::guardian::order::Order;
use crate::runtime::guardian::report::{ReportReader, StartError};
use crate::runtime::identity::ProcessIdentity;
use crate::runtime::lifeline;
use crate::runtime::reap;
use crate::runtime::sandbox::{ExecRules, Sandbox};
use crate::runtime::stop::Guarded;

/// The hidden subcommand that makes the zero binary a guardian: the first word of every
/// guardian's argv, which `main` looks for before anything else.
pub const GUARD_SUBCOMMAND: &str = "__guard";

/// The shell that runs commands: bash when the machine has it (models write bash), else `sh`.
fn shell() -> &'static str {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .unwrap_or("/bin/sh")
}

/// The zero binary, which runs every guardian and every specialist child: this very
/// executable. On Linux `/proc/self/exe`, which names the running binary even if its file was
/// replaced or deleted since (a rebuild while a run goes on), where a path to the file could
/// name another build or nothing. The default of [`crate::runtime::RuntimeConfig::zero_binary`].
pub(in crate::runtime) fn this_binary() -> &'static Path {
    static CURRENT: OnceLock<PathBuf> = OnceLock::new();
    CURRENT.get_or_init(|| {
        if cfg!(target_os = "linux") {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("zero"))
        }
    })
}

/// A program to start under a guardian. Made by [`Launch::program`] or `Launch::shell`,
/// confined by the run's sandbox unless `Launch::unconfined` says otherwise; only the spawn
/// door reads it.
#[derive(Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program to run.
    program: PathBuf,
    /// Its arguments.
    args: Vec<OsString>,
    /// Its working directory.
    cwd: PathBuf,
    /// Variables set for it on top of the inherited environment (which never includes the
    /// provider's key variables). `Debug` shows only their names.
    env: Vec<(OsString, OsString)>,
    /// Whether the run's sandbox confines it: every command does; a specialist's `zero exec`
    /// does not, since it confines its own commands (and must reach the model).
    confined: bool,
}

impl fmt::Debug for Launch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launch")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("confined", &self.confined)
            .field(
                "env",
                &self.env.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Launch {
    /// `program` with `args` in `cwd`, with `env` set on top of what commands inherit.
    pub fn program(
        program: PathBuf,
        args: Vec<OsString>,
        cwd: PathBuf,
        env: Vec<(OsString, OsString)>,
    ) -> Self {
        Launch {
            program,
            args,
            cwd,
            env,
            confined: true,
        }
    }

    /// `command` run by the platform shell (bash when there is one) in `cwd`.
    pub(crate) fn shell(command: &str, cwd: &Path) -> Self {
        Launch::program(
            shell().into(),
            vec!["-c".into(), command.into()],
            cwd.to_path_buf(),
            Vec::new(),
        )
    }

    /// The same launch, outside the run's sandbox: for a specialist's `zero exec`, which must
    /// reach the model and its data directory, and confines its own commands.
    pub(crate) fn unconfined(self) -> Self {
        Launch {
            confined: false,
            ..self
        }
    }

    /// Whether the run's sandbox confines it.
    pub(in crate::runtime) fn confined(&self) -> bool {
        self.confined
    }

    /// The variables set for it on top of what it inherits, a provider's key variable never
    /// among them.
    fn extra_env(&self) -> impl Iterator<Item = (&OsString, &OsString)> {
        self.env
            .iter()
            .filter(|(name, _)| !KEY_VARIABLES.iter().any(|key| name == key))
            .map(|(name, value)| (name, value))
    }

    /// The order that has a warm guardian start this launch (see [`GuardianCommand::warm`]).
    pub(in crate::runtime) fn order(&self) -> Order {
        Order {
            cwd: self.cwd.clone(),
            program: self.program.clone().into_os_string(),
            args: self.args.clone(),
            env: self
                .extra_env()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
        }
    }
}

/// What a guardian confines its command by and what the command's environment leaves out:
/// the run's rules, as the runtime hands them to every guardian it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Confinement {
    /// The sandbox, the run's temporary directory writable in it.
    pub(crate) sandbox: Sandbox,
    /// The run's temporary directory, the command's `TMPDIR`; `None` when writes are not
    /// confined (then `TMPDIR` is left as it is).
    pub(crate) temp_dir: Option<PathBuf>,
    /// Variables withheld from every process started, on top of the provider's keys.
    pub(crate) withheld: Vec<OsString>,
    /// The program every guardian runs as: the zero binary
    /// ([`crate::runtime::RuntimeConfig::zero_binary`]).
    pub(crate) guardian: PathBuf,
    /// The deny rules every exec of the command's tree is checked against: the run's, for
    /// the model's commands; none for the caller's own (hooks, checks) and services.
    pub(crate) exec_rules: ExecRules,
}

impl Confinement {
    /// The same rules without the exec check: what the caller's own commands and services
    /// are confined by (the rules on `bash` are about the model's commands).
    pub(crate) fn without_exec_rules(self) -> Self {
        Confinement {
            exec_rules: ExecRules::default(),
            ..self
        }
    }
}

/// Where a guardian's stdout and stderr go (the command inherits them from it).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stdio<'a> {
    /// Piped back to the runtime, which captures them: a foreground command.
    Piped,
    /// Nowhere: a warm guardian's own, whose commands get their output with each order.
    Discarded,
    /// Appended to this file: a background task's output file.
    File(&'a File),
    /// A service's: stdout is this socket, which the command also reads as its stdin; stderr
    /// is appended to the log file.
    Duplex {
        /// The guardian's end of the service's socket pair.
        socket: &'a std::os::unix::net::UnixStream,
        /// The service's stderr log.
        log: &'a File,
    },
}

/// The command line a guardian for `launch` is started with. The one place that decides what
/// every guardian gets: its program (the zero binary the confinement names), its argv, the
/// lifeline, the report pipe as stdin, its own process group, an environment without the
/// provider's key, and `stdio`.
#[derive(Debug)]
pub(crate) struct GuardianCommand<'a> {
    program: &'a Path,
    /// What it runs; `None` for a warm guardian, which is told later (see
    /// [`GuardianCommand::warm`]).
    launch: Option<&'a Launch>,
    confinement: &'a Confinement,
    grace: Duration,
    stdio: Stdio<'a>,
}

/// A guardian spawned warm ([`GuardianCommand::spawn_warm`]): the process, the reader of its
/// reports, and the runtime's end of the socket its order goes down.
pub(in crate::runtime) struct WarmSpawn {
    /// The guardian, a tokio child whose end can be awaited.
    pub(in crate::runtime) child: tokio::process::Child,
    /// Its reports.
    pub(in crate::runtime) report: ReportReader,
    /// Where its order goes.
    pub(in crate::runtime) orders: UnixStream,
}

impl<'a> GuardianCommand<'a> {
    /// A guardian that runs `launch` confined by `confinement` (when the launch is
    /// confined), allows it `grace` between SIGTERM and SIGKILL when stopping, and connects its
    /// output as `stdio` says.
    pub(crate) fn new(
        launch: &'a Launch,
        confinement: &'a Confinement,
        grace: Duration,
        stdio: Stdio<'a>,
    ) -> Self {
        GuardianCommand {
            program: &confinement.guardian,
            launch: Some(launch),
            confinement,
            grace,
            stdio,
        }
    }

    /// A warm guardian for confined foreground commands not known yet: confined by
    /// `confinement`, stopping with `grace`. It makes everything ready, the sandbox included,
    /// then waits for its orders (`__guard --warm`), each of which brings the command's output
    /// pipes. It runs in `/`, so it holds no directory, until an order names the command's.
    pub(in crate::runtime) fn warm(confinement: &'a Confinement, grace: Duration) -> Self {
        GuardianCommand {
            program: &confinement.guardian,
            launch: None,
            confinement,
            grace,
            stdio: Stdio::Discarded,
        }
    }

    /// Whether the command is confined by the run's sandbox: a warm guardian's always is.
    fn confined(&self) -> bool {
        self.launch.is_none_or(Launch::confined)
    }

    /// The guardian's arguments after its program: `__guard`, its flags, `--`, the command
    /// (`--warm` instead for a warm guardian).
    fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            GUARD_SUBCOMMAND.into(),
            "--grace-ms".into(),
            self.grace.as_millis().to_string().into(),
        ];
        if self.confined() {
            args.extend(self.confinement.sandbox.guard_flags());
            args.extend(self.confinement.exec_rules.guard_flags());
        }
        if let Stdio::Duplex { .. } = self.stdio {
            args.push("--stdin-from-stdout".into());
        }
        match self.launch {
            Some(launch) => {
                args.push("--".into());
                args.push(launch.program.clone().into());
                args.extend(launch.args.iter().cloned());
            }
            None => args.push("--warm".into()),
        }
        args
    }

    /// The guardian's `std` command with everything placed, `channel` (the guardian's end of
    /// its report pipe, or of a warm guardian's socket) as its stdin. The command holds that
    /// end: drop it right after the spawn, so the runtime's reader sees EOF once the guardian
    /// is gone.
    fn build(&self, channel: OwnedFd) -> std::io::Result<std::process::Command> {
        let lifeline = lifeline::read_end()?;
        let cwd = self.launch.map_or(Path::new("/"), |launch| &launch.cwd);
        let mut command = std::process::Command::new(self.program);
        command
            .arg0("zero")
            .args(self.args())
            .current_dir(cwd)
            .env(ZERO_LIFELINE_FD, lifeline.to_string())
            .stdin(std::process::Stdio::from(channel))
            .process_group(0);
        match self.stdio {
            Stdio::Piped => {
                command
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
            }
            Stdio::Discarded => {
                command
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null());
            }
            Stdio::File(output) => {
                command
                    .stdout(output.try_clone()?)
                    .stderr(output.try_clone()?);
            }
            Stdio::Duplex { socket, log } => {
                command
                    .stdout(std::os::fd::OwnedFd::from(socket.try_clone()?))
                    .stderr(log.try_clone()?);
            }
        }
        // No command ever receives the provider's key, nor the files a parent handed this
        // process its key in and has it report its spending to. Only a launch that names them
        // on purpose (a specialist, see `environ::names::ZERO_HANDED_KEY_FILE`) passes them on; a key
        // variable never passes.
        for name in KEY_VARIABLES.iter().chain([
            &ZERO_HANDED_KEY_FILE,
            &ZERO_USAGE_REPORT_FILE,
            &ZERO_CASSETTE,
        ]) {
            command.env_remove(name);
        }
        // Nor, at the levels that withhold them, the variables whose names say they hold a
        // secret (see `docs/ARCHITECTURE.md`, "Sandbox").
        for name in &self.confinement.withheld {
            command.env_remove(name);
        }
        if self.confined()
            && let Some(temp_dir) = &self.confinement.temp_dir
        {
            command.env(TMPDIR, temp_dir);
        }
        if let Some(launch) = self.launch {
            command.envs(launch.extra_env());
        }
        Ok(command)
    }

    /// A report pipe: the runtime's reader, and the guardian's end.
    fn report_pipe() -> Result<(ReportReader, OwnedFd), StartError> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)
            .map_err(|errno| StartError::Guardian(errno.into()))?;
        Ok((ReportReader::new(read), write))
    }

    /// Spawns the guardian as a `std` child (whose handle neither kills nor reaps it when
    /// dropped), with the reader of its reports.
    pub(crate) fn spawn(&self) -> Result<(std::process::Child, ReportReader), StartError> {
        let (report, channel) = Self::report_pipe()?;
        let mut command = self.build(channel).map_err(StartError::Guardian)?;
        let child = command.spawn();
        drop(command);
        Ok((child.map_err(|source| self.spawn_error(source))?, report))
    }

    /// Spawns the guardian as a tokio child, whose end can be awaited, with the reader of its
    /// reports.
    pub(crate) fn spawn_async(&self) -> Result<(tokio::process::Child, ReportReader), StartError> {
        let (report, channel) = Self::report_pipe()?;
        let command = self.build(channel).map_err(StartError::Guardian)?;
        // The temporary command, and with it the guardian's end of the pipe, is dropped right
        // after the spawn.
        let child = tokio::process::Command::from(command).spawn();
        Ok((child.map_err(|source| self.spawn_error(source))?, report))
    }

    /// Spawns a warm guardian ([`GuardianCommand::warm`]) as a tokio child, its stdin one end
    /// of a socket pair whose other end both sends the order and reads the reports. Must run
    /// within the tokio runtime (a blocking thread of it will do).
    pub(in crate::runtime) fn spawn_warm(&self) -> Result<WarmSpawn, StartError> {
        let (runtime_end, guardian_end) = UnixStream::pair().map_err(StartError::Guardian)?;
        let reports = runtime_end.try_clone().map_err(StartError::Guardian)?;
        let command = self
            .build(guardian_end.into())
            .map_err(StartError::Guardian)?;
        // Dropped unused (a runtime dropped without its close), a warm guardian is SIGKILLed:
        // it has no command to stop gently. Handed over, it is dropped only once reaped.
        let child = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| self.spawn_error(source))?;
        Ok(WarmSpawn {
            child,
            report: ReportReader::new(reports.into()),
            orders: runtime_end,
        })
    }

    fn spawn_error(&self, source: std::io::Error) -> StartError {
        StartError::Spawn {
            command: self.to_string(),
            source,
        }
    }
}

/// The guardian's argv as a shell would read it, program first.
impl fmt::Display for GuardianCommand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args = self.args();
        let words =
            std::iter::once(self.program.as_os_str()).chain(args.iter().map(OsString::as_os_str));
        for (index, word) in words.enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            write_quoted(f, &word.to_string_lossy())?;
        }
        Ok(())
    }
}

/// Writes `word` as a shell word: as it is when it holds nothing a shell would act on, else
/// in single quotes.
fn write_quoted(f: &mut fmt::Formatter<'_>, word: &str) -> fmt::Result {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
    if plain {
        return f.write_str(word);
    }
    write!(f, "'{}'", word.replace('\'', r"'\''"))
}

/// Starts `launch` under a guardian, with stdout and stderr appended to `output`, and waits for
/// the handshake. On any failure the guardian has been reaped before this returns. The guardian
/// is deliberately not reaped or killed when its handle is dropped: the runtime observes its
/// end and reaps it itself, after it has finished signalling, so the pid cannot be recycled
/// under it. Blocking.
pub(in crate::runtime) fn spawn_background(
    launch: &Launch,
    confinement: &Confinement,
    output: &File,
    grace: Duration,
) -> Result<(Guarded, ReportReader), StartError> {
    let (child, mut report) =
        GuardianCommand::new(launch, confinement, grace, Stdio::File(output)).spawn()?;
    let guardian = ProcessIdentity::of(child.id());
    match report.handshake() {
        Ok(command) => Ok((Guarded { guardian, command }, report)),
        Err(error) => {
            let _ = nix::sys::signal::kill(guardian.pid(), Signal::SIGKILL);
            let _ = reap::reap(guardian.pid);
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guardian_command_prints_as_a_shell_would_read_it() {
        let launch = Launch::shell("echo 'hi there' && ls", Path::new("/tmp"));
        let none = Confinement {
            sandbox: Sandbox::open(),
            temp_dir: None,
            withheld: Vec::new(),
            guardian: this_binary().to_path_buf(),
            exec_rules: ExecRules::default(),
        };
        let command =
            GuardianCommand::new(&launch, &none, Duration::from_millis(1500), Stdio::Piped);
        let printed = command.to_string();
        let expected = format!(
            "{} __guard --grace-ms 1500 -- {} -c 'echo '\\''hi there'\\'' && ls'",
            this_binary().display(),
            shell()
        );
        assert_eq!(printed, expected);
    }

    #[test]
    fn a_confined_command_carries_the_sandbox_and_a_specialist_does_not() {
        let confinement = Confinement {
            sandbox: Sandbox {
                writes: crate::runtime::sandbox::Writes::Beneath(vec!["/w".into()]),
                network: crate::runtime::sandbox::Network::Blocked,
                privileges: crate::runtime::sandbox::Privileges::Dropped,
            },
            temp_dir: Some("/w/tmp".into()),
            withheld: Vec::new(),
            guardian: "/zero".into(),
            exec_rules: ExecRules::default(),
        };
        let launch = Launch::shell("true", Path::new("/w"));
        let grace = Duration::from_millis(10);
        let confined = GuardianCommand::new(&launch, &confinement, grace, Stdio::Piped).args();
        assert_eq!(
            confined[..7],
            [
                "__guard",
                "--grace-ms",
                "10",
                "--confine-writes",
                "--write-root=/w",
                "--block-network",
                "--drop-privileges"
            ]
        );
        let launch = launch.unconfined();
        let free = GuardianCommand::new(&launch, &confinement, grace, Stdio::Piped).args();
        assert_eq!(free[..4], ["__guard", "--grace-ms", "10", "--"]);
    }
}
