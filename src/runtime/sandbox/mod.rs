//! The kernel sandbox every command of a run is confined by: Landlock for where it may write,
//! seccomp for which sockets it may open, and no capabilities at all (`privileges`).
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
mod privileges;
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

/// Where a run's commands may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writes {
    /// Anywhere the user may (`--auto high`, or no sandbox).
    Anywhere,
    /// Only beneath these directories, and to the usual devices (`/dev/null`, `/dev/tty`, …)
    /// and the command's own stdout and stderr; reading and executing stay allowed everywhere.
    Beneath(Vec<PathBuf>),
}

/// Which sockets a run's commands may open. Below `--auto high` it is an allow-list of
/// families (see `seccomp`): whatever is not named is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Any socket (`--auto high`, or no sandbox).
    Open,
    /// What a network client needs (`--network` below high): Unix, IPv4 and IPv6 sockets and
    /// netlink's routing protocol; every other family (`AF_PACKET`, `AF_VSOCK`, …) fails
    /// with `EACCES`.
    Clients,
    /// Unix sockets only: no IPv4 or IPv6 socket, nor any other family.
    Blocked,
}

/// Whether a run's commands keep the capabilities zero was started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privileges {
    /// As zero has them (`--auto high`, or no sandbox).
    Kept,
    /// None at all, and `no_new_privs`: a root command below `--auto high` is uid 0 without
    /// root's powers (see `privileges`).
    Dropped,
}

/// What one run's commands are confined to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Where they may write.
    pub writes: Writes,
    /// Which sockets they may open.
    pub network: Network,
    /// Whether they keep zero's capabilities.
    pub privileges: Privileges,
}

impl Sandbox {
    /// No confinement at all: what `--auto high` and `--sandbox off` give.
    pub fn open() -> Self {
        Sandbox {
            writes: Writes::Anywhere,
            network: Network::Open,
            privileges: Privileges::Kept,
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
            ..self.clone()
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
        match self.network {
            Network::Open => {}
            Network::Clients => flags.push(CLIENT_NETWORK_FLAG.into()),
            Network::Blocked => flags.push(BLOCK_NETWORK_FLAG.into()),
        }
        if self.privileges == Privileges::Dropped {
            flags.push(DROP_PRIVILEGES_FLAG.into());
        }
        flags
    }

    /// The sandbox the guardian flags describe (see [`GuardFlags`]).
    pub fn from_guard_flags(flags: GuardFlags) -> Self {
        Sandbox {
            writes: if flags.confine_writes {
                Writes::Beneath(flags.write_roots)
            } else {
                Writes::Anywhere
            },
            network: match (flags.block_network, flags.client_network) {
                (true, _) => Network::Blocked,
                (false, true) => Network::Clients,
                (false, false) => Network::Open,
            },
            privileges: if flags.drop_privileges {
                Privileges::Dropped
            } else {
                Privileges::Kept
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

/// The sandbox as `zero __guard`'s flags carry it: `--confine-writes` with its
/// `--write-root`s, `--block-network` or `--client-network`, `--drop-privileges`.
#[derive(Debug, Clone, Default)]
pub struct GuardFlags {
    /// `--confine-writes`.
    pub confine_writes: bool,
    /// Every `--write-root`.
    pub write_roots: Vec<PathBuf>,
    /// `--block-network`: Unix sockets only (wins over `client_network`).
    pub block_network: bool,
    /// `--client-network`: the families a network client needs.
    pub client_network: bool,
    /// `--drop-privileges`.
    pub drop_privileges: bool,
}

/// The guardian flag that confines writes to the `--write-root`s.
const CONFINE_WRITES_FLAG: &str = "--confine-writes";
/// The guardian flag naming one directory writes are allowed beneath.
const WRITE_ROOT_FLAG: &str = "--write-root";
/// The guardian flag that allows Unix sockets only.
const BLOCK_NETWORK_FLAG: &str = "--block-network";
/// The guardian flag that allows a network client's socket families only.
const CLIENT_NETWORK_FLAG: &str = "--client-network";
/// The guardian flag that drops every capability.
const DROP_PRIVILEGES_FLAG: &str = "--drop-privileges";

/// What the running kernel lets zero enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Landlock is built in and enabled.
    pub filesystem: bool,
    /// seccomp filters can be installed.
    pub network: bool,
    /// Capabilities can be dropped (Linux).
    pub privileges: bool,
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
                privileges: true,
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Support {
                filesystem: false,
                network: false,
                privileges: false,
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
        // Capabilities first: dropping the bounding set needs CAP_SETPCAP, which nothing
        // below needs.
        if sandbox.privileges == Privileges::Dropped {
            privileges::drop_all().map_err(EnforceError)?;
        }
        if let Writes::Beneath(roots) = &sandbox.writes {
            landlock::confine_writes(roots).map_err(EnforceError)?;
        }
        seccomp::confine_sockets(sandbox.network).map_err(EnforceError)
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
            privileges: Privileges::Dropped,
        };
        let flags = sandbox.guard_flags();
        assert_eq!(
            flags,
            [
                "--confine-writes",
                "--write-root=/work/a b",
                "--write-root=/tmp/x",
                "--block-network",
                "--drop-privileges"
            ]
        );
        let back = Sandbox::from_guard_flags(GuardFlags {
            confine_writes: true,
            write_roots: vec!["/work/a b".into(), "/tmp/x".into()],
            block_network: true,
            client_network: false,
            drop_privileges: true,
        });
        assert_eq!(back, sandbox);
        let clients = Sandbox {
            network: Network::Clients,
            privileges: Privileges::Kept,
            ..Sandbox::open()
        };
        assert_eq!(clients.guard_flags(), ["--client-network"]);
        let back = Sandbox::from_guard_flags(GuardFlags {
            client_network: true,
            ..GuardFlags::default()
        });
        assert_eq!(back, clients);
        assert!(Sandbox::open().guard_flags().is_empty());
        assert!(!Sandbox::open().confines());
    }

    #[test]
    fn the_temporary_directory_is_added_only_where_writes_are_confined() {
        let confined = Sandbox {
            writes: Writes::Beneath(vec!["/w".into()]),
            ..Sandbox::open()
        };
        assert_eq!(
            confined.also_writable("/t".into()).writes,
            Writes::Beneath(vec!["/w".into(), "/t".into()])
        );
        assert_eq!(Sandbox::open().also_writable("/t".into()), Sandbox::open());
    }
}
