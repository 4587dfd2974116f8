//! Reading a cassette back, checked line by line: every line must be a cassette line
//! (`line`), the first the run's own `start` of this format's [`VERSION`], every request's
//! hash must match its canonical form, and requests and responses must pair up task by task
//! in order. The first problem is reported with its line number. A last line without its
//! newline is a run killed mid-write: replay serves what came before it and says where the
//! cassette was cut; `zero replay check` reports it as a problem.
//!
//! A cassette is input a pull request can write, so what is read is bounded: a line at most
//! [`MAX_LINE`] bytes, the file at most [`MAX_FILE`].

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::canonical;
use super::line::{Line, RequestLine, ResponseLine, Server, Start};
use super::{ROOT_TASK, VERSION};
use crate::fsutil;

/// The longest line read: a request holds the whole conversation, never this much.
pub(crate) const MAX_LINE: usize = 64 * 1024 * 1024;
/// The largest cassette read.
pub(crate) const MAX_FILE: u64 = 1024 * 1024 * 1024;

/// What is wrong with a cassette, and where.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {problem}", path.display(), line.map(|n| format!(": line {n}")).unwrap_or_default())]
pub(crate) struct TapeError {
    /// The cassette.
    pub(crate) path: PathBuf,
    /// The line the problem is on, when it is on one.
    pub(crate) line: Option<usize>,
    /// What is wrong.
    pub(crate) problem: String,
}

/// One request of a task and its response, with the lines they were read from.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    /// The request's line number.
    pub(crate) line: usize,
    /// The request.
    pub(crate) request: RequestLine,
    /// The response and its line number; `None` when the cassette ends before it.
    pub(crate) response: Option<(usize, ResponseLine)>,
}

/// A checked cassette.
#[derive(Debug, Default)]
pub(crate) struct Tape {
    path: PathBuf,
    starts: BTreeMap<String, Start>,
    servers: BTreeMap<String, Server>,
    exchanges: BTreeMap<String, Vec<Exchange>>,
    /// The order tasks started in.
    tasks: Vec<String>,
    /// Whole lines read.
    lines: usize,
    /// The number of the last line when it was cut mid-write.
    cut: Option<usize>,
}

impl Tape {
    /// Reads and checks the cassette at `path` (see the module documentation).
    pub(crate) fn read(path: &Path) -> Result<Tape, TapeError> {
        let fail = |line: Option<usize>, problem: String| TapeError {
            path: path.to_path_buf(),
            line,
            problem,
        };
        let (file, _) = fsutil::open_regular(path).map_err(|e| fail(None, e.to_string()))?;
        let mut reader = BufReader::new(file.take(MAX_FILE + 1));
        let mut tape = Tape {
            path: path.to_path_buf(),
            ..Tape::default()
        };
        let mut bytes = Vec::new();
        let mut total = 0u64;
        for number in 1.. {
            bytes.clear();
            let read = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .map_err(|e| fail(Some(number), e.to_string()))?;
            total += read as u64;
            if total > MAX_FILE {
                return Err(fail(None, format!("it is larger than {MAX_FILE} bytes")));
            }
            if read == 0 {
                break;
            }
            if bytes.len() > MAX_LINE {
                return Err(fail(
                    Some(number),
                    format!("the line is longer than {MAX_LINE} bytes"),
                ));
            }
            if bytes.last() != Some(&b'\n') {
                tape.cut = Some(number);
                break;
            }
            let line: Line = serde_json::from_slice(&bytes)
                .map_err(|e| fail(Some(number), format!("not a cassette line: {e}")))?;
            tape.take(number, line).map_err(|p| fail(Some(number), p))?;
            tape.lines = number;
        }
        if tape.lines == 0 {
            return Err(fail(
                tape.cut,
                "the cassette holds no whole line (not even its start)".into(),
            ));
        }
        Ok(tape)
    }

    /// Fails when the last line was cut: what `zero replay check` holds a cassette to.
    pub(crate) fn complete(&self) -> Result<(), TapeError> {
        match self.cut {
            Some(line) => Err(TapeError {
                path: self.path.clone(),
                line: Some(line),
                problem: "the line is cut off (the run that wrote it was killed mid-write)".into(),
            }),
            None => Ok(()),
        }
    }

    /// Takes in line `number`, or says why it does not belong where it is.
    fn take(&mut self, number: usize, line: Line) -> Result<(), String> {
        if number == 1 && !matches!(&line, Line::Start(start) if start.task == ROOT_TASK) {
            return Err(format!(
                "the first line must be the run's start (`\"kind\":\"start\"`, task \
                 `{ROOT_TASK}`)"
            ));
        }
        let task = line.task().to_string();
        if !matches!(line, Line::Start(_)) && !self.starts.contains_key(&task) {
            return Err(format!("task `{task}` has no start line before this one"));
        }
        match line {
            Line::Start(start) => self.start(start),
            Line::Server(server) => {
                self.servers.insert(task, server);
                Ok(())
            }
            Line::Request(request) => self.request(number, request),
            Line::Response(response) => self.response(number, response),
        }
    }

    fn start(&mut self, start: Start) -> Result<(), String> {
        if start.version != VERSION {
            return Err(format!(
                "cassette version {} is not one this zero reads (it reads version {VERSION}); \
                 record the run again with this zero",
                start.version
            ));
        }
        if !matches!(start.wire.as_str(), "openai" | "anthropic") {
            return Err(format!(
                "`{}` is not a wire (openai or anthropic)",
                start.wire
            ));
        }
        if self.starts.contains_key(&start.task) {
            return Err(format!("task `{}` starts a second time", start.task));
        }
        self.tasks.push(start.task.clone());
        self.starts.insert(start.task.clone(), start);
        Ok(())
    }

    fn request(&mut self, number: usize, request: RequestLine) -> Result<(), String> {
        let computed = canonical::hash(&request.request);
        if computed != request.hash {
            return Err(format!(
                "the request's hash does not match its contents (the line says {}, its \
                 contents hash to {computed})",
                request.hash
            ));
        }
        let exchanges = self.exchanges.entry(request.task.clone()).or_default();
        if let Some(last) = exchanges.last().filter(|last| last.response.is_none()) {
            return Err(format!(
                "request {} of task `{}` follows request {} (line {}), which has no response",
                request.seq, request.task, last.request.seq, last.line
            ));
        }
        let expected = exchanges.len() as u64 + 1;
        if request.seq != expected {
            return Err(format!(
                "request {} of task `{}` is out of order (expected request {expected})",
                request.seq, request.task
            ));
        }
        exchanges.push(Exchange {
            line: number,
            request,
            response: None,
        });
        Ok(())
    }

    fn response(&mut self, number: usize, response: ResponseLine) -> Result<(), String> {
        let open = self
            .exchanges
            .get_mut(&response.task)
            .and_then(|exchanges| exchanges.last_mut())
            .filter(|last| last.response.is_none() && last.request.seq == response.seq);
        match open {
            Some(exchange) => {
                exchange.response = Some((number, response));
                Ok(())
            }
            None => Err(format!(
                "a response to request {} of task `{}`, which is not the request awaiting one",
                response.seq, response.task
            )),
        }
    }

    /// The cassette's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The `start` line of `task`.
    pub(crate) fn start_of(&self, task: &str) -> Option<&Start> {
        self.starts.get(task)
    }

    /// What the server of `task` said about itself, if it was asked.
    pub(crate) fn server_of(&self, task: &str) -> Option<&Server> {
        self.servers.get(task)
    }

    /// The requests of `task` and their responses, in order.
    pub(crate) fn exchanges_of(&self, task: &str) -> &[Exchange] {
        self.exchanges.get(task).map_or(&[], Vec::as_slice)
    }

    /// The tasks, in the order they started (the run's own first).
    pub(crate) fn tasks(&self) -> &[String] {
        &self.tasks
    }

    /// Where the cassette ends, for a message: its last whole line, and the cut one.
    pub(crate) fn end(&self) -> String {
        match self.cut {
            Some(cut) => format!(
                "the cassette ends at line {} (line {cut} was cut off mid-write)",
                self.lines
            ),
            None => format!("the cassette ends at line {}", self.lines),
        }
    }
}
