//! The kernel sandbox every command of a run is confined by: Landlock for where it may write,
//! seccomp for whether it may open network sockets.
//!
//! The run decides once what its commands get ([`Sandbox`], from `--auto`, `--network`, the
//! roots and what [`Support::probe`] found the kernel offers); every guardian enforces exactly
//! that on itself, just before it starts its command ([`enforce`]). Landlock domains and
//! seccomp filters are inherited by every descendant and cannot be lifted, so `cmd &`,
//! `setsid` children and grandchildren are confined too. The guardian is the place because it
//! is single-threaded (both restrict the calling thread) and every command passes through it;
//! zero itself is never confined, so its own connection to the model and its own data
//! directory are untouched.
//!
//! What the probe promised, the guardian must deliver: a rule it cannot enforce fails the
//! command's start instead of running it unconfined.

#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod seccomp;

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

/// How strictly a run asks for the sandbox (`--sandbox`, or `sandbox` in `config.toml`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Apply what the kernel supports, and warn about what it does not.
    #[default]
    Auto,
    /// Refuse to run when a rule the run needs cannot be enforced.
    Required,
    /// Apply nothing (the file tools stay confined).
    Off,
}

impl SandboxMode {
    /// The word `--sandbox` takes for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Required => "required",
            SandboxMode::Off => "off",
        }
    }
}

/// Where a run's commands may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writes {
    /// Anywhere the user may (`--auto high`, or no sandbox).
    Anywhere,
    /// Only beneath these directories, and to the usual devices (`/dev/null`, `/dev/tty`, …)
    /// and the command's own stdout and stderr; reading and executing stay allowed everywhere.
    Beneath(Vec<PathBuf>),
}

/// Whether a run's commands may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Any socket.
    Open,
    /// No IPv4 or IPv6 socket (`socket(2)` fails with `EACCES`); Unix sockets stay allowed.
    Blocked,
}

/// What one run's commands are confined to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Where they may write.
    pub writes: Writes,
    /// Whether they may open network sockets.
    pub network: Network,
}

impl Sandbox {
    /// No confinement at all: what `--auto high` and `--sandbox off` give.
    pub fn open() -> Self {
        Sandbox {
            writes: Writes::Anywhere,
            network: Network::Open,
        }
    }

    /// Whether anything is confined.
    pub(crate) fn confines(&self) -> bool {
        *self != Sandbox::open()
    }

    /// This sandbox with `dir` writable too (the run's temporary directory).
    pub(crate) fn also_writable(&self, dir: PathBuf) -> Self {
        let writes = match &self.writes {
            Writes::Anywhere => Writes::Anywhere,
            Writes::Beneath(roots) => Writes::Beneath(roots.iter().cloned().chain([dir]).collect()),
        };
        Sandbox {
            writes,
            network: self.network,
        }
    }

    /// The guardian flags that carry this sandbox (see [`Sandbox::from_guard_flags`]).
    pub(crate) fn guard_flags(&self) -> Vec<OsString> {
        let mut flags = Vec::new();
        if let Writes::Beneath(roots) = &self.writes {
            flags.push(CONFINE_WRITES_FLAG.into());
            for root in roots {
                let mut flag = OsString::from(WRITE_ROOT_FLAG);
                flag.push("=");
                flag.push(root);
                flags.push(flag);
            }
        }
        if self.network == Network::Blocked {
            flags.push(BLOCK_NETWORK_FLAG.into());
        }
        flags
    }

    /// The sandbox the guardian flags describe: `--confine-writes` with its `--write-root`s,
    /// and `--block-network`.
    pub fn from_guard_flags(
        confine_writes: bool,
        roots: Vec<PathBuf>,
        block_network: bool,
    ) -> Self {
        Sandbox {
            writes: if confine_writes {
                Writes::Beneath(roots)
            } else {
                Writes::Anywhere
            },
            network: if block_network {
                Network::Blocked
            } else {
                Network::Open
            },
        }
    }
}

impl Default for Sandbox {
    /// [`Sandbox::open`].
    fn default() -> Self {
        Sandbox::open()
    }
}

/// The guardian flag that confines writes to the `--write-root`s.
const CONFINE_WRITES_FLAG: &str = "--confine-writes";
/// The guardian flag naming one directory writes are allowed beneath.
const WRITE_ROOT_FLAG: &str = "--write-root";
/// The guardian flag that blocks network sockets.
const BLOCK_NETWORK_FLAG: &str = "--block-network";

/// What the running kernel lets zero enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Landlock is built in and enabled.
    pub filesystem: bool,
    /// seccomp filters can be installed.
    pub network: bool,
}

impl Support {
    /// Asks the kernel, with a few system calls and no process: whether a Landlock ruleset can
    /// be created, and whether seccomp can filter with an errno.
    pub fn probe() -> Self {
        #[cfg(target_os = "linux")]
        {
            Support {
                filesystem: landlock::available(),
                network: seccomp::available(),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Support {
                filesystem: false,
                network: false,
            }
        }
    }
}

/// Why a guardian could not confine its command.
#[derive(Debug)]
pub struct EnforceError(String);

impl fmt::Display for EnforceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot apply the sandbox: {}", self.0)
    }
}

impl std::error::Error for EnforceError {}

/// Confines the calling thread and everything it starts from now on to `sandbox`. Called by
/// the guardian, on its only thread, right before it starts the command.
pub fn enforce(sandbox: &Sandbox) -> Result<(), EnforceError> {
    if !sandbox.confines() {
        return Ok(());
    }
    #[cfg(target_os = "linux")]
    {
        if let Writes::Beneath(roots) = &sandbox.writes {
            landlock::confine_writes(roots).map_err(EnforceError)?;
        }
        if sandbox.network == Network::Blocked {
            seccomp::block_network().map_err(EnforceError)?;
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(EnforceError(
            "this system has no sandbox zero can use".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_survives_the_guardian_flags() {
        let sandbox = Sandbox {
            writes: Writes::Beneath(vec!["/work/a b".into(), "/tmp/x".into()]),
            network: Network::Blocked,
        };
        let flags = sandbox.guard_flags();
        assert_eq!(
            flags,
            [
                "--confine-writes",
                "--write-root=/work/a b",
                "--write-root=/tmp/x",
                "--block-network"
            ]
        );
        let back = Sandbox::from_guard_flags(true, vec!["/work/a b".into(), "/tmp/x".into()], true);
        assert_eq!(back, sandbox);
        assert!(Sandbox::open().guard_flags().is_empty());
        assert!(!Sandbox::open().confines());
    }

    #[test]
    fn the_temporary_directory_is_added_only_where_writes_are_confined() {
        let confined = Sandbox {
            writes: Writes::Beneath(vec!["/w".into()]),
            network: Network::Open,
        };
        assert_eq!(
            confined.also_writable("/t".into()).writes,
            Writes::Beneath(vec!["/w".into(), "/t".into()])
        );
        assert_eq!(Sandbox::open().also_writable("/t".into()), Sandbox::open());
    }
}
