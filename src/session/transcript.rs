//! `messages.jsonl`: the conversation, appended as it grows and read back with the repairs a
//! killed run needs.
//!
//! Each line is one JSON object: `{"type":"message","run":RUN_ID,"message":{...}}` for a
//! message, or `{"type":"reset","run":RUN_ID}` when compaction replaced the conversation: the
//! messages after the last reset are the conversation. Lines are only ever appended, so a
//! crash can cut at most the last one.
//!
//! Writing is off the run's thread: each turn's new lines go to a writer thread that appends
//! and fsyncs them in order, so the turn pays for serialising its messages and no more.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc;
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use super::{Held, MESSAGES_FILE, Meta, SessionError, images};
use crate::provider::{Image, Message};
use crate::redact::Secrets;
use crate::sync::lock;

/// The longest conversation file read back.
const TRANSCRIPT_LIMIT: u64 = 512 * 1024 * 1024;

/// What a tool call that never got its result is given when the session is loaded.
pub(crate) const INTERRUPTED_RESULT: &str = "interrupted: the run that made this call ended \
     (it was killed or crashed) before the call finished; whether it had any effect is unknown";

/// One line of the file.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Line<M> {
    /// A message of the conversation.
    Message {
        /// The run that added it.
        run: String,
        /// The message.
        message: M,
    },
    /// The conversation was compacted: what follows replaces everything before.
    Reset {
        /// The run that compacted it.
        run: String,
    },
}

/// A session's conversation as it was loaded.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The messages, repaired (see [`load`]).
    pub messages: Vec<Message>,
    /// How many of `messages` are on disk already (the rest are repairs, still to be written).
    pub on_disk: usize,
    /// What was repaired, for a warning.
    pub repairs: Vec<String>,
}

/// Reads the conversation of the session in `dir`. A last line cut by a crash is dropped
/// (and, with `repair`, which only the holder of the session's lease may ask for, cut from the
/// file, so appending goes on after whole lines); a tool call without a result gets an
/// "interrupted" result. Any other line that does not parse is [`SessionError::Corrupt`],
/// naming it, and nothing is changed.
pub fn load(dir: &Path, repair: bool) -> Result<Loaded, SessionError> {
    let path = dir.join(MESSAGES_FILE);
    let bytes = match crate::fsutil::read_regular(&path, TRANSCRIPT_LIMIT) {
        Ok((bytes, _)) => bytes,
        Err(crate::fsutil::OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Loaded::default());
        }
        Err(error) => {
            return Err(SessionError::Corrupt {
                path: path.display().to_string(),
                line: 0,
                message: error.to_string(),
            });
        }
    };
    let mut loaded = Loaded::default();
    let whole = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |end| end + 1);
    if whole < bytes.len() {
        // A write the crash cut short; everything before it is whole.
        if repair {
            truncate(&path, whole as u64)?;
        }
        loaded
            .repairs
            .push("dropped the last line of the conversation, which a crash cut short".into());
    }
    let text = std::str::from_utf8(&bytes[..whole]).map_err(|e| SessionError::Corrupt {
        path: path.display().to_string(),
        line: 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count(),
        message: "not UTF-8".into(),
    })?;
    for (index, line) in text.lines().enumerate() {
        match serde_json::from_str::<Line<Message>>(line) {
            Ok(Line::Message { message, .. }) => loaded.messages.push(message),
            Ok(Line::Reset { .. }) => loaded.messages.clear(),
            Err(error) => {
                return Err(SessionError::Corrupt {
                    path: path.display().to_string(),
                    line: index + 1,
                    message: error.to_string(),
                });
            }
        }
    }
    images::restore(dir, &mut loaded.messages)?;
    loaded.on_disk = loaded.messages.len();
    let unanswered = unanswered_calls(&loaded.messages);
    if !unanswered.is_empty() {
        loaded.repairs.push(format!(
            "{} tool call(s) of the earlier run never finished; they were given an \
             \"interrupted\" result",
            unanswered.len()
        ));
        loaded.messages.extend(unanswered);
    }
    Ok(loaded)
}

/// The "interrupted" results owed to the calls of the last assistant message that have none.
fn unanswered_calls(messages: &[Message]) -> Vec<Message> {
    let Some(last) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return Vec::new();
    };
    let Message::Assistant { tool_calls, .. } = &messages[last] else {
        return Vec::new();
    };
    let answered = |id: &str| {
        messages[last + 1..]
            .iter()
            .any(|m| matches!(m, Message::ToolResult { call_id, .. } if call_id == id))
    };
    tool_calls
        .iter()
        .filter(|call| !answered(&call.id))
        .map(|call| Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: INTERRUPTED_RESULT.into(),
            is_error: true,
            images: Vec::new(),
        })
        .collect()
}

fn truncate(path: &Path, length: u64) -> Result<(), SessionError> {
    File::options()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|file| {
            file.set_len(length)?;
            file.sync_data()
        })
        .map_err(SessionError::io("repair", path))
}

/// Appends a run's messages to its session's conversation, in order, off the run's thread.
pub struct Transcript {
    run: String,
    secrets: Secrets,
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// How many messages of the conversation are handed to the writer.
    written: usize,
    lines: Option<mpsc::Sender<Batch>>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl Transcript {
    /// Opens `held`'s conversation for appending by run `run`; the first `on_disk` messages of
    /// what the run will record are there already. Every line is redacted with `secrets`.
    /// `meta` is written first, by the writer too: the run's first request need not wait for
    /// an fsync.
    pub fn open(
        held: &Held,
        run: &str,
        on_disk: usize,
        secrets: Secrets,
        meta: &Meta,
    ) -> Result<Transcript, SessionError> {
        let record = held.meta_path();
        let meta = serde_json::to_vec_pretty(meta).expect("session metadata serialises");
        let dir = held.dir().to_path_buf();
        let path = dir.join(MESSAGES_FILE);
        let mut file = File::options()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(SessionError::io("open", &path))?;
        let (lines, received) = mpsc::channel::<Batch>();
        let writer = std::thread::Builder::new()
            .name("zero-session".into())
            .spawn(move || {
                super::write_meta_file(&record, &meta)?;
                for batch in received {
                    for image in &batch.images {
                        images::store(&dir, image)?;
                    }
                    file.write_all(&batch.lines)?;
                    file.sync_data()?;
                }
                Ok(())
            })
            .map_err(SessionError::io("start the writer of", &path))?;
        Ok(Transcript {
            run: run.to_string(),
            secrets,
            path,
            state: Mutex::new(State {
                written: on_disk,
                lines: Some(lines),
                writer: Some(writer),
            }),
        })
    }

    /// Hands the messages of `conversation` not yet written to the writer.
    pub fn record(&self, conversation: &[Message]) {
        let mut state = lock(&self.state);
        let new = conversation.get(state.written..).unwrap_or_default();
        if new.is_empty() {
            return;
        }
        let batch = self.batch(
            new,
            new.iter().map(|message| Line::Message {
                run: self.run.clone(),
                message,
            }),
        );
        state.written = conversation.len();
        state.send(batch);
    }

    /// Records that `conversation` replaced everything before it (compaction).
    pub fn rewrite(&self, conversation: &[Message]) {
        let mut state = lock(&self.state);
        let reset = Line::Reset {
            run: self.run.clone(),
        };
        let messages = conversation.iter().map(|message| Line::Message {
            run: self.run.clone(),
            message,
        });
        let batch = self.batch(conversation, std::iter::once(reset).chain(messages));
        state.written = conversation.len();
        state.send(batch);
    }

    /// Waits until everything recorded is on disk (blocking). The first write error, if any.
    pub fn finish(&self) -> Result<(), SessionError> {
        let writer = {
            let mut state = lock(&self.state);
            state.lines = None;
            state.writer.take()
        };
        let Some(writer) = writer else {
            return Ok(());
        };
        match writer.join() {
            Ok(result) => result.map_err(SessionError::io("write", &self.path)),
            Err(_) => Err(SessionError::io("write", &self.path)(io::Error::other(
                "the writer panicked",
            ))),
        }
    }

    /// `lines` (of `messages`) as JSON lines, redacted, with the images the messages carry,
    /// which the lines name and the writer stores first.
    fn batch<'m>(
        &self,
        messages: &[Message],
        lines: impl Iterator<Item = Line<&'m Message>>,
    ) -> Batch {
        let mut text = String::new();
        for line in lines {
            text.push_str(&serde_json::to_string(&line).expect("messages serialise"));
            text.push('\n');
        }
        Batch {
            images: messages.iter().flat_map(Message::images).cloned().collect(),
            lines: self.secrets.apply(&text).into_bytes(),
        }
    }
}

/// What one write hands the writer thread: the images first, then the lines naming them.
struct Batch {
    images: Vec<Image>,
    lines: Vec<u8>,
}

impl State {
    fn send(&mut self, batch: Batch) {
        // A writer that stopped has its error waiting for `finish`.
        if let Some(lines) = &self.lines {
            let _ = lines.send(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;
    use crate::session::{SessionId, Sessions};

    fn meta() -> Meta {
        Meta {
            schema_version: crate::session::META_SCHEMA_VERSION,
            id: SessionId::parse("s").unwrap(),
            workspace: "/w".into(),
            provider: "openai".into(),
            model: "m".into(),
            created: String::new(),
            updated: String::new(),
            last_run: "run_1".into(),
            status: crate::session::SessionStatus::Running,
            runs: 1,
            usage: Default::default(),
            permissions: crate::tools::Permissions {
                auto: crate::tools::policy::Autonomy::Low,
                sandbox: crate::tools::policy::SandboxInForce {
                    filesystem: crate::tools::policy::FilesystemConfinement::Landlock,
                    network: crate::tools::policy::NetworkAccess::Blocked,
                },
            },
            forked_from: None,
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn what_is_recorded_loads_back_and_a_crash_is_repaired() {
        let data = tempfile::tempdir().unwrap();
        let held = Sessions::new(data.path())
            .create(&SessionId::parse("s").unwrap(), "run_1")
            .unwrap();
        let secrets = Secrets::default();
        secrets.add("sk-secret-value-12345");
        let transcript = Transcript::open(&held, "run_1", 0, secrets, &meta()).unwrap();
        let mut conversation = vec![Message::User {
            content: "use sk-secret-value-12345".into(),
            images: Vec::new(),
        }];
        transcript.record(&conversation);
        conversation.push(Message::Assistant {
            thinking: Vec::new(),
            text: String::new(),
            tool_calls: vec![call("a"), call("b")],
        });
        transcript.record(&conversation);
        conversation.push(Message::ToolResult {
            call_id: "a".into(),
            name: "bash".into(),
            output: "done".into(),
            is_error: false,
            images: Vec::new(),
        });
        transcript.record(&conversation);
        transcript.finish().unwrap();
        let path = held.dir().join(MESSAGES_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sk-secret-value-12345"), "{text}");
        // A crash mid-write leaves half a line.
        std::fs::write(&path, format!("{text}{{\"type\":\"mess")).unwrap();
        let loaded = load(held.dir(), true).unwrap();
        assert_eq!(loaded.on_disk, 3);
        assert_eq!(loaded.messages.len(), 4);
        assert_eq!(
            loaded.messages[3],
            Message::ToolResult {
                call_id: "b".into(),
                name: "bash".into(),
                output: INTERRUPTED_RESULT.into(),
                is_error: true,
                images: Vec::new(),
            }
        );
        assert_eq!(loaded.repairs.len(), 2, "{:?}", loaded.repairs);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "the cut line went"
        );
    }

    #[test]
    fn a_reset_replaces_what_came_before_and_a_bad_line_is_named() {
        let data = tempfile::tempdir().unwrap();
        let held = Sessions::new(data.path())
            .create(&SessionId::parse("s").unwrap(), "run_1")
            .unwrap();
        let transcript = Transcript::open(&held, "run_1", 0, Secrets::default(), &meta()).unwrap();
        let old = vec![Message::User {
            content: "old".into(),
            images: Vec::new(),
        }];
        transcript.record(&old);
        let new = vec![Message::User {
            content: "summary".into(),
            images: Vec::new(),
        }];
        transcript.rewrite(&new);
        transcript.finish().unwrap();
        assert_eq!(load(held.dir(), true).unwrap().messages, new);
        let path = held.dir().join(MESSAGES_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"type\":\"message\",\"run\":\"r\",\"message\":{\"role\":\"robot\"}}\n");
        std::fs::write(&path, &text).unwrap();
        match load(held.dir(), true) {
            Err(SessionError::Corrupt { line, .. }) => assert_eq!(line, 4),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "left as it was"
        );
    }
}
