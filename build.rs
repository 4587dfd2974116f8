//! Lays out the release binary's code for start-up: the functions every `zero` process runs
//! (`--version`, `--list-tools`, a job's turns, a guardian) are placed together at the start of
//! `.text`, in the order `link/startup.order` lists them (`scripts/startup-order` writes it).
//!
//! Why: the kernel maps a binary's code 64 KiB around each page a process touches, so code
//! spread over the 13 MiB `.text` made every process map most of it — `zero exec`'s resident
//! memory was two thirds the binary's own clean pages (docs/PERFORMANCE.md). Packed, the same
//! run maps a fraction of it. The layout changes nothing else: a name the list has that the
//! binary lacks (the code moved on since the list was made) is skipped, and an unlisted
//! function keeps the linker's place. The names carry crate hashes, which any change of the
//! dependencies changes: the list names the `Cargo.lock` it was written with, and a test
//! (`tests/integration/startup_order.rs`) fails when the tree's is another, so the change that
//! stales it writes it again.
//!
//! Only in a release build whose linker takes the list (`--symbol-ordering-file`: rust-lld, the
//! Rust toolchain's default on x86_64 Linux since 1.90, LLVM's lld, mold). GNU ld, for one, has
//! no such option: a trivial program is linked first the way this build links, with the
//! option, and only if that works does the binary get it. Every other build links as before.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The list of functions in start-up order, relative to the package root.
const ORDER_FILE: &str = "link/startup.order";

/// The linker options that apply the list; a name it lacks is expected (the list is from an
/// earlier build), not worth a warning each.
fn link_args(order: &Path) -> [String; 2] {
    [
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ]
}

fn main() {
    println!("cargo::rerun-if-changed={ORDER_FILE}");
    println!("cargo::rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("PROFILE") != "release" {
        return;
    }
    let Ok(order) = std::fs::read(Path::new(&var("CARGO_MANIFEST_DIR")).join(ORDER_FILE)) else {
        return;
    };
    // The linker reads a copy named by its content, so that a new list is a new link argument
    // and the binary is linked again (cargo does not know the linker reads the file).
    let mut hasher = DefaultHasher::new();
    order.hash(&mut hasher);
    let out_dir = PathBuf::from(var("OUT_DIR"));
    let copy = out_dir.join(format!("startup-{:016x}.order", hasher.finish()));
    std::fs::write(&copy, &order).expect("OUT_DIR is writable");
    if !linker_takes(&link_args(&copy), &out_dir) {
        return;
    }
    for arg in link_args(&copy) {
        println!("cargo::rustc-link-arg-bin=zero={arg}");
    }
}

/// Whether this build's link accepts `args`: an empty program compiled for the target with
/// the build's own flags and linker, and `args`, links.
fn linker_takes(args: &[String], out_dir: &Path) -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let source = out_dir.join("link_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let mut rustc = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    rustc
        .args(["--crate-type", "bin", "--target", &var("TARGET"), "-o"])
        .arg(out_dir.join("link_probe"))
        .arg(&source)
        .args(
            var("CARGO_ENCODED_RUSTFLAGS")
                .split('\x1f')
                .filter(|flag| !flag.is_empty()),
        );
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        rustc
            .arg("-C")
            .arg(format!("linker={}", linker.to_string_lossy()));
    }
    for arg in args {
        rustc.arg("-C").arg(format!("link-arg={arg}"));
    }
    rustc
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
