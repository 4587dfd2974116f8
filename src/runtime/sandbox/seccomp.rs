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

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::Network;

/// x86_64's marker for x32 system call numbers.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Whether the kernel can filter system calls with an errno, asked without installing a
/// filter (`SECCOMP_GET_ACTION_AVAIL`).
pub(super) fn available() -> bool {
    let action: u32 = libc::SECCOMP_RET_ERRNO;
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
    let filter = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        TargetArch::try_from(std::env::consts::ARCH)?,
    )?;
    Ok(filter.try_into()?)
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
    fn unix_sockets_are_the_only_family_without_the_network() {
        assert_eq!(Families { clients: false }.allowed(), [libc::AF_UNIX]);
        let clients = Families { clients: true }.allowed();
        assert!(!clients.contains(&libc::AF_PACKET));
        assert!(clients.contains(&libc::AF_INET6));
    }
}
