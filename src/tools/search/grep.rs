//! `grep`: search file contents with a regular expression, the way ripgrep does.
//!
//! Matching is `grep-regex`, reading is `grep-searcher` (streaming, with ripgrep's binary
//! detection: a file with a NUL byte is skipped), and the walk is the shared sorted one. Files
//! are read on several threads but taken in walk order, so the output is identical on every run
//! and the search stops as soon as `limit` is reached.

use std::fs;
use std::io;
use std::path::Path;

use async_trait::async_trait;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{View, display_path, ordered, walker};
use crate::fsutil;
use crate::tools::fsops::{check_cancelled, io_failure, open_failure, run_blocking};
use crate::tools::text::{prefix_at_boundary, suffix_at_boundary};
use crate::tools::{
    Access, Bounded, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args,
};

/// Output lines (content mode) or files (other modes) when the call gives no `limit`.
const DEFAULT_LIMIT: usize = 200;
/// Most lines or files one call may ask for.
const MAX_LIMIT: usize = 2000;
/// The `limit` argument: output lines or files.
const LIMIT: Bounded<usize> = Bounded {
    name: "limit",
    min: 1,
    max: Some(MAX_LIMIT),
};
/// The `context` argument: lines around each match.
const CONTEXT: Bounded<usize> = Bounded {
    name: "context",
    min: 0,
    max: Some(10),
};
/// Most bytes of output one call returns.
const OUTPUT_CAP: usize = 64 * 1024;
/// Longest line of text shown per match; matches in minified files stay readable.
const LINE_CAP: usize = 500;
/// Most memory the searcher may use for one line; a longer line makes the file unreadable
/// rather than making zero allocate without bound.
const HEAP_LIMIT: usize = 64 * 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    context: usize,
    #[serde(default)]
    output_mode: OutputMode,
    limit: Option<usize>,
}

/// What the output lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    /// Matching lines as `path:line:text`, with context lines as `path-line-text`.
    #[default]
    Content,
    /// The paths of files with at least one match.
    FilesWithMatches,
    /// `path:count` of matching lines per file.
    Count,
}

/// Searches file contents for a regular expression.
pub(crate) struct Grep;

#[async_trait]
impl Tool for Grep {
    fn name(&self) -> &'static str {
        ToolId::Grep.name()
    }

    fn description(&self) -> &'static str {
        "Search file contents with a regular expression (Rust regex syntax, as in ripgrep: \
         escape `( ) [ ] { } . * + ? | \\` to match them literally; a match never spans lines). \
         Searches `path` (a directory, recursively, or a single file; default the workspace \
         root), skipping hidden files, files ignored by .gitignore or .ignore, and binary files. \
         `glob` restricts the files searched, e.g. `*.rs`, `src/**/*.ts`, or `!*.min.js` to \
         exclude. Output modes: `content` (default) gives `path:line:text` for each matching \
         line, with `context` lines before and after shown as `path-line-text` and `--` between \
         groups; `files_with_matches` gives the paths only (cheapest, good for a first look); \
         `count` gives `path:N`. Files are searched in path order and output stops at `limit` \
         lines or files (default 200) or 64 KiB, with a note; narrow the search rather than \
         raising the limit. Paths in the output can be passed straight to read_file."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The regular expression to search for, e.g. `fn\\s+parse_` or `TODO|FIXME`."
                },
                "path": {
                    "type": "string",
                    "description": "A directory to search recursively, or one file; relative to the workspace root (or absolute). Default: the workspace root."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose path (relative to `path`) matches this glob; a pattern without `/` matches file names at any depth. Prefix with `!` to exclude instead."
                },
                "case_insensitive": {
                    "type": "boolean",
                    "description": "Match regardless of case. Default false."
                },
                "context": CONTEXT.schema(
                    "Lines of context to show before and after each match (content mode only). Default 0."
                ),
                "output_mode": {
                    "type": "string",
                    "enum": ["content", "files_with_matches", "count"],
                    "description": "What to list: matching lines (default), file paths, or match counts per file."
                },
                "limit": LIMIT.schema(
                    "Most output lines (content mode) or files (other modes). Default 200."
                )
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::Grep.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: GrepArgs = parse_args(args)?;
        let query = Query::new(&args)?;
        let shown = args.path.unwrap_or_else(|| ".".to_string());
        let root = ctx.resolve(&shown, Access::Read)?;
        let filter = args
            .glob
            .as_deref()
            .map(|g| file_filter(&root, g))
            .transpose()?;
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let view = View::of(&ctx.policy, ToolId::Grep);
        run_blocking(move || {
            let meta = fs::metadata(&root).map_err(|e| io_failure(&shown, &e))?;
            if !meta.is_dir() {
                // A FIFO, socket or device named directly is refused as such, not searched
                // as an empty file (the walk under a directory skips them).
                fsutil::regular_or_absent(&root).map_err(|e| open_failure(&shown, &e))?;
            }
            let report = search(&workspace, &root, &view, filter.as_ref(), &query, &cancel)?;
            Ok(report.render(&query, &args.pattern, &shown))
        })
        .await
    }
}

/// A validated search: the compiled pattern and how to report what it finds.
struct Query {
    matcher: RegexMatcher,
    mode: OutputMode,
    context: usize,
    limit: usize,
}

impl Query {
    fn new(args: &GrepArgs) -> Result<Self, ToolError> {
        CONTEXT.check(args.context)?;
        let limit = LIMIT.or(args.limit, DEFAULT_LIMIT)?;
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(args.case_insensitive)
            // Lets the searcher go line by line: the regex can never match a line break.
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
            .map_err(|e| ToolError::InvalidArguments(format!("invalid regex: {e}")))?;
        let context = if args.output_mode == OutputMode::Content {
            args.context
        } else {
            0
        };
        Ok(Query {
            matcher,
            mode: args.output_mode,
            context,
            limit,
        })
    }

    /// Where the pattern first matches in one line of text (0 if it somehow does not).
    fn match_start(&self, line: &str) -> usize {
        match self.matcher.find(line.as_bytes()) {
            Ok(Some(found)) => found.start(),
            _ => 0,
        }
    }

    fn searcher(&self) -> Searcher {
        SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .before_context(self.context)
            .after_context(self.context)
            .heap_limit(Some(HEAP_LIMIT))
            .build()
    }
}

/// Compiles `glob` with ripgrep's `--glob` rules, relative to the search root. It is used as a
/// filter only, never as an override: a gitignored file stays skipped even if it matches.
fn file_filter(root: &Path, glob: &str) -> Result<Override, ToolError> {
    let invalid = |e: ignore::Error| ToolError::InvalidArguments(format!("invalid glob: {e}"));
    let mut builder = OverrideBuilder::new(root);
    builder.add(glob).map_err(invalid)?;
    builder.build().map_err(invalid)
}

/// Walks `root` in path order and searches the selected files `view` may show (on several
/// threads), taking their results in path order until the walk ends or the limit is reached.
/// A cancelled run stops the walk.
fn search(
    workspace: &Path,
    root: &Path,
    view: &View,
    filter: Option<&Override>,
    query: &Query,
    cancel: &CancellationToken,
) -> Result<Report, ToolError> {
    let files = walker(root, view)
        .build()
        .take_while(|_| !cancel.is_cancelled())
        .filter_map(Result::ok)
        .filter(|entry| {
            let is_file = entry.file_type().is_some_and(|t| t.is_file());
            // The root itself was named by the model, so the glob does not filter it out.
            let selected = entry.depth() == 0
                || filter.is_none_or(|f| !f.matched(entry.path(), false).is_ignore());
            is_file && selected
        })
        .map(ignore::DirEntry::into_path);
    let mut report = Report::default();
    ordered::for_each_in_order(
        files,
        || query.searcher(),
        |searcher, path| {
            let shown = display_path(workspace, &path);
            // Each file may fill the whole limit; `Report::add` keeps what fits.
            let mut sink = FileSink::new(&shown, query, query.limit);
            // The walk yields regular files only; one swapped for a FIFO or a link since
            // cannot hold the search up (see `open_listed_regular`).
            let file = fsutil::open_listed_regular(&path).ok()?;
            let readable = searcher
                .search_file(&query.matcher, &file, &mut sink)
                .is_ok();
            readable.then(|| sink.found())
        },
        |found| match found {
            Some(found) => report.add(found, query),
            None => {
                report.unreadable += 1;
                true
            }
        },
    );
    check_cancelled(cancel)?;
    Ok(report)
}

/// What the search found so far.
#[derive(Debug, Default)]
struct Report {
    /// Output lines in order.
    lines: Vec<String>,
    /// Files with at least one match so far.
    files: usize,
    /// Whether the limit cut the results short.
    limited: bool,
    /// Files that could not be read.
    unreadable: usize,
}

impl Report {
    /// How many more output lines the next file may add in content mode.
    fn room(&self, query: &Query) -> usize {
        let separator = usize::from(query.context > 0 && !self.lines.is_empty());
        query.limit.saturating_sub(self.lines.len() + separator)
    }

    /// Adds one searched file; returns false when the limit is reached and the search should
    /// stop.
    fn add(&mut self, mut file: Found, query: &Query) -> bool {
        if file.binary || file.matches == 0 {
            return true;
        }
        match query.mode {
            OutputMode::Content => {
                // The file had a line beyond the room left: keep what fits, note the cut.
                let room = self.room(query);
                if file.lines.len() > room {
                    file.lines.truncate(room);
                    file.cut = true;
                }
                if query.context > 0 && !self.lines.is_empty() && !file.lines.is_empty() {
                    self.lines.push("--".to_string());
                }
                self.lines.extend(file.lines);
                self.limited = file.cut;
            }
            _ if self.files == query.limit => self.limited = true,
            OutputMode::FilesWithMatches => self.lines.push(file.path),
            OutputMode::Count => self.lines.push(format!("{}:{}", file.path, file.matches)),
        }
        self.files += 1;
        !self.limited
    }

    /// The output for the model: the lines within [`OUTPUT_CAP`], then notes on anything cut
    /// or unreadable.
    fn render(&self, query: &Query, pattern: &str, shown: &str) -> String {
        let mut out = String::new();
        let mut capped = false;
        for line in &self.lines {
            if out.len() + line.len() + 1 > OUTPUT_CAP {
                capped = true;
                break;
            }
            out.push_str(line);
            out.push('\n');
        }
        if self.lines.is_empty() {
            out = format!(
                "No matches for `{pattern}` in `{shown}` (hidden, gitignored and binary files \
                 are not searched).\n"
            );
        }
        let unit = match query.mode {
            OutputMode::Content => "lines",
            OutputMode::FilesWithMatches | OutputMode::Count => "files",
        };
        let narrow = "narrow the search with path, glob or a more specific pattern";
        if capped {
            out.push_str(&format!("[output cut at 64 KiB; {narrow}]\n"));
        } else if self.limited {
            out.push_str(&format!(
                "[stopped at the limit of {} {unit}; there are more matches. To see them, {narrow} \
                 or raise limit]\n",
                query.limit
            ));
        }
        if self.unreadable > 0 {
            out.push_str(&format!("[{} files could not be read]\n", self.unreadable));
        }
        out.truncate(out.trim_end().len());
        out
    }
}

/// What one file contributed.
struct Found {
    /// The file as shown in the output.
    path: String,
    /// Its output lines (content mode), at most the limit.
    lines: Vec<String>,
    /// Matching lines seen.
    matches: u64,
    /// The file holds binary data; whatever was collected is dropped.
    binary: bool,
    /// A line did not fit.
    cut: bool,
}

/// Collects what one file contributes, as the searcher reports it. It stops at `room` lines,
/// or once its lines alone fill the output ([`OUTPUT_CAP`]): nothing past that is ever shown,
/// and files are searched ahead of the output on several threads, so each one's share of
/// memory stays bounded.
struct FileSink<'a> {
    /// The file as shown in the output.
    path: &'a str,
    query: &'a Query,
    /// Most lines this file may add (content mode).
    room: usize,
    lines: Vec<String>,
    /// Bytes of `lines` as output (a newline each).
    bytes: usize,
    /// Matching lines seen.
    matches: u64,
    /// The file holds binary data; whatever was collected is dropped.
    binary: bool,
    /// A line did not fit in `room`.
    cut: bool,
}

impl<'a> FileSink<'a> {
    fn new(path: &'a str, query: &'a Query, room: usize) -> Self {
        FileSink {
            path,
            query,
            room,
            lines: Vec::new(),
            bytes: 0,
            matches: 0,
            binary: false,
            cut: false,
        }
    }

    fn found(self) -> Found {
        Found {
            path: self.path.to_string(),
            lines: self.lines,
            matches: self.matches,
            binary: self.binary,
            cut: self.cut,
        }
    }

    /// Whether another line may be added; notes the cut when not. The line that takes the
    /// file past [`OUTPUT_CAP`] is still kept, so the output is capped where it would have been.
    fn has_room(&mut self) -> bool {
        if self.lines.len() >= self.room || self.bytes > OUTPUT_CAP {
            self.cut = true;
            return false;
        }
        true
    }

    fn keep(&mut self, line: String) {
        self.bytes += line.len() + 1;
        self.lines.push(line);
    }

    /// Adds `path{sep}number{sep}text`; returns false (stop searching) once there is no room.
    /// A long matching line is shown around its first match, so the match is always visible.
    fn push(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) -> bool {
        if !self.has_room() {
            return false;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let focus = match separator {
            ':' => self.query.match_start(text),
            _ => 0,
        };
        let number = number.unwrap_or(0);
        let line = format!(
            "{}{separator}{number}{separator}{}",
            self.path,
            clip(text, focus)
        );
        self.keep(line);
        true
    }
}

/// `text` cut to about [`LINE_CAP`] bytes that include byte offset `focus` (with a little of
/// what precedes it), marking each cut end with `[...]`.
fn clip(text: &str, focus: usize) -> String {
    if text.len() <= LINE_CAP {
        return text.to_string();
    }
    let mut focus = focus.min(text.len());
    while !text.is_char_boundary(focus) {
        focus -= 1;
    }
    let lead_in = suffix_at_boundary(&text[..focus], LINE_CAP / 5);
    let start = focus - lead_in.len();
    let shown = prefix_at_boundary(&text[start..], LINE_CAP);
    let before = if start > 0 { "[...] " } else { "" };
    let after = if start + shown.len() < text.len() {
        " [...]"
    } else {
        ""
    };
    format!("{before}{shown}{after}")
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        Ok(match self.query.mode {
            OutputMode::Content => self.push(':', found.line_number(), found.bytes()),
            OutputMode::FilesWithMatches => false,
            OutputMode::Count => true,
        })
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.push('-', context.line_number(), context.bytes()))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if !self.has_room() {
            return Ok(false);
        }
        self.keep("--".to_string());
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Workspace;
    use std::os::unix::fs::symlink;

    fn sample() -> Workspace {
        let ws = Workspace::new();
        ws.write(".gitignore", "target/\n*.gen.rs\n");
        ws.write(
            "src/lib.rs",
            "pub fn parse() {}\n// TODO: more\nfn helper() {}\n",
        );
        ws.write("src/main.rs", "fn main() {\n    parse();\n}\n");
        ws.write("src/out.gen.rs", "fn parse_generated() {}\n");
        ws.write("target/debug/parse.rs", "fn parse() {}\n");
        ws.write(".hidden/parse.rs", "fn parse() {}\n");
        ws.write("notes.md", "Parse the input.\n");
        ws.write("blob.bin", b"fn parse() {}\n\0\x01\x02");
        ws
    }

    async fn grep(ws: &Workspace, args: Value) -> ToolResult {
        ws.call(&Grep, args).await
    }

    #[tokio::test]
    async fn content_mode_lists_matching_lines_in_path_order() {
        let ws = sample();
        let out = grep(&ws, json!({"pattern": "parse"})).await.unwrap();
        assert_eq!(
            out,
            "src/lib.rs:1:pub fn parse() {}\nsrc/main.rs:2:    parse();"
        );
    }

    #[tokio::test]
    async fn ignored_hidden_and_binary_files_are_skipped() {
        let ws = sample();
        let out = grep(
            &ws,
            json!({"pattern": "parse", "output_mode": "files_with_matches"}),
        )
        .await
        .unwrap();
        assert_eq!(out, "src/lib.rs\nsrc/main.rs");
    }

    #[tokio::test]
    async fn case_insensitive_count_and_single_file() {
        let ws = sample();
        let count = grep(
            &ws,
            json!({"pattern": "PARSE", "case_insensitive": true, "output_mode": "count"}),
        )
        .await
        .unwrap();
        assert_eq!(count, "notes.md:1\nsrc/lib.rs:1\nsrc/main.rs:1");
        // A file named directly is searched even though .gitignore excludes it.
        let one = grep(&ws, json!({"pattern": "fn", "path": "src/out.gen.rs"}))
            .await
            .unwrap();
        assert_eq!(one, "src/out.gen.rs:1:fn parse_generated() {}");
    }

    #[tokio::test]
    async fn context_lines_and_group_separators() {
        let ws = Workspace::new();
        let body: String = (1..=9)
            .map(|i| {
                if i == 2 || i == 8 {
                    "hit\n".to_string()
                } else {
                    format!("l{i}\n")
                }
            })
            .collect();
        ws.write("f.txt", body);
        ws.write("g.txt", "hit\n");
        let out = grep(&ws, json!({"pattern": "hit", "context": 1}))
            .await
            .unwrap();
        assert_eq!(
            out,
            "f.txt-1-l1\nf.txt:2:hit\nf.txt-3-l3\n--\nf.txt-7-l7\nf.txt:8:hit\nf.txt-9-l9\n--\ng.txt:1:hit"
        );
    }

    #[tokio::test]
    async fn glob_filters_files_without_reviving_ignored_ones() {
        let ws = sample();
        let out = grep(
            &ws,
            json!({"pattern": "fn", "glob": "*.rs", "output_mode": "files_with_matches"}),
        )
        .await
        .unwrap();
        assert_eq!(out, "src/lib.rs\nsrc/main.rs");
        let excluded = grep(
            &ws,
            json!({"pattern": "fn", "glob": "!main.rs", "output_mode": "files_with_matches"}),
        )
        .await
        .unwrap();
        assert_eq!(excluded, "src/lib.rs");
    }

    #[tokio::test]
    async fn limit_cuts_output_with_a_note() {
        let ws = Workspace::new();
        ws.write("a.txt", "x\nx\nx\n");
        ws.write("b.txt", "x\n");
        let out = grep(&ws, json!({"pattern": "x", "limit": 2}))
            .await
            .unwrap();
        assert!(
            out.starts_with("a.txt:1:x\na.txt:2:x\n[stopped at the limit of 2 lines"),
            "{out}"
        );
        let files = grep(
            &ws,
            json!({"pattern": "x", "limit": 1, "output_mode": "files_with_matches"}),
        )
        .await
        .unwrap();
        assert!(
            files.starts_with("a.txt\n[stopped at the limit of 1 files"),
            "{files}"
        );
        let exact = grep(&ws, json!({"pattern": "x", "limit": 4}))
            .await
            .unwrap();
        assert!(!exact.contains("stopped"), "{exact}");
    }

    #[tokio::test]
    async fn many_files_keep_path_order_and_a_limit_cuts_inside_a_later_file() {
        let ws = Workspace::new();
        for n in 0..600 {
            ws.write(&format!("d{}/f{n:03}.txt", n % 7), "x\nx\nx\n");
        }
        let mut paths: Vec<String> = (0..600)
            .map(|n| format!("d{}/f{n:03}.txt", n % 7))
            .collect();
        paths.sort();
        let expected: Vec<String> = paths
            .iter()
            .flat_map(|path| (1..=3).map(move |line| format!("{path}:{line}:x")))
            .take(1000)
            .collect();
        let out = grep(&ws, json!({"pattern": "x", "limit": 1000}))
            .await
            .unwrap();
        let (lines, note) = out.split_at(out.find("\n[stopped").expect("a limit note"));
        assert_eq!(lines.lines().collect::<Vec<_>>(), expected);
        assert!(note.contains("limit of 1000 lines"), "{note}");
    }

    #[tokio::test]
    async fn long_lines_and_big_output_are_capped() {
        let ws = Workspace::new();
        let long_line = format!("{}needle{}\n", "a".repeat(5000), "b".repeat(5000));
        ws.write("min.js", long_line);
        let out = grep(&ws, json!({"pattern": "needle"})).await.unwrap();
        assert!(out.len() < LINE_CAP + 50, "{} bytes: {out}", out.len());
        assert!(
            out.starts_with("min.js:1:[...] aaa") && out.ends_with("bbb [...]"),
            "{out}"
        );
        assert!(
            out.contains(&format!("{}needle", "a".repeat(LINE_CAP / 5))),
            "{out}"
        );

        let line = format!("needle {}\n", "z".repeat(400));
        ws.write("many.txt", line.repeat(2000));
        let out = grep(
            &ws,
            json!({"pattern": "needle", "path": "many.txt", "limit": 2000}),
        )
        .await
        .unwrap();
        assert!(out.len() <= OUTPUT_CAP + 100, "{}", out.len());
        assert!(out.ends_with(
            "[output cut at 64 KiB; narrow the search with path, glob or a more specific pattern]"
        ));
    }

    #[test]
    fn a_file_keeps_no_more_than_the_output_can_show() {
        let ws = Workspace::new();
        let line = format!("needle {}\n", "z".repeat(400));
        ws.write("big.txt", line.repeat(2000));
        let query = Query::new(&GrepArgs {
            pattern: "needle".into(),
            path: None,
            glob: None,
            case_insensitive: false,
            context: 0,
            output_mode: OutputMode::Content,
            limit: Some(MAX_LIMIT),
        })
        .unwrap();
        let mut sink = FileSink::new("big.txt", &query, query.limit);
        query
            .searcher()
            .search_path(&query.matcher, ws.path("big.txt"), &mut sink)
            .unwrap();
        assert!(sink.cut);
        assert!(
            sink.bytes > OUTPUT_CAP,
            "the output is still cut where it was"
        );
        assert!(
            sink.bytes <= OUTPUT_CAP + LINE_CAP + 100,
            "{} bytes kept",
            sink.bytes
        );
    }

    #[tokio::test]
    async fn no_matches_says_what_was_skipped() {
        let ws = sample();
        let out = grep(&ws, json!({"pattern": "nothing-like-this"}))
            .await
            .unwrap();
        assert!(
            out.starts_with("No matches for `nothing-like-this` in `.`"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn invalid_regex_glob_and_arguments_are_invalid() {
        let ws = sample();
        let regex = grep(&ws, json!({"pattern": "fn (("})).await.unwrap_err();
        assert!(
            matches!(&regex, ToolError::InvalidArguments(m) if m.contains("invalid regex") && m.contains("unclosed group")),
            "{regex}"
        );
        let glob = grep(&ws, json!({"pattern": "fn", "glob": "[z-"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&glob, ToolError::InvalidArguments(m) if m.contains("invalid glob")),
            "{glob}"
        );
        for args in [
            json!({}),
            json!({"pattern": "x", "context": 11}),
            json!({"pattern": "x", "limit": 0}),
            json!({"pattern": "x", "output_mode": "lines"}),
            json!({"pattern": "x", "case_insensitive": 1}),
            json!({"pattern": "x", "-i": true}),
        ] {
            let err = grep(&ws, args.clone()).await.unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments(_)),
                "{args}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn a_cancelled_run_stops_the_search() {
        let ws = sample();
        ws.ctx.cancel.cancel();
        let err = grep(&ws, json!({"pattern": "parse"})).await.unwrap_err();
        assert_eq!(err, ToolError::Cancelled);
    }

    #[tokio::test]
    async fn missing_and_outside_paths_fail() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "parse").unwrap();
        let ws = sample();
        symlink(outside.path(), ws.path("escape")).unwrap();

        let denied = grep(&ws, json!({"pattern": "parse", "path": "escape"}))
            .await
            .unwrap_err();
        assert!(matches!(denied, ToolError::Denied(_)), "{denied}");
        // Walking the workspace does not follow the link out of it either.
        let out = grep(
            &ws,
            json!({"pattern": "parse", "output_mode": "files_with_matches"}),
        )
        .await
        .unwrap();
        assert!(!out.contains("secret"), "{out}");
        let missing = grep(&ws, json!({"pattern": "x", "path": "nope"}))
            .await
            .unwrap_err();
        assert!(matches!(missing, ToolError::Failed(_)), "{missing}");
    }
}
