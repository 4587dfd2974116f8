//! Parsing the `*** Begin Patch` envelope into file operations (grammar: `docs/PATCH.md`).
//!
//! The whole patch is parsed before anything is read or written, so a malformed patch never
//! half-applies. Errors carry the 1-based line number in the patch text.

use std::fmt;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// One file operation, as the patch wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FileOp {
    /// Create a file that must not exist yet.
    Add { path: String, contents: String },
    /// Delete a file that must exist.
    Delete { path: String },
    /// Change an existing file by hunks, and optionally rename it.
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

impl FileOp {
    /// The path the operation starts from.
    pub(super) fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path } | FileOp::Update { path, .. } => {
                path
            }
        }
    }
}

/// One change within an updated file: lines to find (context and removals, in order) and what
/// replaces them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hunk {
    /// The text after `@@`: a line (compared without surrounding whitespace) that must come
    /// before the change, such as the enclosing function's signature.
    pub(crate) header: Option<String>,
    /// The hunk's lines in order.
    pub(crate) lines: Vec<HunkLine>,
    /// Marked `*** End of File`: the lines are looked for at the end of the file first.
    pub(crate) at_eof: bool,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HunkLine {
    /// ` text`: must be in the file, and stays.
    Context(String),
    /// `-text`: must be in the file, and goes.
    Remove(String),
    /// `+text`: is inserted.
    Add(String),
}

/// Where and why the patch text is malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParseError {
    /// 1-based line in the patch text.
    pub(crate) line: usize,
    /// What is wrong there, and what was expected.
    pub(crate) message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Parses a whole patch.
pub(super) fn parse(patch: &str) -> Result<Vec<FileOp>, ParseError> {
    Parser {
        lines: patch.lines().collect(),
        pos: 0,
    }
    .patch()
}

/// A cursor over the patch's lines.
struct Parser<'a> {
    lines: Vec<&'a str>,
    /// Index of the next line to read.
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.pos).copied()
    }

    /// An error at the line under the cursor (or just past the last line).
    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            line: self.pos + 1,
            message: message.into(),
        }
    }

    fn skip_blank_lines(&mut self) {
        while self.peek().is_some_and(str::is_empty) {
            self.pos += 1;
        }
    }

    /// Whether the cursor is at the end of a section: only blank lines stand between it and the
    /// next `***` or `@@` line, or the end of the text. Those blank lines are skipped, so that
    /// blank lines separating sections are not read as empty lines of content.
    fn at_section_end(&mut self) -> bool {
        let next = self.lines[self.pos..]
            .iter()
            .position(|line| !line.is_empty());
        let ends = next.is_none_or(|i| {
            let line = self.lines[self.pos + i];
            line.starts_with("***") || line.starts_with("@@")
        });
        if ends {
            self.pos = next.map_or(self.lines.len(), |i| self.pos + i);
        }
        ends
    }

    /// `patch = "*** Begin Patch" { file-op } "*** End Patch"`, blank lines allowed around it.
    fn patch(mut self) -> Result<Vec<FileOp>, ParseError> {
        self.skip_blank_lines();
        if self.peek().map(str::trim_end) != Some(BEGIN) {
            return Err(self.error(format!("the patch must start with `{BEGIN}`")));
        }
        self.pos += 1;
        let mut ops = Vec::new();
        loop {
            self.skip_blank_lines();
            match self.peek().map(str::trim_end) {
                None => return Err(self.error(format!("the patch must end with `{END}`"))),
                Some(END) if ops.is_empty() => {
                    return Err(self.error("the patch contains no file operations"));
                }
                Some(END) => break,
                Some(_) => ops.push(self.file_op()?),
            }
        }
        self.pos += 1;
        self.skip_blank_lines();
        if self.peek().is_some() {
            return Err(self.error(format!("unexpected text after `{END}`")));
        }
        Ok(ops)
    }

    /// One `*** Add File`, `*** Delete File` or `*** Update File` section.
    fn file_op(&mut self) -> Result<FileOp, ParseError> {
        let line = self.peek().unwrap_or_default();
        if let Some(path) = line.strip_prefix(ADD) {
            let path = self.path(path)?;
            Ok(FileOp::Add {
                contents: self.added_lines(&path)?,
                path,
            })
        } else if let Some(path) = line.strip_prefix(DELETE) {
            Ok(FileOp::Delete {
                path: self.path(path)?,
            })
        } else if let Some(path) = line.strip_prefix(UPDATE) {
            let path = self.path(path)?;
            let move_to = match self.peek().and_then(|l| l.strip_prefix(MOVE)) {
                Some(dest) => Some(self.path(dest)?),
                None => None,
            };
            let hunks = self.hunks(&path)?;
            if hunks.is_empty() && move_to.is_none() {
                return Err(self.error(format!(
                    "`{UPDATE}{path}` has no hunks; start each change with an `@@` line"
                )));
            }
            Ok(FileOp::Update {
                path,
                move_to,
                hunks,
            })
        } else {
            Err(self.error(format!(
                "expected `{ADD}`, `{DELETE}`, `{UPDATE}` or `{END}`, found `{line}`"
            )))
        }
    }

    /// The path at the end of a section header line; consumes the line.
    fn path(&mut self, raw: &str) -> Result<String, ParseError> {
        let path = raw.trim();
        if path.is_empty() {
            return Err(self.error("the file path is missing"));
        }
        self.pos += 1;
        Ok(path.to_string())
    }

    /// The `+` lines of an Add File section, as file contents (each line ends with `\n`).
    fn added_lines(&mut self, path: &str) -> Result<String, ParseError> {
        let mut contents = String::new();
        while !self.at_section_end() {
            let line = self.peek().unwrap_or_default();
            let text = match line.strip_prefix('+') {
                Some(text) => text,
                None if line.is_empty() => "",
                None => {
                    return Err(self.error(format!(
                        "every line of `{ADD}{path}` must start with `+` (a lone `+` is an \
                         empty line)"
                    )));
                }
            };
            contents.push_str(text);
            contents.push('\n');
            self.pos += 1;
        }
        Ok(contents)
    }

    /// The hunks of an Update File section, up to the next section.
    fn hunks(&mut self, path: &str) -> Result<Vec<Hunk>, ParseError> {
        let mut hunks = Vec::new();
        while !self.at_section_end() || self.peek().is_some_and(|l| l.starts_with("@@")) {
            let hunk = self.hunk(path, hunks.is_empty())?;
            hunks.push(hunk);
        }
        Ok(hunks)
    }

    /// One hunk: an `@@` line (optional for a file's first hunk), its lines, and an optional
    /// `*** End of File`.
    fn hunk(&mut self, path: &str, first: bool) -> Result<Hunk, ParseError> {
        let start = self.pos + 1;
        let header = match self.peek() {
            Some(line) if line.starts_with("@@") => {
                self.pos += 1;
                hunk_header(line)
            }
            _ if first => None,
            _ => return Err(self.error("expected `@@` to start the next hunk")),
        };
        let mut lines = Vec::new();
        while !self.at_section_end() {
            let line = self.peek().unwrap_or_default();
            let mut chars = line.chars();
            let marker = chars.next();
            let text = chars.as_str().to_string();
            lines.push(match marker {
                // A blank line inside a hunk stands for an empty context line.
                None | Some(' ') => HunkLine::Context(text),
                Some('-') => HunkLine::Remove(text),
                Some('+') => HunkLine::Add(text),
                Some(_) => {
                    return Err(self.error(format!(
                        "in `{UPDATE}{path}`, every hunk line must start with ` ` (context), \
                         `-` (remove) or `+` (add); found `{line}`"
                    )));
                }
            });
            self.pos += 1;
        }
        if lines.iter().all(|l| matches!(l, HunkLine::Context(_))) {
            return Err(ParseError {
                line: start,
                message: format!("a hunk of `{UPDATE}{path}` has no `-` or `+` lines"),
            });
        }
        let at_eof = self.peek().map(str::trim_end) == Some(END_OF_FILE);
        if at_eof {
            self.pos += 1;
        }
        Ok(Hunk {
            header,
            lines,
            at_eof,
        })
    }
}

/// The context text of an `@@` line, if it has any. A unified-diff range (`@@ -12,5 +12,6 @@`)
/// locates nothing by content, so it is dropped and only the text after it is kept.
fn hunk_header(line: &str) -> Option<String> {
    let text = line.trim_start_matches('@').trim();
    let text = match text.split_once("@@") {
        Some((range, rest)) if is_line_range(range) => rest.trim(),
        _ => text,
    };
    (!text.is_empty()).then(|| text.to_string())
}

/// Whether `text` is a unified-diff range such as `-12,5 +12,6`.
fn is_line_range(text: &str) -> bool {
    let numbers = |s: &str| !s.is_empty() && s.split(',').all(|n| n.parse::<u64>().is_ok());
    let mut parts = text.split_whitespace();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(old), Some(new), None) => {
            old.strip_prefix('-').is_some_and(numbers) && new.strip_prefix('+').is_some_and(numbers)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Writes `ops` back out as patch text; the inverse of [`parse`] for well-formed ops.
    fn render(ops: &[FileOp]) -> String {
        let mut out = format!("{BEGIN}\n");
        for op in ops {
            match op {
                FileOp::Add { path, contents } => {
                    out += &format!("{ADD}{path}\n");
                    for line in contents.lines() {
                        out += &format!("+{line}\n");
                    }
                }
                FileOp::Delete { path } => out += &format!("{DELETE}{path}\n"),
                FileOp::Update {
                    path,
                    move_to,
                    hunks,
                } => {
                    out += &format!("{UPDATE}{path}\n");
                    if let Some(dest) = move_to {
                        out += &format!("{MOVE}{dest}\n");
                    }
                    for hunk in hunks {
                        out += &match &hunk.header {
                            Some(header) => format!("@@ {header}\n"),
                            None => "@@\n".to_string(),
                        };
                        for line in &hunk.lines {
                            out += &match line {
                                HunkLine::Context(t) => format!(" {t}\n"),
                                HunkLine::Remove(t) => format!("-{t}\n"),
                                HunkLine::Add(t) => format!("+{t}\n"),
                            };
                        }
                        if hunk.at_eof {
                            out += &format!("{END_OF_FILE}\n");
                        }
                    }
                }
            }
        }
        out + END + "\n"
    }

    fn context(t: &str) -> HunkLine {
        HunkLine::Context(t.into())
    }

    #[test]
    fn parses_every_kind_of_operation() {
        let patch = "\
*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Delete File: old.txt
*** Update File: src/lib.rs
*** Move to: src/core.rs
@@ fn main() {
     let x = 1;
-    let y = 2;
+    let y = 3;
@@
-last
+final
*** End of File
*** End Patch
";
        let ops = parse(patch).unwrap();
        assert_eq!(
            ops,
            vec![
                FileOp::Add {
                    path: "docs/new.md".into(),
                    contents: "# Title\n\nbody\n".into()
                },
                FileOp::Delete {
                    path: "old.txt".into()
                },
                FileOp::Update {
                    path: "src/lib.rs".into(),
                    move_to: Some("src/core.rs".into()),
                    hunks: vec![
                        Hunk {
                            header: Some("fn main() {".into()),
                            lines: vec![
                                context("    let x = 1;"),
                                HunkLine::Remove("    let y = 2;".into()),
                                HunkLine::Add("    let y = 3;".into()),
                            ],
                            at_eof: false,
                        },
                        Hunk {
                            header: None,
                            lines: vec![
                                HunkLine::Remove("last".into()),
                                HunkLine::Add("final".into())
                            ],
                            at_eof: true,
                        },
                    ],
                },
            ]
        );
        assert_eq!(parse(&render(&ops)).unwrap(), ops);
    }

    #[test]
    fn first_hunk_may_omit_the_at_line_and_blank_lines_are_empty_context() {
        let patch = "*** Begin Patch\n*** Update File: a\n a\n\n-b\n+c\n\n*** End Patch";
        let ops = parse(patch).unwrap();
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!("{ops:?}")
        };
        // The blank line between ` a` and `-b` is content; the one before `***` separates.
        assert_eq!(
            hunks[0].lines,
            vec![
                context("a"),
                context(""),
                HunkLine::Remove("b".into()),
                HunkLine::Add("c".into())
            ]
        );
    }

    #[test]
    fn unified_diff_ranges_are_not_taken_as_context() {
        assert_eq!(hunk_header("@@ -12,5 +12,6 @@"), None);
        assert_eq!(
            hunk_header("@@ -1 +1 @@ fn main()"),
            Some("fn main()".into())
        );
        assert_eq!(hunk_header("@@ impl Foo {"), Some("impl Foo {".into()));
        assert_eq!(hunk_header("@@"), None);
    }

    #[test]
    fn malformed_patches_say_where_and_why() {
        let cases = [
            (
                "*** Update File: a\n-x\n*** End Patch",
                1,
                "must start with `*** Begin Patch`",
            ),
            (
                "*** Begin Patch\n*** Delete File: a\n",
                3,
                "must end with `*** End Patch`",
            ),
            (
                "*** Begin Patch\n*** Frobnicate: a\n*** End Patch",
                2,
                "expected `*** Add File: `",
            ),
            (
                "*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch",
                3,
                "must start with `+`",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n x\n*** End Patch",
                3,
                "no `-` or `+` lines",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n-x\n?y\n*** End Patch",
                5,
                "found `?y`",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End Patch",
                3,
                "has no hunks",
            ),
            (
                "*** Begin Patch\n*** Delete File:   \n*** End Patch",
                2,
                "path is missing",
            ),
            ("*** Begin Patch\n*** End Patch", 2, "no file operations"),
            (
                "*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore",
                4,
                "after `*** End Patch`",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End of File\n z\n*** End Patch",
                6,
                "expected `@@`",
            ),
        ];
        for (patch, line, message) in cases {
            let err = parse(patch).unwrap_err();
            assert_eq!(err.line, line, "{patch:?}: {err}");
            assert!(err.message.contains(message), "{patch:?}: {err}");
        }
    }

    /// A line of text as a hunk or file may hold (no line breaks).
    fn text() -> impl Strategy<Value = String> {
        "[ -~]{0,12}"
    }

    fn path() -> impl Strategy<Value = String> {
        "[a-z]{1,6}(/[a-z]{1,6}){0,2}\\.[a-z]{1,3}"
    }

    fn hunk() -> impl Strategy<Value = Hunk> {
        let line = prop_oneof![
            text().prop_map(HunkLine::Context),
            text().prop_map(HunkLine::Remove),
            text().prop_map(HunkLine::Add),
        ];
        (
            proptest::option::of("[a-zA-Z][a-zA-Z0-9 (){}]{0,10}[a-zA-Z0-9(){}]"),
            proptest::collection::vec(line, 0..6),
            text(),
            any::<bool>(),
        )
            .prop_map(|(header, mut lines, removed, at_eof)| {
                lines.push(HunkLine::Remove(removed));
                Hunk {
                    header,
                    lines,
                    at_eof,
                }
            })
    }

    fn file_op() -> impl Strategy<Value = FileOp> {
        prop_oneof![
            (path(), proptest::collection::vec(text(), 0..5)).prop_map(|(path, lines)| {
                FileOp::Add {
                    path,
                    contents: lines.iter().map(|l| format!("{l}\n")).collect(),
                }
            }),
            path().prop_map(|path| FileOp::Delete { path }),
            (
                path(),
                proptest::option::of(path()),
                proptest::collection::vec(hunk(), 1..4)
            )
                .prop_map(|(path, move_to, hunks)| FileOp::Update {
                    path,
                    move_to,
                    hunks
                }),
        ]
    }

    proptest! {
        #[test]
        fn rendered_ops_parse_back_to_themselves(ops in proptest::collection::vec(file_op(), 1..5)) {
            prop_assert_eq!(parse(&render(&ops)).unwrap(), ops);
        }
    }
}
