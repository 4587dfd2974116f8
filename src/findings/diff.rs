//! A reader of unified diffs (`git diff`'s, and `diff -u`'s): which files a diff changes and
//! which lines of their new versions it shows, with the text of each — the places a finding
//! may be reported at, and the code its fingerprint is taken from.
//!
//! Written here rather than taken from a crate: what a review needs is the `+++` names and
//! the hunks' new-side lines, which the format states exactly (a hunk header counts its
//! lines), while the patch crates (`diffy`, `patch`, `unidiff`) are built to apply patches
//! and refuse or misread git's extended headers (renames, modes, binary files, quoted names).
//! Every line is accounted for by the counts, so a malformed hunk is an error naming its line,
//! never a guess; so are a hunk before its file's `---`/`+++` headers and text that holds no
//! diff at all (a review of it would pass with nothing reviewed). Empty input is an empty diff.

/// The largest diff a review reads: 10 MiB, far beyond what a model can review in one run
/// (a 2,000-line change is about 100 KiB), and small enough that a runaway diff (a generated
/// file, a vendored tree) is refused before anything is sent.
pub const MAX_DIFF_BYTES: usize = 10 * 1024 * 1024;

/// Why a diff cannot be reviewed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    /// Larger than [`MAX_DIFF_BYTES`].
    #[error(
        "the diff is larger than {} MiB ({bytes} bytes or more); review a smaller change \
         (a narrower --base, one --commit) or leave generated and vendored files out of it",
        MAX_DIFF_BYTES / (1024 * 1024)
    )]
    TooLarge {
        /// How many bytes were seen (at least).
        bytes: usize,
    },
    /// A hunk whose lines do not match its header.
    #[error("the diff is malformed at line {line}: {reason}")]
    Malformed {
        /// The 1-based line of the diff.
        line: usize,
        /// What is wrong there.
        reason: String,
    },
}

/// One run of a file's new-side lines that the diff shows (context and added lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The new-side number of its first line.
    pub start: u32,
    /// The text of each line, in order, without its newline.
    pub lines: Vec<String>,
}

impl Hunk {
    /// The new-side number of its last line (`start - 1` when it shows none).
    pub fn end(&self) -> u32 {
        (self.start + self.lines.len() as u32).saturating_sub(1)
    }

    /// Whether it shows new-side line `line`.
    pub fn shows(&self, line: u32) -> bool {
        !self.lines.is_empty() && (self.start..=self.end()).contains(&line)
    }

    /// The text of the new-side lines `first..=last`, which it must show.
    pub fn text(&self, first: u32, last: u32) -> &[String] {
        &self.lines[(first - self.start) as usize..=(last - self.start) as usize]
    }
}

/// A file the diff changes, with a new version (a deleted file has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Its path relative to the repository's root (git's `b/` taken off).
    pub path: String,
    /// The lines of its new version the diff shows.
    pub hunks: Vec<Hunk>,
}

impl ChangedFile {
    /// The hunk that shows new-side line `line`.
    pub fn hunk_at(&self, line: u32) -> Option<&Hunk> {
        self.hunks.iter().find(|hunk| hunk.shows(line))
    }
}

/// What a diff changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    files: Vec<ChangedFile>,
    refused: Vec<String>,
}

impl Diff {
    /// Reads `text`. See the module documentation.
    pub fn parse(text: &str) -> Result<Diff, DiffError> {
        if text.len() > MAX_DIFF_BYTES {
            return Err(DiffError::TooLarge { bytes: text.len() });
        }
        let mut reader = Reader::default();
        for (index, line) in text.split_inclusive('\n').enumerate() {
            let line = line.strip_suffix('\n').unwrap_or(line);
            if reader.first_text.is_none() && !line.trim().is_empty() {
                reader.first_text = Some((index + 1, line.to_string()));
            }
            reader.line(line).map_err(|reason| DiffError::Malformed {
                line: index + 1,
                reason,
            })?;
        }
        reader.finish(text.split_inclusive('\n').count())
    }

    /// The changed files that have a new version, in the diff's order.
    pub fn files(&self) -> &[ChangedFile] {
        &self.files
    }

    /// The changed file at `path`.
    pub fn file(&self, path: &str) -> Option<&ChangedFile> {
        self.files.iter().find(|file| file.path == path)
    }

    /// The names of files the diff changes that are left out of the review because their
    /// paths are not safe to report ([`check_path`]), each quoted as Rust quotes a string.
    pub fn refused(&self) -> &[String] {
        &self.refused
    }

    /// The diff's text lines a review may report on: the lines its hunks show.
    pub fn shown_lines(&self) -> usize {
        self.files
            .iter()
            .flat_map(|file| &file.hunks)
            .map(|hunk| hunk.lines.len())
            .sum()
    }
}

/// Whether `path` is one a finding may be reported at: relative, inside the repository, one
/// line of plain text. Annotations, SARIF and Code Quality put the path where a newline or a
/// control character would end a record or forge another, and `..` or `/…` would point
/// outside the change.
pub fn check_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("it is empty");
    }
    if path.chars().any(char::is_control) {
        return Err("it contains a newline or another control character");
    }
    if path.starts_with('/') {
        return Err("it is absolute");
    }
    if path.split('/').any(|part| part == "..") {
        return Err("it has a `..` component");
    }
    Ok(())
}

/// The reading state, one line at a time.
#[derive(Default)]
struct Reader {
    diff: Diff,
    /// Inside a `diff --git` section (so names carry git's `a/` and `b/`).
    git: bool,
    /// The `---` name of the file being read.
    old: Option<String>,
    /// Past a `+++` line: the hunks that follow belong to a file (which `current` holds,
    /// unless it was deleted or refused).
    in_file: bool,
    /// Whether any file header (`diff --git`, `---`, `+++`) has been read.
    headers_seen: bool,
    /// The first line that is not blank, with its 1-based number, for the error of an input
    /// that holds no diff at all.
    first_text: Option<(usize, String)>,
    /// The file whose hunks are being read; `None` for a deleted or refused one.
    current: Option<ChangedFile>,
    /// Lines of the current hunk still to come, old side and new side.
    remaining: (u32, u32),
}

impl Reader {
    fn line(&mut self, line: &str) -> Result<(), String> {
        if self.remaining != (0, 0) {
            return self.hunk_line(line);
        }
        if line.starts_with("diff --git ") {
            self.end_file();
            self.git = true;
            self.old = None;
            self.headers_seen = true;
        } else if let Some(name) = line.strip_prefix("--- ") {
            self.end_file();
            self.old = Some(file_name(name)?);
            self.headers_seen = true;
        } else if let Some(name) = line.strip_prefix("+++ ") {
            self.new_file(&file_name(name)?);
            self.in_file = true;
            self.headers_seen = true;
        } else if line.starts_with("@@ ") {
            if !self.in_file {
                return Err(format!(
                    "the hunk `{}` has no file header before it (`--- a/PATH` then `+++ b/PATH`), \
                     so the file it changes is unknown",
                    shown(line)
                ));
            }
            self.hunk_header(line)?;
        }
        // Anything else between hunks is a header git or a person adds (index, mode, rename,
        // "Binary files … differ", a commit message): not a place a finding can be.
        Ok(())
    }

    fn new_file(&mut self, name: &str) {
        self.end_file();
        if name == "/dev/null" {
            return;
        }
        let prefixed = self.git || self.old.as_deref().is_some_and(|old| old.starts_with("a/"));
        let path = match (prefixed, name.strip_prefix("b/")) {
            (true, Some(path)) => path,
            _ => name,
        };
        match check_path(path) {
            Ok(()) => {
                self.current = Some(ChangedFile {
                    path: path.to_string(),
                    hunks: Vec::new(),
                })
            }
            Err(_) => self.diff.refused.push(format!("{path:?}")),
        }
    }

    fn hunk_header(&mut self, line: &str) -> Result<(), String> {
        let bad = || format!("`{}` is not a hunk header (@@ -L,N +L,N @@)", shown(line));
        let mut words = line.split(' ').skip(1);
        let (old, new) = (words.next().ok_or_else(bad)?, words.next().ok_or_else(bad)?);
        let (_, old_count) = range(old.strip_prefix('-').ok_or_else(bad)?).ok_or_else(bad)?;
        let (start, new_count) = range(new.strip_prefix('+').ok_or_else(bad)?).ok_or_else(bad)?;
        if words.next() != Some("@@") {
            return Err(bad());
        }
        self.remaining = (old_count, new_count);
        if let Some(file) = &mut self.current {
            file.hunks.push(Hunk {
                start,
                lines: Vec::new(),
            });
        }
        Ok(())
    }

    fn hunk_line(&mut self, line: &str) -> Result<(), String> {
        let (old, new) = match line.chars().next() {
            // A context line whose single space an editor or a mail client took off.
            None => (1, 1),
            Some(' ') => (1, 1),
            Some('+') => (0, 1),
            Some('-') => (1, 0),
            Some('\\') => return Ok(()), // "\ No newline at end of file"
            Some(_) => {
                return Err(format!(
                    "the hunk ends early: {} old and {} new lines were still to come, and \
                     `{}` is not one",
                    self.remaining.0,
                    self.remaining.1,
                    shown(line)
                ));
            }
        };
        if old > self.remaining.0 || new > self.remaining.1 {
            return Err(format!(
                "`{}` is more lines than the hunk header counts",
                shown(line)
            ));
        }
        self.remaining = (self.remaining.0 - old, self.remaining.1 - new);
        if new == 1
            && let Some(hunk) = self.current.as_mut().and_then(|f| f.hunks.last_mut())
        {
            hunk.lines.push(line.get(1..).unwrap_or("").to_string());
        }
        Ok(())
    }

    fn end_file(&mut self) {
        self.in_file = false;
        if let Some(file) = self.current.take() {
            self.diff.files.push(file);
        }
    }

    fn finish(mut self, lines: usize) -> Result<Diff, DiffError> {
        if let (false, Some((line, text))) = (self.headers_seen, &self.first_text) {
            return Err(DiffError::Malformed {
                line: *line,
                reason: format!(
                    "`{}` is not a unified diff: it holds no file header (`diff --git`, \
                     `--- a/PATH`, `+++ b/PATH`) and no hunk",
                    shown(text)
                ),
            });
        }
        if self.remaining != (0, 0) {
            return Err(DiffError::Malformed {
                line: lines,
                reason: format!(
                    "the diff ends inside a hunk ({} old and {} new lines were still to come)",
                    self.remaining.0, self.remaining.1
                ),
            });
        }
        self.end_file();
        Ok(self.diff)
    }
}

/// `L` or `L,N` of a hunk header: the first line and the count (1 when left out).
fn range(text: &str) -> Option<(u32, u32)> {
    match text.split_once(',') {
        Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
        None => Some((text.parse().ok()?, 1)),
    }
}

/// The file name of a `---`/`+++` line: git's C-quoted form unquoted, else the text before a
/// tab (`diff -u` puts a timestamp there).
fn file_name(text: &str) -> Result<String, String> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    match text.strip_prefix('"') {
        Some(quoted) => unquote(quoted),
        None => Ok(text.split('\t').next().unwrap_or(text).to_string()),
    }
}

/// Undoes git's quoting of a name (`core.quotePath`): C escapes and octal bytes, up to the
/// closing quote.
fn unquote(quoted: &str) -> Result<String, String> {
    let bad = || format!("`\"{}` is not a quoted file name", shown(quoted));
    let mut bytes = Vec::new();
    let mut chars = quoted.bytes();
    loop {
        match chars.next().ok_or_else(bad)? {
            b'"' => break,
            b'\\' => {
                let escaped = chars.next().ok_or_else(bad)?;
                bytes.push(match escaped {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'r' => b'\r',
                    b'0'..=b'3' => {
                        let digits = [
                            escaped,
                            chars.next().ok_or_else(bad)?,
                            chars.next().ok_or_else(bad)?,
                        ];
                        let octal = std::str::from_utf8(&digits).map_err(|_| bad())?;
                        u8::from_str_radix(octal, 8).map_err(|_| bad())?
                    }
                    other => other,
                });
            }
            byte => bytes.push(byte),
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A diff line as an error message shows it: one line, at most 80 characters.
fn shown(line: &str) -> String {
    let one_line: String = line.chars().take(80).collect();
    one_line.escape_debug().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIT_DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,4 @@
 fn one() {}
-fn two() {}
+fn two() { todo!() }
+fn three() {}
 fn four() {}
@@ -10,2 +11,2 @@ fn ten() {
 a
-b
+c
diff --git a/gone.rs b/gone.rs
deleted file mode 100644
--- a/gone.rs
+++ /dev/null
@@ -1 +0,0 @@
-fn gone() {}
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+--- not a header
\\ No newline at end of file
";

    #[test]
    fn reads_files_and_new_side_lines() {
        let diff = Diff::parse(GIT_DIFF).unwrap();
        let paths: Vec<&str> = diff.files().iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["src/lib.rs", "new.txt"]);
        let lib = diff.file("src/lib.rs").unwrap();
        assert_eq!(lib.hunks[0].start, 1);
        assert_eq!(
            lib.hunks[0].lines,
            [
                "fn one() {}",
                "fn two() { todo!() }",
                "fn three() {}",
                "fn four() {}"
            ]
        );
        assert_eq!(lib.hunks[1].start, 11);
        assert_eq!(lib.hunks[1].end(), 12);
        assert!(lib.hunk_at(5).is_none());
        assert_eq!(lib.hunk_at(12).unwrap().text(12, 12), ["c"]);
        assert_eq!(
            diff.file("new.txt").unwrap().hunks[0].lines,
            ["--- not a header"]
        );
        assert_eq!(diff.shown_lines(), 7);
    }

    #[test]
    fn reads_plain_diff_u_names() {
        let text = "--- old/a.c\t2024-01-01\n+++ a.c\t2024-01-02\n@@ -1 +1 @@\n-x\n+y\n";
        let diff = Diff::parse(text).unwrap();
        assert_eq!(diff.files()[0].path, "a.c");
    }

    #[test]
    fn unsafe_names_are_refused_not_reviewed() {
        let text = "\
diff --git \"a/x\\nb\" \"b/x\\nb\"
--- \"a/x\\nb\"
+++ \"b/x\\nb\"
@@ -1 +1 @@
-x
+y
--- a/../etc/passwd
+++ b/../etc/passwd
@@ -1 +1 @@
-x
+y
--- /abs
+++ /abs
@@ -1 +1 @@
-x
+y
--- a/caf\\303\\251
+++ \"b/caf\\303\\251\"
@@ -1 +1 @@
-x
+y
";
        let diff = Diff::parse(text).unwrap();
        assert_eq!(
            diff.refused(),
            ["\"x\\nb\"", "\"../etc/passwd\"", "\"/abs\""]
        );
        assert_eq!(diff.files()[0].path, "café");
    }

    #[test]
    fn a_hunk_that_does_not_match_its_header_is_an_error() {
        let short = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n";
        assert!(matches!(
            Diff::parse(short),
            Err(DiffError::Malformed { line: 4, .. })
        ));
        let stray = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\nzzz\n";
        let error = Diff::parse(stray).unwrap_err().to_string();
        assert!(error.contains("line 5") && error.contains("zzz"), "{error}");
        let header = "--- a/x\n+++ b/x\n@@ -1,x +1 @@\n";
        assert!(
            Diff::parse(header)
                .unwrap_err()
                .to_string()
                .contains("hunk header")
        );
    }

    #[test]
    fn text_that_is_not_a_diff_is_an_error_and_an_empty_one_is_not() {
        let error = Diff::parse("not a diff\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the diff is malformed at line 1: `not a diff` is not a unified diff: it holds no \
             file header (`diff --git`, `--- a/PATH`, `+++ b/PATH`) and no hunk"
        );
        let error = Diff::parse("\n\n  \nhello\nworld\n").unwrap_err();
        assert!(
            matches!(error, DiffError::Malformed { line: 4, .. }),
            "{error}"
        );
        for empty in ["", "\n", "  \n\n"] {
            assert_eq!(Diff::parse(empty).unwrap().shown_lines(), 0, "{empty:?}");
        }
        // Headers without hunks (a mode change, a binary file) are a diff that shows nothing.
        let mode = "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n";
        assert_eq!(Diff::parse(mode).unwrap().shown_lines(), 0);
    }

    #[test]
    fn a_hunk_without_file_headers_is_an_error() {
        for text in [
            "@@ -1 +1 @@\n-x\n+y\n",
            "commit abc\n\n@@ -1 +1 @@\n-x\n+y\n",
            // The `---` alone names the old side only.
            "--- a/x\n@@ -1 +1 @@\n-x\n+y\n",
            // After a file's hunks, a new `---` starts another file, whose `+++` is missing.
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x\n+y\n--- a/z\n@@ -1 +1 @@\n-x\n+y\n",
        ] {
            let error = Diff::parse(text).unwrap_err().to_string();
            assert!(
                error.contains("has no file header before it"),
                "{text:?}: {error}"
            );
        }
        let error = Diff::parse("@@ -1 +1 @@\n-x\n+y\n").unwrap_err();
        assert!(
            matches!(error, DiffError::Malformed { line: 1, .. }),
            "{error}"
        );
        // A deleted file's hunks belong to it, though it has no new side.
        let deleted = "--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
        assert!(Diff::parse(deleted).unwrap().files().is_empty());
    }

    #[test]
    fn a_diff_over_the_bound_is_refused() {
        let big = "+".repeat(MAX_DIFF_BYTES + 1);
        let error = Diff::parse(&big).unwrap_err();
        assert!(matches!(error, DiffError::TooLarge { .. }));
        assert!(error.to_string().contains("10 MiB"), "{error}");
    }

    #[test]
    fn checks_paths() {
        assert!(check_path("src/a b.rs").is_ok());
        for bad in [
            "",
            "a\nb",
            "a\0b",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a\rb",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }
}
