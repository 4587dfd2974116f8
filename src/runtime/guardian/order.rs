//! The order a warm guardian waits for: which command to start, where, with what on top of its
//! environment. Both sides live here so the format is written once.
//!
//! A warm guardian (see `docs/RUNTIME.md`, "Warm guardians") is started before its command is
//! known; the runtime sends the order on the guardian's stdin, a socket pair it also reads the
//! reports from. An order is a 4-byte little-endian length, then that many bytes of
//! NUL-terminated words: the working directory, the program, the number of arguments in
//! decimal, the arguments, then `NAME=VALUE` for each variable set on top of the guardian's
//! environment. Written by hand rather than as JSON because every word is an OS string (bytes,
//! not always UTF-8) that can hold no NUL (exec could not pass it on), which is what makes NUL
//! the one separator needed.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// The longest order a guardian accepts: far above what exec can take (`ARG_MAX` bounds the
/// arguments and the environment together), so only garbage is refused.
const MAX_ORDER: usize = 16 * 1024 * 1024;

/// What a warm guardian is told to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Order {
    /// The command's working directory.
    pub(crate) cwd: PathBuf,
    /// The program.
    pub(crate) program: OsString,
    /// Its arguments.
    pub(crate) args: Vec<OsString>,
    /// Variables set on top of the guardian's environment.
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// Why an order cannot be sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OrderError {
    /// A word holds a NUL byte, which no program's argument, path or variable can carry.
    #[error("{0} holds a NUL byte, which no command can be given")]
    Nul(&'static str),
    /// The order is longer than any command could be.
    #[error("the command is longer than any command can be ({0} bytes)")]
    TooLong(usize),
}

impl Order {
    /// The order's bytes, length first.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, OrderError> {
        let mut body = Vec::new();
        let mut word = |what: &'static str, bytes: &[u8]| {
            if bytes.contains(&0) {
                return Err(OrderError::Nul(what));
            }
            body.extend_from_slice(bytes);
            body.push(0);
            Ok(())
        };
        word("the working directory", self.cwd.as_os_str().as_bytes())?;
        word("the program", self.program.as_bytes())?;
        word("the argument count", self.args.len().to_string().as_bytes())?;
        for arg in &self.args {
            word("an argument", arg.as_bytes())?;
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.as_bytes().contains(&b'=') {
                return Err(OrderError::Nul("a variable's name"));
            }
            let mut pair = name.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            word("a variable", &pair)?;
        }
        let length = u32::try_from(body.len())
            .ok()
            .filter(|length| (*length as usize) <= MAX_ORDER)
            .ok_or(OrderError::TooLong(body.len()))?;
        let mut order = length.to_le_bytes().to_vec();
        order.extend_from_slice(&body);
        Ok(order)
    }

    /// The order whose 4 length bytes were `length`: the rest read from `channel`.
    fn receive_body(length: [u8; 4], mut channel: impl Read) -> io::Result<Order> {
        let length = u32::from_le_bytes(length) as usize;
        if length > MAX_ORDER {
            return Err(malformed("longer than any order"));
        }
        let mut body = vec![0u8; length];
        channel.read_exact(&mut body)?;
        Self::decode(&body)
    }

    /// An order from its body (the bytes after the length).
    fn decode(body: &[u8]) -> io::Result<Order> {
        let Some(body) = body.strip_suffix(&[0]) else {
            return Err(malformed("its last word is not terminated"));
        };
        let mut words = body.split(|byte| *byte == 0);
        let mut next = |what: &str| words.next().ok_or_else(|| malformed(what));
        let cwd = PathBuf::from(OsStr::from_bytes(next("no working directory")?));
        let program = OsStr::from_bytes(next("no program")?).to_os_string();
        let count: usize = std::str::from_utf8(next("no argument count")?)
            .ok()
            .and_then(|count| count.parse().ok())
            .ok_or_else(|| malformed("the argument count is not a number"))?;
        let args = (0..count)
            .map(|_| next("fewer arguments than counted").map(|arg| OsString::from_vec(arg.into())))
            .collect::<io::Result<Vec<_>>>()?;
        let env = words
            .map(|pair| {
                let at = pair
                    .iter()
                    .position(|byte| *byte == b'=')
                    .ok_or_else(|| malformed("a variable without `=`"))?;
                Ok((
                    OsString::from_vec(pair[..at].into()),
                    OsString::from_vec(pair[at + 1..].into()),
                ))
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Order {
            cwd,
            program,
            args,
            env,
        })
    }
}

/// Sends the encoded order `bytes` down `channel` with `output` — the command's stdout and
/// stderr — passed along as descriptors (`SCM_RIGHTS`), so a guardian that runs one command
/// after another gets fresh ones each time. Blocking.
pub(crate) fn send_with_output(
    channel: &UnixStream,
    bytes: &[u8],
    output: [BorrowedFd<'_>; 2],
) -> io::Result<()> {
    let fds = output.map(|fd| fd.as_raw_fd());
    let rights = [ControlMessage::ScmRights(&fds)];
    let sent = sendmsg::<()>(
        channel.as_raw_fd(),
        &[IoSlice::new(bytes)],
        &rights,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    (&*channel).write_all(&bytes[sent..])
}

/// An order with the command's stdout and stderr that came with it.
pub(crate) struct OrderWithOutput {
    /// The order.
    pub(crate) order: Order,
    /// Where the command writes: its stdout, then its stderr (close-on-exec here).
    pub(crate) output: [OwnedFd; 2],
}

/// Receives one order sent by [`send_with_output`] from `channel`: `Ok(None)` when the channel
/// closed first; an error for a malformed or cut order, or one without its two descriptors.
/// Blocking.
pub(crate) fn receive_with_output(channel: &File) -> io::Result<Option<OrderWithOutput>> {
    let mut length = [0u8; 4];
    let mut space = nix::cmsg_space!([RawFd; 2]);
    let (read, fds) = {
        let mut slices = [IoSliceMut::new(&mut length)];
        let message = recvmsg::<()>(
            channel.as_raw_fd(),
            &mut slices,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )?;
        let fds: Vec<OwnedFd> = message
            .cmsgs()?
            .filter_map(|cmsg| match cmsg {
                ControlMessageOwned::ScmRights(fds) => Some(fds),
                _ => None,
            })
            .flatten()
            // SAFETY: the kernel just placed these descriptors in this process for us.
            .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
            .collect();
        (message.bytes, fds)
    };
    if read == 0 {
        return Ok(None);
    }
    let mut channel = channel;
    channel.read_exact(&mut length[read..])?;
    let order = Order::receive_body(length, channel)?;
    let output: [OwnedFd; 2] = fds
        .try_into()
        .map_err(|_| malformed("not the two descriptors of the command's output"))?;
    Ok(Some(OrderWithOutput { order, output }))
}

fn malformed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("malformed order: {what}"),
    )
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    fn order() -> Order {
        Order {
            cwd: "/work/a b".into(),
            program: "/bin/bash".into(),
            args: vec!["-c".into(), "echo 'x=y' && ls".into(), "".into()],
            env: vec![
                ("A".into(), "1=2".into()),
                ("EMPTY".into(), "".into()),
                ("RAW".into(), OsString::from_vec(vec![0xff, b'x'])),
            ],
        }
    }

    /// A channel as a guardian has one: the runtime's end, and the guardian's as a file.
    fn channel() -> (UnixStream, File) {
        let (runtime, guardian) = UnixStream::pair().unwrap();
        (runtime, File::from(OwnedFd::from(guardian)))
    }

    #[test]
    fn an_order_comes_back_as_it_was_sent_with_its_output_descriptors() {
        let (runtime, guardian) = channel();
        let (stdout_read, stdout_write) = std::io::pipe().unwrap();
        let (_stderr_read, stderr_write) = std::io::pipe().unwrap();
        let sent = order();
        send_with_output(
            &runtime,
            &sent.encode().unwrap(),
            [stdout_write.as_fd(), stderr_write.as_fd()],
        )
        .unwrap();
        drop(stdout_write);
        let received = receive_with_output(&guardian).unwrap().unwrap();
        assert_eq!(received.order, sent);
        // The descriptor that came is the pipe's writing end.
        let [stdout, _stderr] = received.output;
        File::from(stdout).write_all(b"through").unwrap();
        let mut read = String::new();
        (&stdout_read).read_to_string(&mut read).unwrap();
        assert_eq!(read, "through");
    }

    #[test]
    fn a_closed_channel_is_no_order_and_a_cut_or_bare_one_is_an_error() {
        let (runtime, guardian) = channel();
        drop(runtime);
        assert!(receive_with_output(&guardian).unwrap().is_none());
        let (runtime, guardian) = channel();
        let bytes = order().encode().unwrap();
        (&runtime).write_all(&bytes[..bytes.len() - 3]).unwrap();
        drop(runtime);
        assert!(receive_with_output(&guardian).is_err(), "cut");
        let (runtime, guardian) = channel();
        (&runtime).write_all(&bytes).unwrap();
        assert!(receive_with_output(&guardian).is_err(), "no descriptors");
        let mut miscounted = 3u32.to_le_bytes().to_vec();
        miscounted.extend_from_slice(b"/\0p\0");
        assert!(Order::decode(&miscounted[4..]).is_err());
    }

    #[test]
    fn a_nul_in_any_word_is_refused_before_sending() {
        let mut nul = order();
        nul.args[1] = "echo \0 hi".into();
        assert!(matches!(nul.encode(), Err(OrderError::Nul("an argument"))));
        let mut nul = order();
        nul.env[0].1 = "a\0b".into();
        assert!(matches!(nul.encode(), Err(OrderError::Nul("a variable"))));
        let mut named = order();
        named.env[0].0 = "A=B".into();
        assert!(named.encode().is_err());
    }
}
