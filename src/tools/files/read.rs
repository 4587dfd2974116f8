//! `read_file`: a text file as numbered lines.
//!
//! The file is streamed line by line and reading stops as soon as the output budget is spent,
//! so showing the start of a multi-gigabyte log costs no more memory than showing a small file.
//! Binary and non-UTF-8 files are described, never dumped into the model's context. An image
//! (PNG, JPEG, GIF, WebP, known by its first bytes, not its name) is returned as the image,
//! within the APIs' limits, for the model to see.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fsutil;
use crate::image::{self, Image, ImageError, ImageFormat};
use crate::tools::fsops::{io_failure, open_failure, run_blocking};
use crate::tools::{
    Access, Bounded, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolOutput, ToolResult,
    parse_args,
};

/// Most bytes of numbered lines one call returns.
const OUTPUT_CAP: usize = 128 * 1024;
/// Longest line shown in full; the rest of a longer line (minified code, data) is cut.
const LINE_CAP: usize = 4 * 1024;
/// How much of the start of a file decides whether it is text (as git and ripgrep do).
const SNIFF_LEN: usize = 8 * 1024;

/// The `limit` argument: how many lines; as many as fit when not given.
const LIMIT: Bounded<usize> = Bounded {
    name: "limit",
    min: 1,
    max: None,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// Reads a text file and returns it as `cat -n` style numbered lines.
pub(crate) struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        ToolId::ReadFile.name()
    }

    fn description(&self) -> &'static str {
        "Read a text file. Returns its lines numbered like `cat -n`: the line number, a tab, then \
         the line exactly as in the file (the numbers and tab are not part of the file; leave \
         them out when you quote lines in edit_file or apply_patch). By default it returns the \
         whole file, up to 128 KiB of output; a longer file ends with a note saying which lines \
         were shown and the offset to continue from. Use `offset` (first line, 1-based) and \
         `limit` (number of lines) to read one part of a large file, e.g. around a line number \
         grep reported. Lines longer than 4 KiB are cut, with a note. Binary and non-UTF-8 \
         files are reported, not shown. A PNG, JPEG, GIF or WebP image (up to 5 MB) is \
         returned as the image, for you to see. To see what a directory contains, use \
         list_directory."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file to read, relative to the workspace root (or absolute)."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The first line to show, 1-based. Default 1."
                },
                "limit": LIMIT.schema("How many lines to show. Default: as many as fit in 128 KiB.")
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::ReadFile.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        self.call_with_images(args, ctx)
            .await
            .map(|output| output.text)
    }

    async fn call_with_images(
        &self,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: ReadFileArgs = parse_args(args)?;
        let window = Window::new(args.offset, args.limit)?;
        let path = ctx.resolve(&args.path, Access::Read)?;
        run_blocking(move || read(&path, &args.path, window)).await
    }
}

/// The lines a call asked for.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// First line to show, 1-based.
    first: usize,
    /// Most lines to show; `None` shows as many as fit in [`OUTPUT_CAP`].
    limit: Option<usize>,
}

impl Window {
    fn new(offset: Option<usize>, limit: Option<usize>) -> Result<Self, ToolError> {
        if offset == Some(0) {
            return Err(ToolError::InvalidArguments(
                "`offset` is 1-based: the first line of the file is 1".into(),
            ));
        }
        Ok(Window {
            first: offset.unwrap_or(1),
            limit: limit.map(|limit| LIMIT.check(limit)).transpose()?,
        })
    }
}

/// What reading the window found.
#[derive(Debug)]
enum Outcome {
    /// Numbered lines, and why showing stopped.
    Lines {
        text: String,
        last: usize,
        stop: WindowEnd,
    },
    /// The file has no lines at all.
    Empty,
    /// The window starts after the last line; the file has this many lines.
    PastEnd(usize),
    /// This line is binary data or not valid UTF-8.
    NotText(usize),
}

/// Why showing lines ended where it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WindowEnd {
    /// The file ended.
    End,
    /// `limit` lines were shown and the file goes on.
    Limit,
    /// The next line would not fit in [`OUTPUT_CAP`].
    Cap,
}

/// Opens `path`, refuses anything but a regular file, and returns the image it holds or
/// renders the window of its text. `shown` is the path as the model wrote it, for messages.
fn read(path: &Path, shown: &str, window: Window) -> Result<ToolOutput, ToolError> {
    let (file, meta) = fsutil::open_regular(path).map_err(|e| open_failure(shown, &e))?;
    let size = meta.len();
    let mut head = Vec::with_capacity(SNIFF_LEN);
    (&file)
        .take(SNIFF_LEN as u64)
        .read_to_end(&mut head)
        .map_err(|e| io_failure(shown, &e))?;
    if ImageFormat::sniff(&head).is_some() {
        let bytes = read_image(&file, head, shown, size)?;
        return match image::measure(&bytes) {
            // Only the signature of one: shown as the file it is.
            Err(ImageError::Damaged(_)) => {
                read_text(file, bytes, shown, size, window).map(Into::into)
            }
            Err(error) => Err(refused(shown, error)),
            Ok(_) => {
                let image = Image::new(bytes).map_err(|error| refused(shown, error))?;
                Ok(ToolOutput {
                    text: format!("`{shown}`: {} (the image follows).", image.describe()),
                    images: vec![image],
                })
            }
        };
    }
    let text = read_text(file, head, shown, size, window)?;
    Ok(ToolOutput::from(match named_like_an_image(shown) {
        true => format!(
            "[`{shown}` is named like an image but is not a PNG, JPEG, GIF or WebP image (its \
             first bytes say so); read as a file]\n{text}"
        ),
        false => text,
    }))
}

/// The bytes of the image `file` holds (its first bytes `head` read already), refused with the
/// limit named when it is larger than an image may be; no more of a file than that is read.
fn read_image(file: &File, head: Vec<u8>, shown: &str, size: u64) -> Result<Vec<u8>, ToolError> {
    if size > image::MAX_BYTES as u64 {
        let bytes = usize::try_from(size).unwrap_or(usize::MAX);
        return Err(refused(shown, ImageError::TooLarge { bytes }));
    }
    let mut bytes = head;
    file.take((image::MAX_BYTES + 1 - bytes.len()) as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| io_failure(shown, &e))?;
    Ok(bytes)
}

/// The error of an image refused for `error`.
fn refused(shown: &str, error: ImageError) -> ToolError {
    ToolError::Failed(format!("`{shown}`: {error}"))
}

/// Whether `path` ends in an image format's extension, so a file that is not one gets a note.
fn named_like_an_image(path: &str) -> bool {
    Path::new(path)
        .extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| {
            ["png", "jpg", "jpeg", "gif", "webp"]
                .iter()
                .any(|known| extension.eq_ignore_ascii_case(known))
        })
}

/// The window of `file`'s text (its first bytes `head` read already), or what it is when it is
/// not text.
fn read_text(file: File, head: Vec<u8>, shown: &str, size: u64, window: Window) -> ToolResult {
    let fail = |e: io::Error| io_failure(shown, &e);
    if let Some(kind) = sniff(&head) {
        return Ok(format!("`{shown}` is {kind} ({size} bytes); not shown."));
    }
    let reader = BufReader::new(Cursor::new(head).chain(file));
    match render(reader, window).map_err(fail)? {
        Outcome::Lines { text, last, stop } => {
            Ok(text + &continuation_note(window, last, stop, size))
        }
        Outcome::Empty => Ok(format!("`{shown}` is empty (0 lines).")),
        Outcome::PastEnd(lines) => Err(ToolError::Failed(format!(
            "`{shown}` has only {lines} lines; offset {} is past the end",
            window.first
        ))),
        Outcome::NotText(line) => Ok(format!(
            "`{shown}` is not UTF-8 text (line {line} holds binary data or invalid UTF-8; {size} \
             bytes); not shown."
        )),
    }
}

/// Says why the start of a file is not showable text, or `None` when it is.
fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.contains(&0) {
        return Some("a binary file");
    }
    match std::str::from_utf8(head) {
        Ok(_) => None,
        // A character cut by the end of the sample is fine if the file goes on.
        Err(e) if e.error_len().is_none() && head.len() == SNIFF_LEN => None,
        Err(_) => Some("not UTF-8 text"),
    }
}

/// Skips to the window and numbers its lines until the window, the file or the budget ends.
fn render(mut reader: impl BufRead, window: Window) -> io::Result<Outcome> {
    let mut line = Vec::new();
    let mut number = 0;
    // Lines before the window are counted, never kept. If the file ends first, the loop below
    // stops at once and the final match reports it.
    while number + 1 < window.first && next_line(&mut reader, &mut line, 0)?.is_some() {
        number += 1;
    }
    let mut text = String::new();
    let mut shown = 0;
    let stop = loop {
        if window.limit == Some(shown) {
            break if reader.fill_buf()?.is_empty() {
                WindowEnd::End
            } else {
                WindowEnd::Limit
            };
        }
        let Some(full_len) = next_line(&mut reader, &mut line, LINE_CAP)? else {
            break WindowEnd::End;
        };
        let cut = full_len > line.len();
        let Some(content) = decode(&line, cut) else {
            return Ok(Outcome::NotText(number + 1));
        };
        let entry = numbered(number + 1, content, cut.then_some(full_len));
        if text.len() + entry.len() > OUTPUT_CAP {
            break WindowEnd::Cap;
        }
        text.push_str(&entry);
        number += 1;
        shown += 1;
    };
    Ok(match (number, stop) {
        (0, WindowEnd::End) => Outcome::Empty,
        (n, WindowEnd::End) if n < window.first => Outcome::PastEnd(n),
        _ => Outcome::Lines {
            text,
            last: number,
            stop,
        },
    })
}

/// Reads the next line into `buf` without its `\n`, keeping at most `keep` bytes of it, and
/// returns the line's full length; `None` at end of file. Memory stays bounded by `keep` however
/// long the line is.
fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> io::Result<Option<usize>> {
    buf.clear();
    let mut full_len = 0;
    let mut started = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(started.then_some(full_len));
        }
        started = true;
        let (body, consumed, ended) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&body[..body.len().min(room)]);
        full_len += body.len();
        reader.consume(consumed);
        if ended {
            return Ok(Some(full_len));
        }
    }
}

/// The text of a line read by [`next_line`] (`cut` when only its start was kept): `None` if
/// it holds a NUL byte (binary data the start of the file did not reveal) or is not UTF-8. A
/// character split by the cut is dropped; a `\r` of a CRLF ending is not shown.
fn decode(line: &[u8], cut: bool) -> Option<&str> {
    if line.contains(&0) {
        return None;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&line[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    Some(if cut {
        text
    } else {
        text.strip_suffix('\r').unwrap_or(text)
    })
}

/// One output line in `cat -n` format, with a note giving the full length of a cut line.
fn numbered(number: usize, content: &str, cut_from: Option<usize>) -> String {
    match cut_from {
        Some(full_len) => {
            format!("{number:>6}\t{content} [... line cut: {full_len} bytes in total]\n")
        }
        None => format!("{number:>6}\t{content}\n"),
    }
}

/// The note after the lines when the file goes on, saying how to read the rest.
fn continuation_note(window: Window, last: usize, stop: WindowEnd, size: u64) -> String {
    let why = match stop {
        WindowEnd::End => return String::new(),
        WindowEnd::Limit => "",
        WindowEnd::Cap => "output reached the 128 KiB cap; ",
    };
    format!(
        "\n[{why}showed lines {}-{last} of a file of {size} bytes that continues; call read_file \
         again with offset={} to read further]",
        window.first,
        last + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Workspace;
    use std::os::unix::fs::symlink;

    async fn read_file(ws: &Workspace, args: Value) -> ToolResult {
        ws.call(&ReadFile, args).await
    }

    #[tokio::test]
    async fn numbers_lines_like_cat_n() {
        let ws = Workspace::new();
        ws.write("a.txt", "first\n\tsecond\r\nthird");
        let out = read_file(&ws, json!({"path": "a.txt"})).await.unwrap();
        assert_eq!(out, "     1\tfirst\n     2\t\tsecond\n     3\tthird\n");
    }

    #[tokio::test]
    async fn offset_and_limit_show_a_window_and_say_where_to_continue() {
        let ws = Workspace::new();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        ws.write("ten.txt", &body);

        let out = read_file(&ws, json!({"path": "ten.txt", "offset": 4, "limit": 2}))
            .await
            .unwrap();
        assert!(out.starts_with("     4\tline 4\n     5\tline 5\n"), "{out}");
        assert!(
            out.contains("showed lines 4-5") && out.contains("offset=6"),
            "{out}"
        );

        let tail = read_file(&ws, json!({"path": "ten.txt", "offset": 9, "limit": 2}))
            .await
            .unwrap();
        assert_eq!(
            tail, "     9\tline 9\n    10\tline 10\n",
            "no note when the file ends"
        );
    }

    #[tokio::test]
    async fn offset_past_the_end_says_how_many_lines_there_are() {
        let ws = Workspace::new();
        ws.write("short.txt", "a\nb\nc\n");
        let err = read_file(&ws, json!({"path": "short.txt", "offset": 7}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Failed(m) if m.contains("has only 3 lines")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn empty_file_is_reported_as_empty() {
        let ws = Workspace::new();
        ws.write("empty", "");
        let out = read_file(&ws, json!({"path": "empty"})).await.unwrap();
        assert_eq!(out, "`empty` is empty (0 lines).");
    }

    #[tokio::test]
    async fn huge_file_is_capped_with_a_note_on_how_to_continue() {
        let ws = Workspace::new();
        let line = format!("{}\n", "x".repeat(99));
        ws.write("big.log", line.repeat(50_000)); // 5 MB

        let out = read_file(&ws, json!({"path": "big.log"})).await.unwrap();

        assert!(out.len() <= OUTPUT_CAP + 200, "{} bytes", out.len());
        let shown = OUTPUT_CAP / (line.len() + 7);
        assert!(
            out.contains(&format!(
                "showed lines 1-{shown} of a file of 5000000 bytes"
            )),
            "{}",
            &out[out.len() - 200..]
        );
        assert!(out.contains(&format!("offset={}", shown + 1)));
        assert!(out.contains("128 KiB cap"));
    }

    #[tokio::test]
    async fn a_huge_single_line_is_cut_not_loaded() {
        let ws = Workspace::new();
        // 5.1 MB on one line, of 3-byte characters so the cut falls inside one.
        ws.write("min.js", "€".repeat(1_700_000));

        let out = read_file(&ws, json!({"path": "min.js"})).await.unwrap();

        assert!(out.len() < LINE_CAP + 100, "{} bytes", out.len());
        assert!(
            out.contains("[... line cut: 5100000 bytes in total]"),
            "{out}"
        );
    }

    #[test]
    fn reading_stops_once_the_budget_is_spent() {
        // An endless stream of empty lines: reading it to the end would never return.
        let endless = BufReader::new(io::repeat(b'\n'));
        let outcome = render(endless, Window::new(None, None).unwrap()).unwrap();
        let Outcome::Lines { last, stop, .. } = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(stop, WindowEnd::Cap);
        assert_eq!(last, OUTPUT_CAP / "     1\t\n".len());
    }

    #[tokio::test]
    async fn binary_and_non_utf8_files_are_described_not_dumped() {
        let ws = Workspace::new();
        ws.write("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        ws.write("latin1.txt", b"caf\xe9\n");
        let mut late = "ok\n".repeat(5000).into_bytes();
        late.extend_from_slice(b"caf\xe9\n");
        ws.write("late.txt", &late);
        ws.write("late_nul.txt", format!("{}a\0b\n", "ok\n".repeat(5000)));

        let binary = read_file(&ws, json!({"path": "image.png"})).await.unwrap();
        assert_eq!(
            binary,
            "`image.png` is a binary file (16 bytes); not shown."
        );
        let latin1 = read_file(&ws, json!({"path": "latin1.txt"})).await.unwrap();
        assert!(
            latin1.contains("not UTF-8 text") && !latin1.contains("caf"),
            "{latin1}"
        );
        let late_out = read_file(&ws, json!({"path": "late.txt"})).await.unwrap();
        assert!(late_out.contains("line 5001 holds"), "{late_out}");
        let nul_out = read_file(&ws, json!({"path": "late_nul.txt"}))
            .await
            .unwrap();
        assert!(nul_out.contains("line 5001 holds binary data"), "{nul_out}");
    }

    #[tokio::test]
    async fn directory_and_missing_file_fail_with_a_hint() {
        let ws = Workspace::new();
        ws.write("src/lib.rs", "");
        let dir = read_file(&ws, json!({"path": "src"})).await.unwrap_err();
        assert!(
            matches!(&dir, ToolError::Failed(m) if m.contains("list_directory")),
            "{dir}"
        );
        let missing = read_file(&ws, json!({"path": "nope.rs"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&missing, ToolError::Failed(m) if m.contains("No such file")),
            "{missing}"
        );
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_denied_even_through_a_symlink() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let ws = Workspace::new();
        symlink(outside.path().join("secret"), ws.path("link")).unwrap();

        let via_link = read_file(&ws, json!({"path": "link"})).await.unwrap_err();
        assert!(matches!(via_link, ToolError::Denied(_)), "{via_link}");
        let dotdot = read_file(&ws, json!({"path": "../x"})).await.unwrap_err();
        assert!(matches!(dotdot, ToolError::Denied(_)), "{dotdot}");
    }

    #[tokio::test]
    async fn bad_arguments_are_invalid() {
        let ws = Workspace::new();
        for args in [
            json!({}),
            json!({"path": 3}),
            json!({"path": "a", "offset": "1"}),
            json!({"path": "a", "offset": 0}),
            json!({"path": "a", "limit": 0}),
            json!({"path": "a", "lines": 3}),
        ] {
            let err = read_file(&ws, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err}"
            );
        }
    }
    #[tokio::test]
    async fn an_image_is_returned_as_the_image_whatever_its_name() {
        let ws = Workspace::new();
        ws.write("shot.bin", crate::image::test_png(640, 480));
        let output = ReadFile
            .call_with_images(json!({"path": "shot.bin"}), &ws.ctx)
            .await
            .unwrap();
        assert!(
            output.text.contains("PNG image, 640×480 px"),
            "{}",
            output.text
        );
        assert_eq!(output.images.len(), 1);
        assert_eq!(output.images[0].data(), crate::image::test_png(640, 480));
    }

    #[tokio::test]
    async fn an_image_past_the_limit_is_refused_with_the_limit_named() {
        let ws = Workspace::new();
        let mut big = crate::image::test_png(100, 100);
        big.resize(6 * 1024 * 1024, 0);
        ws.write("big.png", &big);
        let error = read_file(&ws, json!({"path": "big.png"}))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("at most 5 MB"), "{error}");
    }

    #[tokio::test]
    async fn a_file_named_like_an_image_that_is_not_one_is_read_with_a_note() {
        let ws = Workspace::new();
        ws.write("fake.png", "just text\n");
        let out = read_file(&ws, json!({"path": "fake.png"})).await.unwrap();
        assert!(
            out.starts_with("[`fake.png` is named like an image"),
            "{out}"
        );
        assert!(out.ends_with("     1\tjust text\n"), "{out}");
    }
}
