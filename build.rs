//! Lays out the release binary's code for start-up: the functions every `zero` process runs
//! (`--version`, `--list-tools`, a job's turns, a guardian) are placed together at the start of
//! `.text`, in the order `link/startup.order` lists them (`scripts/startup-order` writes it).
//!
//! Why: the kernel maps a binary's code 64 KiB around each page a process touches, so code
//! spread over the 13 MiB `.text` made every process map most of it — `zero exec`'s resident
//! memory was two thirds the binary's own clean pages (docs/PERFORMANCE.md). Packed, the same
//! run maps a fraction of it. The layout changes nothing else: a name the list has that the
//! binary lacks (the code moved on since the list was made) is skipped, and an unlisted
//! function keeps the linker's place.
//!
//! Only where the linker is known to take the list: a release build for x86_64 Linux (glibc)
//! linked by the toolchain's own `rust-lld` (Rust 1.90 on, unless a linker is configured).
//! GNU ld, for one, has no such option; every other build links exactly as before.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::process::Command;

/// The list of functions in start-up order, relative to the package root.
const ORDER_FILE: &str = "link/startup.order";

/// The first Rust release whose x86_64-unknown-linux-gnu target links with `rust-lld` by
/// default.
const LLD_BY_DEFAULT_SINCE: (u32, u32) = (1, 90);

fn main() {
    println!("cargo::rerun-if-changed={ORDER_FILE}");
    println!("cargo::rerun-if-changed=build.rs");
    if !links_with_rust_lld() {
        return;
    }
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let Ok(order) = std::fs::read(Path::new(&root).join(ORDER_FILE)) else {
        return;
    };
    // The linker reads a copy named by its content, so that a new list is a new link argument
    // and the binary is linked again (cargo does not know the linker reads the file).
    let mut hasher = DefaultHasher::new();
    order.hash(&mut hasher);
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let copy = Path::new(&out_dir).join(format!("startup-{:016x}.order", hasher.finish()));
    std::fs::write(&copy, &order).expect("OUT_DIR is writable");
    println!(
        "cargo::rustc-link-arg-bin=zero=-Wl,--symbol-ordering-file={}",
        copy.display()
    );
    // A name from an older build is expected, not worth a warning each.
    println!("cargo::rustc-link-arg-bin=zero=-Wl,--no-warn-symbol-ordering");
}

/// Whether this is a release build the toolchain's `rust-lld` links: the target is
/// x86_64-unknown-linux-gnu, the compiler links it with `rust-lld` by default (a Rust 1.90 or
/// later that ships it), and nothing chose another linker (`RUSTC_LINKER`, a `-C linker…` or
/// `-fuse-ld` in the flags).
fn links_with_rust_lld() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let release = var("PROFILE") == "release";
    let target = var("TARGET") == "x86_64-unknown-linux-gnu";
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let linker_chosen = std::env::var_os("RUSTC_LINKER").is_some()
        || ["linker", "fuse-ld", "link-self-contained"]
            .iter()
            .any(|flag| flags.contains(flag));
    release && target && !linker_chosen && rustc_ships_lld_by_default()
}

/// Whether `rustc` is a release that links x86_64 Linux with `rust-lld` by default and has it
/// in its sysroot (a distribution's build may leave it out, and then links with `cc`).
fn rustc_ships_lld_by_default() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = |args: &[&str]| -> Option<String> {
        let out = Command::new(&rustc).args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let Some(version) = output(&["-vV"]) else {
        return false;
    };
    let release = version
        .lines()
        .find_map(|line| line.strip_prefix("release: "))
        .and_then(|release| {
            let mut parts = release.split(['.', '-']);
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        });
    let Some(sysroot) = output(&["--print", "sysroot"]) else {
        return false;
    };
    let lld =
        Path::new(sysroot.trim()).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld/ld.lld");
    release.is_some_and(|release: (u32, u32)| release >= LLD_BY_DEFAULT_SINCE) && lld.is_file()
}
