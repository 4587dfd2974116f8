//! Secret handling for anything that may reach a user, a log, a command or a model.
//!
//! The first line of defence is that commands never receive the provider's key: the spawn door
//! withholds the key variables (`environ::names::KEY_VARIABLES`) from every child, and a specialist gets its key through a private
//! file named by `ZERO_HANDED_KEY_FILE` that it reads and removes at start. Redaction is the
//! second line: error messages quote what servers said, and servers love to echo the key they
//! rejected ("Incorrect API key provided: sk-..."), a model may repeat what it read, and a
//! command may print a key it found on disk. Everything that leaves the process with foreign
//! text in it passes through [`Secrets`] (or [`redact`]) first, and text that arrives in pieces
//! (streamed deltas, a growing log) through a [`StreamRedactor`], so a key split across pieces
//! is still masked.

use std::ops::Range;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use memchr::memmem;
use regex::bytes::Regex;

use crate::environ::names::{CI_TOKEN_VARIABLES, KEY_VARIABLES};

/// What a removed secret is replaced with.
pub(crate) const MASK: &str = "[REDACTED]";

/// Configured secrets shorter than this are not replaced verbatim: they cannot meaningfully
/// leak, and masking every occurrence of a two-letter string would garble the message.
const MIN_SECRET_LEN: usize = 4;

/// Key-shaped text that is masked whether or not it was configured. Each pattern keeps its
/// label (group 1) so the reader still sees *what* was removed, and names the text every match
/// of it contains (compared ignoring ASCII case): text holding none of a pattern's anchors
/// cannot match it, so it skips that pattern — and a run whose output never holds one never
/// compiles the patterns, which costs more than all the rest of `zero exec --list-tools`
/// (measured in docs/PERFORMANCE.md).
const SHAPE_PATTERNS: [(&str, &[&str]); 7] = [
    // OpenAI-style keys: sk-, sk-proj-, sk-ant-..., at least 16 key characters.
    (r"()\bsk-[A-Za-z0-9_\-]{16,}", &["sk-"]),
    // `Authorization: Bearer <token>` as quoted in an error or a debug dump.
    (r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=\-]{16,}", &["bearer"]),
    // `api_key=...` in a query string, `api-key: ...` in a header, `"apiKey": "..."`, and
    // each of them inside a JSON string, whose quotes are escaped (`api_key = \"...`): text
    // is redacted after it was serialized (stream-json, session files), so a quote may come
    // with its backslash. The key stops at a backslash, so a mask never takes an escape's
    // first half and leaves its quote bare.
    (
        r#"(?i)(\bapi[_\-]?key\\?["']?\s*[:=]\s*\\?["']?)[^\s"'&,;\\]{12,}"#,
        &["api"],
    ),
    // GitHub's tokens: personal (`ghp_`), OAuth (`gho_`), an app's installation token, which
    // is what `GITHUB_TOKEN` holds (`ghs_`), user-to-server (`ghu_`), refresh (`ghr_`), and
    // fine-grained personal ones (`github_pat_`).
    (
        r"()\b(?:ghp_|gho_|ghs_|ghu_|ghr_|github_pat_)[A-Za-z0-9_]{20,}",
        &["ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"],
    ),
    // GitLab's personal, project and group access tokens (the routable ones carry `.`-joined
    // parts after the random one).
    (
        r"()\bglpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*",
        &["glpat-"],
    ),
    // An HTTP basic credential after its header's name, as `actions/checkout` leaves it in
    // `.git/config` (`extraheader = AUTHORIZATION: basic <base64>`).
    (
        r"(?i)(\bauthorization\s*:\s*basic\s+)[A-Za-z0-9+/]{8,}={0,2}",
        &["authorization"],
    ),
    // The base64 of `x-access-token:<token>`, the credential `actions/checkout` writes, on its
    // own: `x-access-token:` is 15 bytes, so its encoding is the same 20 characters whatever
    // follows.
    (
        r"()\beC1hY2Nlc3MtdG9rZW46[A-Za-z0-9+/]*={0,2}",
        &["ec1hy2nlc3mtdg9rzw46"],
    ),
];

/// Where a stream's text may still be the start of a shape: the trailing run of
/// non-whitespace, with the label a shape allows before it (`Bearer `, `api_key: "`). Only
/// what comes before can be written; the rest waits for more text.
const OPEN_TAIL_PATTERN: &str = r#"(?i)(?:\bbearer\s+|\bauthorization\s*:\s*(?:basic\s+)?|\bapi[_\-]?key\\?["']?\s*[:=]?\s*\\?["']?)?\S*\z"#;

/// How long a key-shaped string is assumed to be at most when a slice's edge is widened to
/// take it in whole ([`Secrets::reach`]): real keys are 40 to 200 characters.
const SHAPE_REACH: usize = 512;

/// The most a stream holds back for a possible shape. A run of text without whitespace longer
/// than this is written out (its last part still held), so a stream never stalls on it.
const MAX_OPEN_TAIL: usize = 4096;

/// The compiled [`SHAPE_PATTERNS`], in their order.
static SHAPES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    SHAPE_PATTERNS
        .iter()
        .map(|(pattern, _)| Regex::new(pattern).expect("redaction patterns are valid"))
        .collect()
});

static OPEN_TAIL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(OPEN_TAIL_PATTERN).expect("the open-tail pattern is valid"));

/// The key shapes `text` may hold, by their anchors; none (and nothing compiled) for text
/// that holds no anchor at all.
fn shapes_in(text: &[u8]) -> Vec<&'static Regex> {
    let lower = text.to_ascii_lowercase();
    let held: Vec<usize> = SHAPE_PATTERNS
        .iter()
        .enumerate()
        .filter(|(_, (_, anchors))| {
            anchors
                .iter()
                .any(|anchor| memmem::find(&lower, anchor.as_bytes()).is_some())
        })
        .map(|(index, _)| index)
        .collect();
    if held.is_empty() {
        return Vec::new();
    }
    held.into_iter().map(|index| &SHAPES[index]).collect()
}

/// The secrets worth masking verbatim: long enough to mean something.
fn meaningful<'a>(secrets: &'a [&'a str]) -> impl Iterator<Item = &'a [u8]> + 'a {
    secrets
        .iter()
        .filter(|secret| secret.len() >= MIN_SECRET_LEN)
        .map(|secret| secret.as_bytes())
}

/// `text` with every occurrence of `secret` replaced by [`MASK`].
fn replace_verbatim(text: &[u8], secret: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = 0;
    for start in memmem::find_iter(text, secret) {
        if start < rest {
            continue;
        }
        out.extend_from_slice(&text[rest..start]);
        out.extend_from_slice(MASK.as_bytes());
        rest = start + secret.len();
    }
    out.extend_from_slice(&text[rest..]);
    out
}

/// Returns `text` with every configured secret (verbatim) and every key-shaped string masked.
///
/// `secrets` are the values this process knows to be secret (the configured API key); empty and
/// very short ones are skipped. The shapes cover keys the process was never told about, such as
/// a different key a proxy echoes back.
pub(crate) fn redact(text: &str, secrets: &[&str]) -> String {
    let bytes = redact_bytes(text.as_bytes(), secrets);
    // Every replacement swaps whole UTF-8 sequences for ASCII, so valid text stays valid.
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// [`redact`] for bytes that need not be UTF-8, such as a command's log.
pub(crate) fn redact_bytes(text: &[u8], secrets: &[&str]) -> Vec<u8> {
    let mut out = text.to_vec();
    for secret in meaningful(secrets) {
        if memmem::find(&out, secret).is_some() {
            out = replace_verbatim(&out, secret);
        }
    }
    for shape in shapes_in(&out) {
        out = shape
            .replace_all(&out, format!("${{1}}{MASK}").as_bytes())
            .into_owned();
    }
    out
}

/// The secrets one process knows, shared by everything that writes or sends text, so a secret
/// learned mid-run (a key read from the config file) is hidden everywhere from then on.
/// Cloning shares the list. `Debug` shows how many there are, never what they are.
#[derive(Clone, Default)]
pub struct Secrets {
    values: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} known)", self.lock().len())
    }
}

impl Secrets {
    /// The values of the key variables (`KEY_VARIABLES`) and of the CI's token variables
    /// (`CI_TOKEN_VARIABLES`) set in the environment `var` looks up.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let secrets = Secrets::default();
        for name in KEY_VARIABLES.iter().chain(&CI_TOKEN_VARIABLES) {
            if let Some(value) = var(name) {
                secrets.add(&value);
            }
        }
        secrets
    }

    /// Adds a secret (e.g. a key read from the config file); empty values are ignored.
    pub(crate) fn add(&self, secret: &str) {
        let secret = secret.trim();
        if secret.is_empty() {
            return;
        }
        let mut values = self.lock();
        if !values.iter().any(|known| known == secret) {
            values.push(secret.to_string());
        }
    }

    /// The text with every known secret and secret-shaped string replaced.
    pub(crate) fn apply(&self, text: &str) -> String {
        let values = self.lock();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        redact(text, &values)
    }

    /// [`Secrets::apply`] for bytes that need not be UTF-8.
    pub(crate) fn apply_bytes(&self, text: &[u8]) -> Vec<u8> {
        let values = self.lock();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        redact_bytes(text, &values)
    }

    /// The byte ranges of `text` that [`Secrets::apply_bytes`] would mask — each known secret
    /// and each key-shaped string's key — in order of their start. What reads a slice of a
    /// longer text (a window of a task's log) widens the slice to these, so no secret is ever
    /// cut in two at its edge and shown in halves.
    pub(crate) fn spans(&self, text: &[u8]) -> Vec<Range<usize>> {
        let values = self.lock();
        let mut spans: Vec<Range<usize>> = Vec::new();
        for secret in meaningful(&values.iter().map(String::as_str).collect::<Vec<_>>()) {
            spans.extend(memmem::find_iter(text, secret).map(|at| at..at + secret.len()));
        }
        for shape in shapes_in(text) {
            spans.extend(
                shape
                    .captures_iter(text)
                    .filter_map(|found| Some(found.get(1)?.end()..found.get(0)?.end())),
            );
        }
        spans.sort_by_key(|span| span.start);
        spans
    }

    /// The farthest a secret can reach past the edge of a slice that holds part of it: the
    /// longest known secret, or [`SHAPE_REACH`] for a key no one configured.
    pub(crate) fn reach(&self) -> usize {
        self.lock()
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(SHAPE_REACH)
    }

    /// A redactor for text that arrives in pieces.
    pub(crate) fn stream(&self) -> StreamRedactor {
        StreamRedactor {
            secrets: self.clone(),
            pending: Vec::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<String>> {
        crate::sync::lock(&self.values)
    }
}

/// Redacts a stream of pieces (streamed deltas, a log read as it grows) as if it were one
/// text: a piece is written only up to where no secret or key shape can still be continuing,
/// and the rest waits for the next piece (or [`StreamRedactor::finish`]). What waits is never
/// longer than the longest secret, or the current word for the key shapes (at most
/// 4 KiB, `MAX_OPEN_TAIL`).
#[derive(Debug)]
pub(crate) struct StreamRedactor {
    secrets: Secrets,
    pending: Vec<u8>,
}

impl StreamRedactor {
    /// Takes the next piece; returns what can be written now, redacted.
    pub(crate) fn push(&mut self, piece: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(piece);
        let values = self.secrets.lock();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let ready = ready_len(&self.pending, &values);
        let rest = self.pending.split_off(ready);
        let ready = std::mem::replace(&mut self.pending, rest);
        redact_bytes(&ready, &values)
    }

    /// [`StreamRedactor::push`] for text. What it returns is always whole characters.
    pub(crate) fn push_str(&mut self, piece: &str) -> String {
        into_text(self.push(piece.as_bytes()))
    }

    /// The stream is over: everything still held, redacted.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let rest = std::mem::take(&mut self.pending);
        self.secrets.apply_bytes(&rest)
    }

    /// [`StreamRedactor::finish`] for text.
    pub(crate) fn finish_str(&mut self) -> String {
        into_text(self.finish())
    }
}

/// A writer that redacts what passes through it as one stream (see [`StreamRedactor`]), for
/// output copied from files a command wrote, such as a task's log. Call
/// [`RedactingWriter::finish`] at the end: it writes what was held back.
pub(crate) struct RedactingWriter<W: std::io::Write> {
    inner: W,
    stream: StreamRedactor,
}

impl<W: std::io::Write> RedactingWriter<W> {
    /// Redacts `secrets` from everything written to `inner`.
    pub(crate) fn new(inner: W, secrets: &Secrets) -> Self {
        RedactingWriter {
            inner,
            stream: secrets.stream(),
        }
    }

    /// Writes what was held back and flushes.
    pub(crate) fn finish(&mut self) -> std::io::Result<()> {
        let rest = self.stream.finish();
        self.inner.write_all(&rest)?;
        self.inner.flush()
    }
}

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let ready = self.stream.push(buf);
        self.inner.write_all(&ready)?;
        Ok(buf.len())
    }

    /// Flushes what could be written; text that may be the start of a secret stays held.
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn into_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// How much of `text` (the stream so far, unredacted) can be written without cutting a
/// secret or a key shape in two: everything before the first place where one may begin and
/// still be going on at the end, and never inside a match that is complete.
fn ready_len(text: &[u8], secrets: &[&str]) -> usize {
    let mut split = text.len();
    // The longest end of the text that is the start of a secret.
    for secret in meaningful(secrets) {
        let longest = (secret.len() - 1).min(text.len());
        if let Some(len) = (1..=longest)
            .rev()
            .find(|len| text.ends_with(&secret[..*len]))
        {
            split = split.min(text.len() - len);
        }
    }
    // The current word, which may still grow into a key shape.
    let mut from = text.len().saturating_sub(MAX_OPEN_TAIL);
    while from < text.len() && is_continuation(text[from]) {
        from += 1;
    }
    if let Some(open) = OPEN_TAIL.find(&text[from..]) {
        split = split.min(from + open.start());
    }
    // Never inside a complete match: it would be written half masked, half not.
    let mut matches: Vec<(usize, usize)> = Vec::new();
    for secret in meaningful(secrets) {
        matches.extend(memmem::find_iter(text, secret).map(|start| (start, start + secret.len())));
    }
    for shape in shapes_in(text) {
        matches.extend(shape.find_iter(text).map(|m| (m.start(), m.end())));
    }
    matches.sort_unstable();
    for (start, end) in matches.into_iter().rev() {
        if start < split && split < end {
            split = start;
        }
    }
    split
}

/// Whether `byte` continues a UTF-8 sequence (so a cut before it would split a character).
fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn configured_secret_is_removed_verbatim() {
        let text = "HTTP 401: key 'local-key-42' rejected; again: local-key-42";
        let out = redact(text, &["local-key-42"]);
        assert_eq!(
            out,
            "HTTP 401: key '[REDACTED]' rejected; again: [REDACTED]"
        );
    }

    #[test]
    fn short_and_empty_secrets_are_ignored() {
        assert_eq!(redact("a b c", &["", "a"]), "a b c");
    }

    #[test]
    fn sk_shaped_keys_are_masked_even_when_not_configured() {
        let out = redact(
            "Incorrect API key provided: sk-proj-abcdefghijklmnop1234.",
            &[],
        );
        assert_eq!(out, "Incorrect API key provided: [REDACTED].");
        // Too short to be a key: left alone so ordinary words survive.
        assert_eq!(redact("task-sk-short", &[]), "task-sk-short");
    }

    #[test]
    fn bearer_tokens_keep_their_label() {
        let out = redact("sent Authorization: Bearer abcdefghijklmnopqrstuvwxyz", &[]);
        assert_eq!(out, "sent Authorization: Bearer [REDACTED]");
    }

    #[test]
    fn api_key_parameters_and_headers_are_masked() {
        let url = redact("GET https://x.example/v1?api_key=0123456789abcdef&q=1", &[]);
        assert_eq!(url, "GET https://x.example/v1?api_key=[REDACTED]&q=1");
        let header = redact("api-key: 0123456789abcdef", &[]);
        assert_eq!(header, "api-key: [REDACTED]");
        let json = redact(r#"{"apiKey": "0123456789abcdef"}"#, &[]);
        assert_eq!(json, r#"{"apiKey": "[REDACTED]"}"#);
    }

    #[test]
    fn a_shape_inside_a_json_string_is_masked_and_the_string_stays_valid() {
        for text in [
            r#"api_key = "0123456789abcdef""#,
            r#"{"api_key": "0123456789abcdef"}"#,
            "api_key = \"0123456789abcdef\"\nnext line",
        ] {
            let line = serde_json::to_string(&serde_json::json!({ "message": text })).unwrap();
            let masked = redact(&line, &[]);
            assert!(!masked.contains("0123456789abcdef"), "{masked}");
            let back: serde_json::Value = serde_json::from_str(&masked).expect("still JSON");
            assert!(back["message"].as_str().unwrap().contains(MASK), "{back}");
        }
    }

    /// A real-shaped installation token, as `GITHUB_TOKEN` holds one (not a live token).
    const GHS: &str = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";

    #[test]
    fn every_shape_is_found_by_its_anchors() {
        let examples = [
            "key sk-abcdefghijklmnop1234",
            "Authorization: BEARER abcdefghijklmnopqrstuvwxyz",
            "api_key=0123456789abcdef",
            "token ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "token glpat-0123456789abcdefghij",
            "AUTHORIZATION: basic dXNlcjpwYXNzd29yZA==",
            "eC1hY2Nlc3MtdG9rZW46Z2hzXzE2QzdlNDJG",
        ];
        assert_eq!(examples.len(), SHAPE_PATTERNS.len());
        for (example, (pattern, _)) in examples.iter().zip(SHAPE_PATTERNS) {
            let found = shapes_in(example.as_bytes());
            assert!(
                found.iter().any(|shape| shape.as_str() == pattern),
                "{example} does not reach {pattern}"
            );
            assert!(redact(example, &[]).contains(MASK), "{example}");
        }
        assert!(shapes_in(b"HTTP 400: model not found").is_empty());
    }

    #[test]
    fn forge_tokens_are_masked_even_when_not_configured() {
        for token in [
            GHS,
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "gho_0123456789abcdefghijABCDEFGHIJ012345",
            "ghu_0123456789abcdefghijABCDEFGHIJ012345",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV",
            "glpat-xYz0123456789AbCdEfGh",
            "glpat-xYz0123456789AbCdEfGhIjKl.01.120abc",
        ] {
            let out = redact(&format!("the token is {token}."), &[]);
            assert_eq!(out, "the token is [REDACTED].", "{token}");
        }
        // Words that only start like a token are left alone.
        assert_eq!(
            redact("ghs_short and glpat-x", &[]),
            "ghs_short and glpat-x"
        );
    }

    #[test]
    fn the_checkout_credential_is_masked_in_every_form() {
        use base64::Engine;
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{GHS}"));
        let config = format!(
            "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic {encoded}\n"
        );
        let out = redact(&config, &[]);
        assert!(!out.contains(&encoded), "{out}");
        assert!(out.contains("AUTHORIZATION: basic [REDACTED]\n"), "{out}");
        // The encoding alone, quoted without its header, and another user's basic credential.
        assert_eq!(redact(&format!("({encoded})"), &[]), "([REDACTED])");
        let other = base64::engine::general_purpose::STANDARD.encode("me:hunter2hunter2");
        let header = redact(&format!("authorization: Basic {other}"), &[]);
        assert_eq!(header, "authorization: Basic [REDACTED]");
        // "basic" as a word is not a credential.
        let prose = "basic internationalization support";
        assert_eq!(redact(prose, &[]), prose);
    }

    #[test]
    fn a_basic_credential_streamed_after_its_label_is_masked() {
        let secrets = Secrets::default();
        let pieces = [
            "extraheader = AUTHORIZATION",
            ": basic",
            " dXNlcjpw",
            "YXNzd29yZA==\n",
        ];
        assert_eq!(
            streamed(&secrets, &pieces),
            "extraheader = AUTHORIZATION: basic [REDACTED]\n"
        );
    }

    #[test]
    fn the_ci_token_variables_are_known_secrets() {
        let secrets = Secrets::from_vars(|name| {
            (name == "CI_JOB_TOKEN").then(|| "job-token-value-1234".to_string())
        });
        assert_eq!(secrets.apply("got job-token-value-1234"), "got [REDACTED]");
    }

    #[test]
    fn text_without_secrets_is_unchanged() {
        let text = "HTTP 400 from http://127.0.0.1:8080/v1/chat/completions: model not found";
        assert_eq!(redact(text, &["sk-configured-key-123456"]), text);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_redacted_around() {
        let out = redact_bytes(b"\xff key=local-key-42 \xfe", &["local-key-42"]);
        assert_eq!(out, b"\xff key=[REDACTED] \xfe");
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let secrets = Secrets::default();
        secrets.add("local-key-42");
        assert_eq!(format!("{secrets:?}"), "Secrets(1 known)");
    }

    /// Feeds `pieces` through a stream redactor and returns everything it wrote.
    fn streamed(secrets: &Secrets, pieces: &[&str]) -> String {
        let mut stream = secrets.stream();
        let mut out: String = pieces.iter().map(|piece| stream.push_str(piece)).collect();
        out.push_str(&stream.finish_str());
        out
    }

    #[test]
    fn a_key_streamed_in_small_pieces_is_masked() {
        let secrets = Secrets::default();
        secrets.add("zk-live-0123456789");
        let pieces = ["the key is zk", "-li", "ve-01", "2345", "6789", " ok"];
        assert_eq!(streamed(&secrets, &pieces), "the key is [REDACTED] ok");
    }

    #[test]
    fn a_key_shape_streamed_in_pieces_is_masked_whole() {
        let secrets = Secrets::default();
        let pieces = ["use sk-", "abcdefgh", "ijklmnop", "qrstuvwx", "yz now"];
        assert_eq!(streamed(&secrets, &pieces), "use [REDACTED] now");
        let pieces = ["Authorization: Bearer ", "abcdefghij", "klmnopqrstu", "\n"];
        assert_eq!(
            streamed(&secrets, &pieces),
            "Authorization: Bearer [REDACTED]\n"
        );
    }

    #[test]
    fn a_stream_holds_back_only_what_may_be_a_secret() {
        let secrets = Secrets::default();
        secrets.add("zk-live-0123456789");
        let mut stream = secrets.stream();
        // Whole words that cannot start a secret are written at once; the last word waits.
        assert_eq!(stream.push_str("hello there wo"), "hello there ");
        assert_eq!(stream.push_str("rld zk-li"), "world ");
        assert_eq!(stream.finish_str(), "zk-li");
        assert_eq!(stream.finish_str(), "", "finishing hands over all it held");
    }

    #[test]
    fn a_long_word_is_not_held_without_bound() {
        let secrets = Secrets::default();
        let mut stream = secrets.stream();
        let word = "x".repeat(3 * MAX_OPEN_TAIL);
        let written = stream.push_str(&word);
        assert_eq!(written.len(), 2 * MAX_OPEN_TAIL);
    }

    #[test]
    fn a_stream_never_splits_a_character() {
        let secrets = Secrets::default();
        let mut stream = secrets.stream();
        let word = "é".repeat(MAX_OPEN_TAIL);
        let written = stream.push_str(&word) + &stream.finish_str();
        assert_eq!(written, word);
    }

    proptest! {
        /// However the text is cut into pieces, the stream writes exactly what redacting the
        /// whole text would, and the secret never appears.
        #[test]
        fn streaming_equals_redacting_the_whole(
            before in "[abc0-9 ]{0,40}",
            after in "[abc0-9 ]{0,40}",
            cuts in proptest::collection::vec(0usize..120, 0..12),
        ) {
            let secret = "xyz0123abc";
            let text = format!("{before}{secret}{after}{secret}");
            let secrets = Secrets::default();
            secrets.add(secret);
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c < text.len()).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut pieces = Vec::new();
            let mut last = 0;
            for cut in cuts {
                pieces.push(&text[last..cut]);
                last = cut;
            }
            pieces.push(&text[last..]);
            let out = streamed(&secrets, &pieces);
            prop_assert!(!out.contains(secret));
            prop_assert_eq!(out, secrets.apply(&text));
        }
    }
}
