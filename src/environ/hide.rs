//! The process's own initial environment, cleared of secret values.
//!
//! `/proc/<pid>/environ` shows the block of `NAME=value` strings the kernel laid out for the
//! process when it started, whatever the program did with its variables since. zero is not
//! dumpable, which closes that file to processes of the same user without `CAP_SYS_PTRACE`;
//! a root process with it (a command at `--auto high` in a root container, a monitoring agent)
//! reads it all the same. So, first thing in `main` and before any thread exists,
//! [`hide_secret_values`] moves every secret value (the provider's key variables, and every
//! variable whose name looks like a secret's) to a copy on the heap — where the process, and
//! the environments it builds for its children, still find it — and overwrites the original
//! bytes with `*`. What remains readable there is the names, and how long each value was.
//!
//! Hand-written on `libc::environ` because no crate does this: it is a few pointer reads, and
//! the only writes are within the strings the kernel gave this process.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;

use super::names::{KEY_VARIABLES, looks_secret};

#[cfg(target_os = "linux")]
unsafe extern "C" {
    /// The C library's environment array (POSIX), declared here rather than through `libc`,
    /// which declares it for glibc only.
    static mut environ: *mut *mut libc::c_char;
}

/// Moves secret values out of the initial environment block and overwrites them there (see
/// the module documentation).
///
/// # Safety
///
/// The caller must be the only thread of the process, and nothing may hold a pointer
/// returned by `getenv` across the call: the environment is rewritten in place.
#[cfg(target_os = "linux")]
pub unsafe fn hide_secret_values() {
    for entry in secret_entries() {
        // SAFETY: the caller guarantees no other thread reads or writes the environment.
        unsafe { move_off_the_block(entry) };
    }
}

/// Elsewhere the initial environment is not readable by other processes the same way.
///
/// # Safety
///
/// None needed; kept `unsafe` to match the Linux signature.
#[cfg(not(target_os = "linux"))]
pub unsafe fn hide_secret_values() {}

/// One `NAME=value` string in the initial block whose value is a secret.
#[cfg(target_os = "linux")]
struct Entry {
    /// The string itself, in the block.
    string: *mut libc::c_char,
    /// Where its value starts within it.
    value_at: usize,
    /// How many bytes the value has.
    value_len: usize,
}

/// The entries of `environ` whose names are a provider key variable or look secret, with a
/// non-empty value.
#[cfg(target_os = "linux")]
fn secret_entries() -> Vec<Entry> {
    let mut entries = Vec::new();
    // SAFETY: `environ` is a null-terminated array of C strings, read while this is the only
    // thread (see `hide_secret_values`).
    unsafe {
        let mut cursor = environ;
        while !cursor.is_null() && !(*cursor).is_null() {
            let string = *cursor;
            let bytes = CStr::from_ptr(string).to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                let name = String::from_utf8_lossy(&bytes[..eq]);
                let secret = KEY_VARIABLES.contains(&name.as_ref()) || looks_secret(&name);
                if secret && eq + 1 < bytes.len() {
                    entries.push(Entry {
                        string,
                        value_at: eq + 1,
                        value_len: bytes.len() - eq - 1,
                    });
                }
            }
            cursor = cursor.add(1);
        }
    }
    entries
}

/// Points the variable at a heap copy of its value, then overwrites the value in the block —
/// only once `environ` no longer points at it, so the variable is never lost.
///
/// # Safety
///
/// `entry` came from [`secret_entries`] and the caller is the only thread.
#[cfg(target_os = "linux")]
unsafe fn move_off_the_block(entry: Entry) {
    // SAFETY: `entry.string` is a live C string of the environment (see `secret_entries`).
    let bytes = unsafe { CStr::from_ptr(entry.string) }.to_bytes().to_vec();
    let name = OsStr::from_bytes(&bytes[..entry.value_at - 1]);
    let value = OsStr::from_bytes(&bytes[entry.value_at..]);
    // SAFETY: the caller guarantees this is the only thread.
    unsafe { std::env::set_var(name, value) };
    if still_in_environ(entry.string) {
        return;
    }
    // SAFETY: the value lies within the string, which the kernel placed in this process's
    // writable memory and which nothing refers to any more.
    unsafe {
        std::ptr::write_bytes(
            entry.string.add(entry.value_at).cast::<u8>(),
            b'*',
            entry.value_len,
        );
    }
}

/// Whether some entry of `environ` is still `string`.
#[cfg(target_os = "linux")]
fn still_in_environ(string: *mut libc::c_char) -> bool {
    // SAFETY: as in `secret_entries`.
    unsafe {
        let mut cursor = environ;
        while !cursor.is_null() && !(*cursor).is_null() {
            if *cursor == string {
                return true;
            }
            cursor = cursor.add(1);
        }
    }
    false
}
