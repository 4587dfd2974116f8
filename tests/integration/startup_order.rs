//! `link/startup.order` is for the dependencies it was written with: its names carry crate
//! hashes, which a dependency added, removed or updated changes, and a stale list lays the
//! release binary out as if there were none (more of its code mapped by every process: the
//! memory rows of docs/PERFORMANCE.md). The file says which `Cargo.lock` it was written from;
//! this test fails when that is not the lock of the tree, so the list is written again with the
//! change that stales it (`cargo build --release && scripts/startup-order`).

use sha2::{Digest, Sha256};

#[test]
fn the_startup_order_was_written_with_these_dependencies() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let order = std::fs::read_to_string(root.join("link/startup.order")).unwrap();
    let written = order
        .lines()
        .find_map(|line| line.strip_prefix("# Cargo.lock sha256: "))
        .expect("link/startup.order names the Cargo.lock it was written with");
    let lock = std::fs::read(root.join("Cargo.lock")).unwrap();
    let now: String = Sha256::digest(&lock)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(
        written, now,
        "Cargo.lock changed since link/startup.order was written: its names (crate hashes in \
         them) no longer match the release build; run `cargo build --release && \
         scripts/startup-order` and commit the list"
    );
}
