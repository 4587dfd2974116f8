//! The network closed with a seccomp filter, compiled by `seccompiler`: Firecracker's
//! pure-Rust BPF compiler, so zero needs no C library at build or run time (the `libseccomp`
//! crate binds the C library, which every machine running zero would then need).
//!
//! The filter fails `socket(2)` for `AF_INET` and `AF_INET6` with `EACCES` and allows every
//! other call, Unix sockets included. `io_uring_setup(2)` fails too (as under Docker's default
//! profile; programs fall back to plain system calls): io_uring can create sockets without
//! `socket(2)`, out of the filter's sight. On x86_64 the x32 numbering of the same calls is blocked too, and a
//! process of another architecture (an i386 binary, whose `socketcall(2)` the filter cannot
//! read) is killed by the filter's architecture check.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

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

/// Installs the filter on the calling thread (and sets `no_new_privs`, which a filter needs).
pub(super) fn block_network() -> Result<(), String> {
    let program = filter().map_err(|error| format!("seccomp: {error}"))?;
    seccompiler::apply_filter(&program).map_err(|error| format!("seccomp: {error}"))
}

fn filter() -> Result<BpfProgram, seccompiler::Error> {
    let ip_socket = |family: i32| {
        SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            family as u64,
        )?])
    };
    let sockets = vec![ip_socket(libc::AF_INET)?, ip_socket(libc::AF_INET6)?];
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    refused.insert(libc::SYS_socket, sockets.clone());
    // No rule: refused whatever the arguments.
    refused.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        refused.insert(libc::SYS_socket | X32_SYSCALL_BIT, sockets);
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
    fn the_filter_compiles_for_this_machine() {
        assert!(filter().is_ok_and(|program| !program.is_empty()));
    }
}
