//! A reader that stops reading cannot hold a run hostage: `zero exec -o stream-json ... |
//! (sleep 600)` with a background task and a long streamed answer still ends on SIGTERM,
//! within its grace periods, with the signal's exit code and nothing left running.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::procs::{
    KillOnDrop, assert_gone_soon, blocked_writing_stdout, nonce, processes_with,
};
use crate::support::runs::{Home, background};
use crate::support::wait::{DEADLINE, wait_for};
use crate::support::zero::{Wire, zero_std_with};

/// Bytes waiting in the pipe whose read end is `reader`.
fn unread(reader: &OwnedFd) -> usize {
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which is valid for the call.
    let rc = unsafe { libc::ioctl(reader.as_raw_fd(), libc::FIONREAD, &mut waiting) };
    assert_eq!(rc, 0, "FIONREAD failed");
    waiting as usize
}

/// An answer far larger than the pipe and zero's queue hold together, in 2 KiB deltas; its
/// words numbered, since one word over and over is a model in a loop, which zero cuts.
fn flood() -> Reply {
    let words: String = (0..300 * 1024).map(|n| format!("word{n} ")).collect();
    Reply::text(&words)
        .in_pieces(2048)
        .event_gap(Duration::ZERO)
}

#[test]
fn sigterm_ends_a_run_whose_stdout_is_never_read() {
    let workspace = tempfile::tempdir().unwrap();
    let home = Home::new();
    let marker = nonce();
    let _cleanup = KillOnDrop(marker.clone());
    let server = FakeModel::start(
        Script::new()
            .reply(background(&format!("sleep {marker}")))
            .reply(flood())
            .reply(Reply::text("done")),
    );
    let (reader, writer) = nix::unistd::pipe().unwrap();
    let mut child = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_HOME", home.path())
        .env("ZERO_KILL_GRACE_MS", "300")
        .current_dir(workspace.path())
        .args(["exec", "--auto", "medium", "-o", "stream-json", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });

    // The task runs, and stdout is full: nothing more can be written until someone reads.
    wait_for("the background task", DEADLINE, || {
        (!processes_with(&marker).is_empty()).then_some(())
    });
    wait_for("a write to stdout that blocks", DEADLINE, || {
        (unread(&reader) > 0 && blocked_writing_stdout(child.id() as i32)).then_some(())
    });
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();

    // The deadline is far more than the grace periods of the stop add up to.
    let status = wait_for("zero to exit after SIGTERM", DEADLINE, || {
        child.try_wait().unwrap()
    });
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_gone_soon(&marker);
    let stderr = stderr.join().unwrap();
    assert!(
        stderr.contains("stdout is not being read"),
        "the dropped output is reported on stderr: {stderr}"
    );
    let record = &home.records()[0];
    assert_eq!(record["status"], "killed", "{record}");
    drop(reader);
}

#[test]
fn the_deadline_ends_a_run_whose_stdout_is_never_read_in_every_format() {
    for format in ["stream-json", "json", "text"] {
        let workspace = tempfile::tempdir().unwrap();
        let home = Home::new();
        let marker = nonce();
        let _cleanup = KillOnDrop(marker.clone());
        // In stream-json the deltas fill the pipe and zero's queue long before the deadline;
        // then the model says nothing more, ever.
        let server = FakeModel::start(
            Script::new()
                .reply(background(&format!("sleep {marker}")))
                .reply(flood().stall()),
        );
        let (reader, writer) = nix::unistd::pipe().unwrap();
        let mut child = zero_std_with(&server, Wire::OpenAi)
            .env("ZERO_HOME", home.path())
            .env("ZERO_KILL_GRACE_MS", "300")
            .env("ZERO_STREAM_IDLE_TIMEOUT_MS", "600000")
            .current_dir(workspace.path())
            .args([
                "exec",
                "--auto",
                "medium",
                "--timeout",
                "3s",
                "-o",
                format,
                "go",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        // The deadline is far more than the timeout and the grace periods of the stop.
        let status = wait_for(
            format!("zero -o {format} to exit at its deadline"),
            DEADLINE,
            || child.try_wait().unwrap(),
        );
        assert_eq!(status.code(), Some(4), "{format}: {status:?}");
        assert_gone_soon(&marker);
        let stderr = stderr.join().unwrap();
        // The error event itself may be among what a full stdout held back (stream-json).
        let said = match format {
            "stream-json" => "stdout is not being read",
            _ => "the run's deadline (--timeout, or the launching run's) passed",
        };
        assert!(stderr.contains(said), "{format}: {stderr}");
        let record = &home.records()[0];
        assert_eq!(record["status"], "killed", "{format}: {record}");
        drop(reader);
    }
}
