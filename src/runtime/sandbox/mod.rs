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
//!
//! The deny rules on commands ride along ([`ExecRules`]): when a run has some, the model's
//! commands' guardians have every exec of the command's tree stopped by a seccomp filter
//! until they have checked it ([`watch_execs`], served by `runtime::guardian::execs`).

#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod privileges;
#[cfg(target_os = "linux")]
mod seccomp;

use std::ffi::OsString;
use std::fmt;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use crate::command_pattern::DenyRule;

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

/// The deny rules on commands (`--deny 'bash(git push *)'`) that every program a command's
/// tree executes is checked against when it is executed: the exec check, enforced by the
/// command's guardian. Empty when the run has none, and then nothing is installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecRules(Vec<DenyRule>);

/// The guardian flag carrying one deny rule of the exec check, as JSON (the rule as written
/// and its pattern: a rule may hold any character but NUL).
const DENY_EXEC_FLAG: &str = "--deny-exec";

impl ExecRules {
    /// The exec check of `rules`.
    pub(crate) fn new(rules: Vec<DenyRule>) -> Self {
        ExecRules(rules)
    }

    /// Whether there is nothing to check.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rules, in order.
    pub(crate) fn rules(&self) -> &[DenyRule] {
        &self.0
    }

    /// The guardian flags that carry these rules (see [`ExecRules::from_guard_flags`]).
    pub(crate) fn guard_flags(&self) -> Vec<OsString> {
        self.0
            .iter()
            .filter_map(|rule| serde_json::to_string(rule).ok())
            .map(|json| format!("{DENY_EXEC_FLAG}={json}").into())
            .collect()
    }

    /// The rules the values of the guardian's `--deny-exec` flags describe; an error names a
    /// value that is not one.
    pub fn from_guard_flags(values: &[String]) -> Result<Self, String> {
        values
            .iter()
            .map(|value| {
                serde_json::from_str(value)
                    .map_err(|error| format!("{DENY_EXEC_FLAG} {value}: {error}"))
            })
            .collect::<Result<Vec<DenyRule>, String>>()
            .map(ExecRules)
    }
}

/// What the running kernel lets zero enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Landlock is built in and enabled.
    pub filesystem: bool,
    /// seccomp filters can be installed.
    pub network: bool,
    /// Capabilities can be dropped (Linux).
    pub privileges: bool,
    /// The exec check can be enforced: seccomp can hand system calls to a listener (Linux
    /// 5.0) and a guardian can read the memory of the processes below it (no Yama
    /// `ptrace_scope` of 2 or more, and `process_vm_readv(2)` is not filtered away).
    pub execs: bool,
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
                execs: seccomp::notifications_available() && memory_readable(),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Support {
                filesystem: false,
                network: false,
                privileges: false,
                execs: false,
            }
        }
    }
}

/// Whether a guardian can read the arguments of a process below it: Yama (when present)
/// lets a process read its descendants' memory at `ptrace_scope` 0 and 1 only, and a
/// container's own seccomp profile may refuse `process_vm_readv(2)`, which reading this
/// process's own memory finds out.
#[cfg(target_os = "linux")]
fn memory_readable() -> bool {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let probe = [1u8; 8];
    let mut copy = [0u8; 8];
    let local = libc::iovec {
        iov_base: copy.as_mut_ptr().cast(),
        iov_len: copy.len(),
    };
    let remote = libc::iovec {
        iov_base: probe.as_ptr() as *mut libc::c_void,
        iov_len: probe.len(),
    };
    // SAFETY: both vectors point at live buffers of the stated lengths; the call writes only
    // into `copy`.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    scope < 2 && read == 8 && copy == probe
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

/// Stops every exec of the calling thread and everything it starts from now on until the
/// listener returned answers it (see `runtime::guardian::execs`). Called by a guardian with
/// [`ExecRules`], on its only thread, after [`enforce`]: below `--auto high` `no_new_privs`
/// is set already; at high it is set now unless the guardian has `CAP_SYS_ADMIN` (root).
pub fn watch_execs() -> Result<OwnedFd, EnforceError> {
    #[cfg(target_os = "linux")]
    {
        privileges::allow_filters().map_err(EnforceError)?;
        seccomp::listen_for_execs().map_err(EnforceError)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(EnforceError(
            "this system cannot check the programs a command runs".into(),
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
    fn exec_rules_survive_the_guardian_flags() {
        let rules = ExecRules::new(vec![DenyRule {
            rule: "Bash(git push:*)".into(),
            pattern: crate::command_pattern::CommandPattern::parse("git push:*").unwrap(),
        }]);
        let values: Vec<String> = rules
            .guard_flags()
            .into_iter()
            .map(|flag| {
                let flag = flag.into_string().unwrap();
                flag.strip_prefix("--deny-exec=").unwrap().to_owned()
            })
            .collect();
        assert_eq!(ExecRules::from_guard_flags(&values).unwrap(), rules);
        assert!(ExecRules::from_guard_flags(&["{".into()]).is_err());
        assert!(ExecRules::default().guard_flags().is_empty());
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
