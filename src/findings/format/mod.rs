//! The formats a review is written in, one module each: `text` for a person, `json` for a
//! script, `sarif` for code scanning, `github` for annotations on the pull request's diff,
//! `gitlab` for the merge request's Code Quality widget, `markdown` for a comment.
//!
//! Findings are the model's words, and the model read the change under review, so every
//! format treats them as hostile: each escapes them by its own rules (JSON by serde, workflow
//! commands by GitHub's, Markdown's fences and code spans by their length), so a finding can
//! never forge a record, a command or a comment's structure.

mod github;
mod gitlab;
mod json;
mod markdown;
mod sarif;
mod text;

use std::path::PathBuf;

use clap::ValueEnum;

use super::place::Report;

/// A format a review can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One block per finding for a person, then the summary.
    Text,
    /// `{"summary", "findings": [...]}`, each finding with its fingerprint.
    Json,
    /// SARIF 2.1.0, as GitHub code scanning uploads it.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`): annotations on the diff.
    Github,
    /// GitLab's Code Quality report (CodeClimate JSON).
    Gitlab,
    /// A pull-request comment.
    Markdown,
}

impl Format {
    /// `report` in this format.
    pub fn write(self, report: &Report) -> String {
        match self {
            Format::Text => text::write(report),
            Format::Json => json::write(report),
            Format::Sarif => sarif::write(report),
            Format::Github => github::write(report),
            Format::Gitlab => gitlab::write(report),
            Format::Markdown => markdown::write(report),
        }
    }
}

/// One `--format`: a format, and the file it goes to (stdout without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatTarget {
    /// The format.
    pub format: Format,
    /// `FORMAT=FILE`'s file.
    pub file: Option<PathBuf>,
}

impl FormatTarget {
    /// Parses `FORMAT` or `FORMAT=FILE` (clap's value parser for `--format`).
    pub fn parse(text: &str) -> Result<FormatTarget, String> {
        let (name, file) = match text.split_once('=') {
            Some((_, "")) => return Err(format!("`{text}` names no file after `=`")),
            Some((name, file)) => (name, Some(PathBuf::from(file))),
            None => (text, None),
        };
        let format = Format::from_str(name, false).map_err(|_| {
            let known: Vec<String> = Format::value_variants()
                .iter()
                .filter_map(|f| f.to_possible_value())
                .map(|v| v.get_name().to_string())
                .collect();
            format!("`{name}` is not a format (one of {})", known.join(", "))
        })?;
        Ok(FormatTarget { format, file })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::findings::{Answer, Category, Diff, Finding, Severity};

    /// A report with every field in use and hostile text in each: what a model that read
    /// a malicious change could answer.
    pub(crate) fn hostile_report() -> Report {
        let diff = "--- a/src/a b.rs\n+++ b/src/a b.rs\n@@ -1 +1,3 @@\n fn a() {}\n+let x = 1; // ::add-mask::x\n+\tlet y = 2;\n";
        let findings = vec![
            Finding {
                path: "src/a b.rs".into(),
                line: 2,
                end_line: Some(3),
                severity: Severity::Error,
                category: Category::Security,
                title: "Bad: %0A, :: and\n::set-output name=x::y".into(),
                body: "line one\r\n::add-mask::secret\n100% sure, a:b".into(),
                suggestion: Some("```\nlet x = 2;\n```".into()),
            },
            Finding {
                path: "src/a b.rs".into(),
                line: 1,
                end_line: None,
                severity: Severity::Note,
                category: Category::Correctness,
                title: "A `note`".into(),
                body: "fine".into(),
                suggestion: None,
            },
        ];
        let answer = Answer {
            summary: "Needs changes.\n::error::forged".into(),
            findings,
        };
        let (report, warnings) = Report::place(answer, &Diff::parse(diff).unwrap());
        assert!(warnings.is_empty(), "{warnings:?}");
        report
    }

    #[test]
    fn parses_a_format_and_its_file() {
        assert_eq!(
            FormatTarget::parse("sarif=out/r.sarif").unwrap(),
            FormatTarget {
                format: Format::Sarif,
                file: Some("out/r.sarif".into())
            }
        );
        assert_eq!(FormatTarget::parse("github").unwrap().file, None);
        let error = FormatTarget::parse("xml").unwrap_err();
        assert!(
            error.contains("text, json, sarif, github, gitlab, markdown"),
            "{error}"
        );
        assert!(FormatTarget::parse("json=").is_err());
    }

    #[test]
    fn every_format_writes_an_empty_review() {
        let report = Report {
            summary: "Looks good.".into(),
            findings: Vec::new(),
        };
        for format in Format::value_variants() {
            let written = format.write(&report);
            match format {
                Format::Github => assert_eq!(written, ""),
                _ => assert!(!written.is_empty(), "{format:?}"),
            }
        }
    }
}
