//! Applying an Update File's hunks to a file's text, in memory.
//!
//! Hunks are located in order by their context and `-` lines: each is searched for after the
//! previous one, exactly first and then ignoring trailing whitespace (the most common way a
//! model's quote drifts from the file). Lines the patch does not change keep their exact bytes,
//! including their line endings; inserted lines take the file's own line ending, and whether the
//! file ends with a newline is preserved.

use std::fmt;

use super::parse::{Hunk, HunkLine};

/// A hunk that could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HunkError {
    /// 1-based position of the hunk in its file section.
    pub(crate) hunk: usize,
    /// The hunk's `@@` text, to name it in the message.
    pub(crate) header: Option<String>,
    /// What did not match.
    pub(crate) failure: Failure,
}

/// Why a hunk could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// The `@@` line's text is not in the file from this line (1-based) on.
    HeaderNotFound { from_line: usize },
    /// The context and `-` lines are not in the file, in this order, from this line on.
    LinesNotFound {
        from_line: usize,
        expected: Vec<String>,
    },
}

impl fmt::Display for HunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hunk {}", self.hunk)?;
        if let Some(header) = &self.header {
            write!(f, " (`@@ {header}`)")?;
        }
        match &self.failure {
            Failure::HeaderNotFound { from_line } => write!(
                f,
                " failed: no line from line {from_line} on matches its `@@` text"
            ),
            Failure::LinesNotFound {
                from_line,
                expected,
            } => write!(
                f,
                " failed: these context and `-` lines are not in the file from line {from_line} \
                 on (hunks must be in file order, and their lines must match the file \
                 exactly, apart from trailing whitespace):\n{}",
                expected.join("\n")
            ),
        }
    }
}

/// One line of the original text: its content and the line ending that followed it (`""` for
/// a last line without one).
struct Line<'a> {
    text: &'a str,
    ending: &'a str,
}

/// Applies `hunks` in order to `original` and returns the new text.
pub(super) fn apply_hunks(original: &str, hunks: &[Hunk]) -> Result<String, HunkError> {
    let lines = split_lines(original);
    let mut placements = Vec::with_capacity(hunks.len());
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let fail = |failure| HunkError {
            hunk: index + 1,
            header: hunk.header.clone(),
            failure,
        };
        if let Some(header) = &hunk.header {
            let found = lines[cursor..]
                .iter()
                .position(|l| l.text.trim() == header.trim());
            cursor += 1 + found.ok_or_else(|| {
                fail(Failure::HeaderNotFound {
                    from_line: cursor + 1,
                })
            })?;
        }
        let expected: Vec<&str> = hunk.lines.iter().filter_map(expected_text).collect();
        let start = if expected.is_empty() {
            // Nothing to match: a pure insertion goes at the end of the file.
            lines.len()
        } else {
            locate(&lines, &expected, cursor, hunk.at_eof).ok_or_else(|| {
                fail(Failure::LinesNotFound {
                    from_line: cursor + 1,
                    expected: quoted(hunk),
                })
            })?
        };
        placements.push((start, hunk));
        cursor = start + expected.len();
    }
    Ok(rebuild(original, &lines, &placements))
}

/// Splits `text` into lines with their endings; an empty text has no lines.
fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (line, tail) = match rest.find('\n') {
            Some(i) => rest.split_at(i + 1),
            None => (rest, ""),
        };
        let body = line
            .strip_suffix('\n')
            .map_or(line, |l| l.strip_suffix('\r').unwrap_or(l));
        lines.push(Line {
            text: body,
            ending: &line[body.len()..],
        });
        rest = tail;
    }
    lines
}

/// The file text a hunk line expects to find, if any.
fn expected_text(line: &HunkLine) -> Option<&str> {
    match line {
        HunkLine::Context(text) | HunkLine::Remove(text) => Some(text),
        HunkLine::Add(_) => None,
    }
}

/// The hunk's expected lines as the patch wrote them, for an error message.
fn quoted(hunk: &Hunk) -> Vec<String> {
    hunk.lines
        .iter()
        .filter_map(|line| match line {
            HunkLine::Context(text) => Some(format!(" {text}")),
            HunkLine::Remove(text) => Some(format!("-{text}")),
            HunkLine::Add(_) => None,
        })
        .collect()
}

/// Where `expected` occurs in `lines` at or after `from`: exactly if possible, else ignoring
/// trailing whitespace. A hunk marked end-of-file tries the end of the file first.
fn locate(lines: &[Line<'_>], expected: &[&str], from: usize, at_eof: bool) -> Option<usize> {
    let exact: fn(&str, &str) -> bool = |a, b| a == b;
    let loose: fn(&str, &str) -> bool = |a, b| a.trim_end() == b.trim_end();
    let last_start = lines.len().checked_sub(expected.len())?;
    let matches_at = |start: usize, same: fn(&str, &str) -> bool| {
        lines[start..start + expected.len()]
            .iter()
            .zip(expected)
            .all(|(line, want)| same(line.text, want))
    };
    [exact, loose].into_iter().find_map(|same| {
        let at_end =
            (at_eof && last_start >= from && matches_at(last_start, same)).then_some(last_start);
        at_end.or_else(|| (from..=last_start).find(|&start| matches_at(start, same)))
    })
}

/// Writes the new text: untouched and context lines as they were, removed lines dropped,
/// added lines with the file's line ending, and the final newline as it was.
fn rebuild(original: &str, lines: &[Line<'_>], placements: &[(usize, &Hunk)]) -> String {
    let default_ending = lines
        .iter()
        .map(|l| l.ending)
        .find(|e| !e.is_empty())
        .unwrap_or("\n");
    let mut kept: Vec<(&str, &str)> = Vec::new();
    let mut next = 0;
    for &(start, hunk) in placements {
        kept.extend(lines[next..start].iter().map(|l| (l.text, l.ending)));
        let mut at = start;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    kept.push((lines[at].text, lines[at].ending));
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(text) => kept.push((text, default_ending)),
            }
        }
        next = at;
    }
    kept.extend(lines[next..].iter().map(|l| (l.text, l.ending)));

    let ends_with_newline = original.is_empty() || original.ends_with('\n');
    let mut text = String::with_capacity(original.len());
    for (i, (line, ending)) in kept.iter().enumerate() {
        text.push_str(line);
        let last = i + 1 == kept.len();
        // A line that was last (no ending) but is no longer last needs one now.
        match (last, ending.is_empty()) {
            (true, _) if !ends_with_newline => {}
            (_, true) => text.push_str(default_ending),
            (_, false) => text.push_str(ending),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::patch::parse::FileOp;
    use crate::tools::patch::parse::parse;
    use proptest::prelude::*;

    /// Applies the hunks of a patch with a single Update File section.
    fn apply(original: &str, body: &str) -> Result<String, HunkError> {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch");
        match parse(&patch).unwrap().remove(0) {
            FileOp::Update { hunks, .. } => apply_hunks(original, &hunks),
            op => panic!("{op:?}"),
        }
    }

    #[test]
    fn replaces_lines_found_by_context() {
        let out = apply("a\nb\nc\nd\n", "@@\n b\n-c\n+C\n+C2\n d").unwrap();
        assert_eq!(out, "a\nb\nC\nC2\nd\n");
    }

    #[test]
    fn hunks_apply_in_order_and_the_header_narrows_the_search() {
        let file = "fn a() {\n    x\n}\nfn b() {\n    x\n}\n";
        let out = apply(file, "@@ fn b() {\n-    x\n+    y").unwrap();
        assert_eq!(out, "fn a() {\n    x\n}\nfn b() {\n    y\n}\n");
        let both = apply(file, "@@\n-    x\n+    1\n@@\n-    x\n+    2").unwrap();
        assert_eq!(both, "fn a() {\n    1\n}\nfn b() {\n    2\n}\n");
    }

    #[test]
    fn trailing_whitespace_is_tolerated_and_context_keeps_the_files_bytes() {
        let out = apply("keep  \nold\n", "@@\n keep\n-old \n+new").unwrap();
        assert_eq!(out, "keep  \nnew\n");
    }

    #[test]
    fn line_endings_and_missing_final_newline_are_preserved() {
        assert_eq!(
            apply("a\r\nb\r\n", "@@\n a\n-b\n+c\n+d").unwrap(),
            "a\r\nc\r\nd\r\n"
        );
        assert_eq!(apply("a\nb", "@@\n-b\n+c").unwrap(), "a\nc");
        assert_eq!(apply("a\nb", "@@\n b\n+c").unwrap(), "a\nb\nc");
        assert_eq!(apply("", "@@\n+first").unwrap(), "first\n");
    }

    #[test]
    fn pure_insertion_appends_and_end_of_file_prefers_the_end() {
        assert_eq!(apply("a\n", "@@\n+b").unwrap(), "a\nb\n");
        let out = apply("x\ny\nx\n", "@@\n-x\n+z\n*** End of File").unwrap();
        assert_eq!(out, "x\ny\nz\n");
    }

    #[test]
    fn failures_name_the_hunk_and_show_the_expected_lines() {
        let err = apply("a\nb\n", "@@\n-a\n+A\n@@ fn missing\n-b\n+B").unwrap_err();
        assert_eq!(err.hunk, 2);
        assert_eq!(err.failure, Failure::HeaderNotFound { from_line: 2 });

        let err = apply("a\nb\n", "@@\n-b\n+B\n@@\n a\n-x\n+y").unwrap_err();
        assert_eq!(
            err.failure,
            Failure::LinesNotFound {
                from_line: 3,
                expected: vec![" a".into(), "-x".into()]
            }
        );
        assert!(
            err.to_string()
                .starts_with("hunk 2 failed: these context and `-` lines"),
            "{err}"
        );
    }

    proptest! {
        /// A single-hunk replacement with up to three lines of context, as a model would write
        /// it, applies to the generated file and yields exactly the expected content.
        #[test]
        fn single_hunk_replacement_round_trips(
            bodies in proptest::collection::vec("[ -~]{0,8}", 1..30),
            range in (0usize..30, 0usize..5),
            replacement in proptest::collection::vec("[ -~]{0,8}", 0..5),
            final_newline in any::<bool>(),
        ) {
            // Numbered lines are unique, so the context identifies one place.
            let lines: Vec<String> = bodies.iter().enumerate().map(|(i, b)| format!("{i}:{b}")).collect();
            let start = range.0 % lines.len();
            let end = (start + range.1).min(lines.len());
            prop_assume!(end > start || !replacement.is_empty());
            let join = |ls: &[String]| {
                let mut text = ls.join("\n");
                if final_newline && !ls.is_empty() { text.push('\n'); }
                text
            };
            let before = &lines[start.saturating_sub(3)..start];
            let after = &lines[end..(end + 3).min(lines.len())];
            let mut hunk_lines: Vec<HunkLine> = before.iter().cloned().map(HunkLine::Context).collect();
            hunk_lines.extend(lines[start..end].iter().cloned().map(HunkLine::Remove));
            hunk_lines.extend(replacement.iter().cloned().map(HunkLine::Add));
            hunk_lines.extend(after.iter().cloned().map(HunkLine::Context));
            let hunk = Hunk { header: None, lines: hunk_lines, at_eof: false };
            let mut expected = lines[..start].to_vec();
            expected.extend(replacement.iter().cloned());
            expected.extend(lines[end..].iter().cloned());
            // An insertion with no context at all goes at the end, by definition.
            prop_assume!(!before.is_empty() || !after.is_empty() || end > start);

            let out = apply_hunks(&join(&lines), &[hunk]).unwrap();
            prop_assert_eq!(out, join(&expected));
        }
    }
}
