//! A confined command's privileges dropped: every capability out of every set, and
//! `no_new_privs`, so that no exec (a setuid binary, file capabilities, root's own exec
//! rule) gives any of them back.
//!
//! Why all of them: a command below `--auto high` is an ordinary program working on the
//! workspace, and none of its business needs a capability, while each one is a way past the
//! sandbox or zero's secrets when the run is root (the usual CI container):
//! `CAP_SYS_PTRACE` reads any process's memory and `/proc/<pid>/environ` (zero's key
//! included, past its non-dumpable flag); `CAP_NET_RAW` and `CAP_NET_ADMIN` capture or
//! reroute traffic; `CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`, `CAP_FOWNER`, `CAP_CHOWN`
//! and `CAP_FSETID` read, change the mode, owner and times of files the user does not own
//! (Landlock does not govern metadata); `CAP_SETUID`/`CAP_SETGID`/`CAP_SETPCAP` become
//! another user or hand capabilities on; `CAP_SYS_ADMIN` mounts, `CAP_SYS_MODULE` loads
//! kernel code, `CAP_KILL` signals processes outside the run, `CAP_MKNOD` makes devices,
//! `CAP_SYS_CHROOT`, `CAP_BPF`, `CAP_PERFMON`, `CAP_SYS_RAWIO`, `CAP_SYS_BOOT`,
//! `CAP_SYS_TIME` reach the machine. Keeping a short list of "harmless" ones would be a
//! decision to revisit with each kernel; dropping all is one that needs none.
//!
//! The consequence worth knowing: a root command keeps uid 0 and so the files root owns,
//! but loses what root may do to other users' files — a workspace owned by another user is
//! not writable to it (`--auto high`, or running zero as the workspace's owner, lifts that).
//!
//! The `caps` crate does the capability calls; the bounding set can only be emptied with
//! `CAP_SETPCAP` (root has it, an unprivileged user has nothing in it to fear, since
//! `no_new_privs` stops exec from granting any of it).

use caps::{CapSet, Capability};

/// Drops every capability of the calling thread, for good, and sets `no_new_privs`.
pub(super) fn drop_all() -> Result<(), String> {
    set_no_new_privs()?;
    let failed = |set: &str, error: caps::errors::CapsError| {
        format!("cannot drop the {set} capabilities: {error}")
    };
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false) {
        caps::clear(None, CapSet::Bounding).map_err(|e| failed("bounding", e))?;
    }
    caps::clear(None, CapSet::Ambient).map_err(|e| failed("ambient", e))?;
    caps::clear(None, CapSet::Inheritable).map_err(|e| failed("inheritable", e))?;
    // Clears the effective set with the permitted one.
    caps::clear(None, CapSet::Permitted).map_err(|e| failed("permitted", e))
}

/// Makes sure the calling thread may install a seccomp filter: the kernel allows it with
/// `no_new_privs` or `CAP_SYS_ADMIN`. With the capability (root at `--auto high`) nothing
/// changes, so setuid programs keep working; without it `no_new_privs` is set, and from then
/// on no exec grants privileges (`sudo` stops working in that tree).
pub(super) fn allow_filters() -> Result<(), String> {
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SYS_ADMIN).unwrap_or(false) {
        return Ok(());
    }
    set_no_new_privs()
}

/// `PR_SET_NO_NEW_PRIVS`: from now on, exec never grants privileges (setuid, setgid, file
/// capabilities, root's full set).
fn set_no_new_privs() -> Result<(), String> {
    // SAFETY: a plain prctl on this thread, with no pointer arguments.
    let answer = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if answer == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot set no_new_privs: {}",
            std::io::Error::last_os_error()
        ))
    }
}
