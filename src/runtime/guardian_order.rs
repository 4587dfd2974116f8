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
use std::io::{self, Read};
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

    /// Reads one order from `channel`. `Ok(None)` when the channel closed before an order
    /// began (the runtime let the guardian go unused); an error for a malformed or cut order.
    pub(crate) fn receive(mut channel: impl Read) -> io::Result<Option<Order>> {
        let mut length = [0u8; 4];
        match channel.read(&mut length[..1])? {
            0 => return Ok(None),
            _ => channel.read_exact(&mut length[1..])?,
        }
        let length = u32::from_le_bytes(length) as usize;
        if length > MAX_ORDER {
            return Err(malformed("longer than any order"));
        }
        let mut body = vec![0u8; length];
        channel.read_exact(&mut body)?;
        Self::decode(&body).map(Some)
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

fn malformed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("malformed order: {what}"),
    )
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn an_order_comes_back_as_it_was_sent_bytes_and_empty_words_included() {
        let sent = order();
        let channel = sent.encode().unwrap();
        let received = Order::receive(channel.as_slice()).unwrap();
        assert_eq!(received, Some(sent));
    }

    #[test]
    fn a_closed_channel_is_no_order_and_a_cut_one_is_an_error() {
        assert_eq!(Order::receive(&[][..]).unwrap(), None);
        let bytes = order().encode().unwrap();
        let cut = &bytes[..bytes.len() - 3];
        assert!(Order::receive(cut).is_err());
        let mut miscounted = 3u32.to_le_bytes().to_vec();
        miscounted.extend_from_slice(b"/\0p\0");
        assert!(Order::receive(miscounted.as_slice()).is_err());
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
