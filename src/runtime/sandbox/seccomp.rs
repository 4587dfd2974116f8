//! The network closed with a seccomp filter, compiled by `seccompiler`: Firecracker's
//! pure-Rust BPF compiler, so zero needs no C library at build or run time (the `libseccomp`
//! crate binds the C library, which every machine running zero would then need).
//!
//! The filter is an allow-list of socket families, never a list of what is refused: a family
//! the kernel adds tomorrow is refused until zero names it here. [`Network::Blocked`] allows
//! `AF_UNIX` alone (a command may talk to a local daemon through a socket file, the
//! filesystem rules decide which); [`Network::Clients`] adds what a network client needs:
//! `AF_INET`, `AF_INET6`, and `AF_NETLINK` for `NETLINK_ROUTE` only (glibc's `getaddrinfo`
//! asks it which address families the host has; without it, it assumes both). Everything
//! else — `AF_PACKET` (which captures every frame on an interface, zero's own request to the
//! model included, when the process has `CAP_NET_RAW`), the other netlink protocols,
//! `AF_VSOCK`, `AF_BLUETOOTH`, `AF_ALG`, … — fails `socket(2)` and `socketpair(2)` with
//! `EACCES`. `io_uring_setup(2)` fails too (as under Docker's default profile; programs fall
//! back to plain system calls): io_uring can create sockets without `socket(2)`, out of the
//! filter's sight. On x86_64 the x32 numbering of the same calls is filtered too, and a
//! process of another architecture (an i386 binary, whose `socketcall(2)` the filter cannot
//! read) is killed by the filter's architecture check.
//!
//! The exec check's filter ([`listen_for_execs`]) is compiled the same way. It sends
//! `execve(2)` and `execveat(2)` to the guardian (`SECCOMP_RET_USER_NOTIF`, answered through
//! the listener descriptor the kernel returns for `SECCOMP_FILTER_FLAG_NEW_LISTENER`), and a
//! second filter refuses every later filter that asks for a listener of its own: the kernel
//! hands a notification to the newest filter that asks for one, so a command that installed
//! its own would answer its own execs. seccompiler has no user-notification action, so the
//! exec filter is compiled with `SECCOMP_RET_TRACE` as a stand-in whose return instructions
//! are then rewritten; both are installed with `seccomp(2)` directly, since seccompiler's
//! installer always sets `no_new_privs`, which `--auto high` as root does without.

use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use super::Network;

/// x86_64's marker for x32 system call numbers.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Whether the kernel can filter system calls with an errno, asked without installing a
/// filter (`SECCOMP_GET_ACTION_AVAIL`).
pub(super) fn available() -> bool {
    action_available(libc::SECCOMP_RET_ERRNO)
}

/// Whether the kernel knows the filter return `action` (`SECCOMP_GET_ACTION_AVAIL`).
fn action_available(action: u32) -> bool {
    // SAFETY: the seccomp call only reads the u32 it is pointed at, which lives across it.
    let answer = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    answer == 0
}

/// Whether the kernel can hand system calls to a listener (`SECCOMP_RET_USER_NOTIF`, Linux
/// 5.0), asked without installing a filter.
pub(super) fn notifications_available() -> bool {
    action_available(libc::SECCOMP_RET_USER_NOTIF)
}

/// Installs the exec check's filters on the calling thread (see the module documentation) and
/// returns the listener its execs are answered on (close-on-exec, as the kernel makes it). The
/// caller has made sure the kernel lets it install a filter (`no_new_privs`, or
/// `CAP_SYS_ADMIN`).
pub(super) fn listen_for_execs() -> Result<OwnedFd, String> {
    let seccomp = |error: seccompiler::Error| format!("seccomp: {error}");
    let execs = notify_execs().map_err(seccomp)?;
    let no_listeners = refuse_listeners().map_err(seccomp)?;
    let listener = install(&execs, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    install(&no_listeners, 0)?;
    // SAFETY: with SECCOMP_FILTER_FLAG_NEW_LISTENER the kernel returns a new descriptor that
    // nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(listener) })
}

/// The filter that sends every `execve` and `execveat` to the listener.
fn notify_execs() -> Result<BpfProgram, seccompiler::Error> {
    let mut notified: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [libc::SYS_execve, libc::SYS_execveat] {
        notified.insert(call, Vec::new());
    }
    #[cfg(target_arch = "x86_64")]
    // x32's own numbers for both, and the 64-bit numbers with the x32 bit: the guardian
    // refuses them all (it reads 64-bit argv only).
    for call in [libc::SYS_execve, libc::SYS_execveat, 520, 545] {
        notified.insert(call | X32_SYSCALL_BIT, Vec::new());
    }
    let stand_in = SeccompAction::Trace(0);
    let filter = SeccompFilter::new(
        notified,
        SeccompAction::Allow,
        stand_in.clone(),
        TargetArch::try_from(std::env::consts::ARCH)?,
    )?;
    let mut program: BpfProgram = filter.try_into()?;
    let stand_in = u32::from(stand_in);
    for instruction in &mut program {
        if instruction.code == BPF_RET_K && instruction.k == stand_in {
            instruction.k = libc::SECCOMP_RET_USER_NOTIF;
        }
    }
    Ok(program)
}

/// `BPF_RET | BPF_K`: return the immediate value.
const BPF_RET_K: u16 = 0x06;

/// The filter that refuses (`EACCES`) a `seccomp(SECCOMP_SET_MODE_FILTER)` asking for a
/// listener.
fn refuse_listeners() -> Result<BpfProgram, seccompiler::Error> {
    // `c_ulong` is 32 bits wide on 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    let listener = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as u64;
    let rule = SeccompRule::new(vec![
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::SECCOMP_SET_MODE_FILTER as u64,
        )?,
        SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(listener),
            listener,
        )?,
    ])?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    refused.insert(libc::SYS_seccomp, vec![rule.clone()]);
    #[cfg(target_arch = "x86_64")]
    refused.insert(libc::SYS_seccomp | X32_SYSCALL_BIT, vec![rule]);
    refusing(refused)
}

/// The program that refuses each system call of `refused` whose rules match (any call of it
/// when its list is empty) with `EACCES`, and allows everything else.
fn refusing(refused: BTreeMap<i64, Vec<SeccompRule>>) -> Result<BpfProgram, seccompiler::Error> {
    let filter = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        TargetArch::try_from(std::env::consts::ARCH)?,
    )?;
    Ok(filter.try_into()?)
}

/// Installs `program` on the calling thread with `flags`; returns what `seccomp(2)` did (the
/// listener's descriptor with `SECCOMP_FILTER_FLAG_NEW_LISTENER`).
fn install(program: &[sock_filter], flags: libc::c_ulong) -> Result<libc::c_int, String> {
    #[repr(C)]
    struct SockFprog {
        len: libc::c_ushort,
        filter: *const sock_filter,
    }
    let length = libc::c_ushort::try_from(program.len())
        .map_err(|_| "seccomp: the filter is too long".to_owned())?;
    let fprog = SockFprog {
        len: length,
        filter: program.as_ptr(),
    };
    // SAFETY: the kernel copies the program, which lives across the call, and reads nothing
    // else.
    let answer = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const SockFprog,
        )
    };
    if answer < 0 {
        return Err(format!("seccomp: {}", std::io::Error::last_os_error()));
    }
    Ok(answer as libc::c_int)
}

/// Installs the filter for `network` on the calling thread (and sets `no_new_privs`, which a
/// filter needs). [`Network::Open`] installs nothing.
pub(super) fn confine_sockets(network: Network) -> Result<(), String> {
    let Some(families) = Families::of(network) else {
        return Ok(());
    };
    let program = filter(families).map_err(|error| format!("seccomp: {error}"))?;
    seccompiler::apply_filter(&program).map_err(|error| format!("seccomp: {error}"))
}

/// The socket families a filtered command may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Families {
    /// `AF_INET`, `AF_INET6` and `AF_NETLINK`/`NETLINK_ROUTE` besides `AF_UNIX`.
    clients: bool,
}

impl Families {
    /// The allow-list for `network`; `None` when nothing is filtered.
    fn of(network: Network) -> Option<Families> {
        match network {
            Network::Open => None,
            Network::Clients => Some(Families { clients: true }),
            Network::Blocked => Some(Families { clients: false }),
        }
    }

    /// Every family allowed for some protocol.
    fn allowed(self) -> Vec<i32> {
        let mut families = vec![libc::AF_UNIX];
        if self.clients {
            families.extend([libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK]);
        }
        families
    }
}

/// The rules whose match refuses `socket(2)`: a family outside the allow-list, or (for
/// clients) a netlink protocol other than `NETLINK_ROUTE`. Conditions of one rule must all
/// hold; any one rule refuses.
fn refused_sockets(families: Families) -> Result<Vec<SeccompRule>, seccompiler::Error> {
    let mut rules = vec![not_any_of(&families.allowed())?];
    if families.clients {
        rules.push(SeccompRule::new(vec![
            argument(0, SeccompCmpOp::Eq, libc::AF_NETLINK)?,
            argument(2, SeccompCmpOp::Ne, libc::NETLINK_ROUTE)?,
        ])?);
    }
    Ok(rules)
}

/// A rule matching a first argument that is none of `families`.
fn not_any_of(families: &[i32]) -> Result<SeccompRule, seccompiler::Error> {
    let conditions = families
        .iter()
        .map(|family| argument(0, SeccompCmpOp::Ne, *family))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SeccompRule::new(conditions)?)
}

/// A condition on the 32-bit integer argument `index` (the kernel reads an `int`).
fn argument(
    index: u8,
    op: SeccompCmpOp,
    value: i32,
) -> Result<SeccompCondition, seccompiler::Error> {
    Ok(SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        op,
        value as u32 as u64,
    )?)
}

fn filter(families: Families) -> Result<BpfProgram, seccompiler::Error> {
    let sockets = refused_sockets(families)?;
    // socketpair(2) makes connected pairs of the families that support them; only Unix pairs
    // are a local program's business.
    let pairs = vec![not_any_of(&[libc::AF_UNIX])?];
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    refused.insert(libc::SYS_socket, sockets.clone());
    refused.insert(libc::SYS_socketpair, pairs.clone());
    // No rule: refused whatever the arguments.
    refused.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        refused.insert(libc::SYS_socket | X32_SYSCALL_BIT, sockets);
        refused.insert(libc::SYS_socketpair | X32_SYSCALL_BIT, pairs);
        refused.insert(libc::SYS_io_uring_setup | X32_SYSCALL_BIT, Vec::new());
    }
    refusing(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_for_this_machine() {
        for clients in [false, true] {
            assert!(filter(Families { clients }).is_ok_and(|program| !program.is_empty()));
        }
        assert_eq!(Families::of(Network::Open), None);
    }

    #[test]
    fn the_exec_filters_compile_and_notify_in_place_of_the_stand_in() {
        let execs = notify_execs().unwrap();
        let returns = |program: &BpfProgram, value: u32| {
            program.iter().any(|i| i.code == BPF_RET_K && i.k == value)
        };
        assert!(returns(&execs, libc::SECCOMP_RET_USER_NOTIF));
        assert!(!returns(&execs, u32::from(SeccompAction::Trace(0))));
        assert!(!refuse_listeners().unwrap().is_empty());
    }

    #[test]
    fn unix_sockets_are_the_only_family_without_the_network() {
        assert_eq!(Families { clients: false }.allowed(), [libc::AF_UNIX]);
        let clients = Families { clients: true }.allowed();
        assert!(!clients.contains(&libc::AF_PACKET));
        assert!(clients.contains(&libc::AF_INET6));
    }
}
