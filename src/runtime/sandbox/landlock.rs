//! Writes confined with Landlock, through the `landlock` crate (the Landlock maintainers' own
//! library, which downgrades to what the running kernel offers by itself).

use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};

/// The newest filesystem rights asked for. ABI 8 is the last before ABI 9's `ResolveUnix`,
/// which would also close Unix sockets outside the writable roots: those stay open (a
/// command may talk to a local daemon; it may not reach the network).
const TARGET: ABI = ABI::V8;

/// The devices every command may write to, as a terminal session can.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Whether the kernel has Landlock built in and enabled: one ruleset created and closed.
pub(super) fn available() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(Ruleset::create)
        .is_ok()
}

/// Confines the calling thread and its future children: read and execute everywhere, write
/// only beneath `roots`, to [`DEVICES`], and to stdout and stderr when they are files (a
/// background task's output file, reopened as `/dev/stdout`).
pub(super) fn confine_writes(roots: &[PathBuf]) -> Result<(), String> {
    let write = AccessFs::from_all(TARGET);
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let stdio: Vec<BorrowedFd<'_>> = [stdout.as_fd(), stderr.as_fd()]
        .into_iter()
        .filter(|fd| is_regular_file(*fd))
        .collect();
    let status = Ruleset::default()
        .handle_access(write)
        .and_then(Ruleset::create)
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET)))
        })
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(roots, write)))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(DEVICES, write)))
        .and_then(|ruleset| {
            ruleset.add_rules(
                stdio
                    .into_iter()
                    .map(|fd| Ok(PathBeneath::new(fd, AccessFs::from_file(TARGET)))),
            )
        })
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|error| format!("Landlock: {error}"))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err("Landlock is not enforced by this kernel".into()),
    }
}

fn is_regular_file(fd: BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    nix::sys::stat::fstat(fd.as_raw_fd())
        .is_ok_and(|stat| stat.st_mode & libc::S_IFMT == libc::S_IFREG)
}
