//! The YAML front matter of a markdown file — the part between a first `---` line and the next
//! one — as specialist manifests (`tasks::manifest`) and skills (`skills`, `SKILL.md`) are
//! written. One reader for both, so both report a broken file the same way: the line in the
//! file, not in the YAML alone.

use serde::de::DeserializeOwned;

/// Why a file's front matter could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrontMatterError {
    /// The file does not start with a `---` line.
    #[error(
        "no front matter: the file must start with a `---` line, then YAML, then another `---` \
         line"
    )]
    Missing,
    /// No `---` line ends the front matter.
    #[error("the front matter never ends: add a `---` line after the YAML")]
    Unclosed,
    /// The front matter is not valid YAML, or a key has the wrong type.
    #[error("invalid front matter: {0}")]
    Yaml(#[from] yaml_serde::Error),
}

impl FrontMatterError {
    /// The line of the file the problem is on: the YAML parser's, or the first line for a
    /// file whose front matter is missing or never ends (where a reader looks first).
    pub(crate) fn line(&self) -> usize {
        match self {
            FrontMatterError::Yaml(error) => error.location().map_or(1, |at| at.line()),
            FrontMatterError::Missing | FrontMatterError::Unclosed => 1,
        }
    }
}

/// Splits `text` into its front matter and its body. The front matter keeps its opening
/// `---` (a YAML document marker), so the line numbers in YAML errors are the file's own. A
/// byte order mark and CRLF line ends are accepted.
pub(crate) fn split(text: &str) -> Result<(&str, &str), FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let opening = lines.next().ok_or(FrontMatterError::Missing)?;
    if opening.trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let mut end = opening.len();
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[..end], &text[end + line.len()..]));
        }
        end += line.len();
    }
    Err(FrontMatterError::Unclosed)
}

/// The front matter `front` (as [`split`] returns it) read as `T`; an empty one is
/// `T::default()`.
pub(crate) fn parse<T: DeserializeOwned + Default>(front: &str) -> Result<T, FrontMatterError> {
    Ok(yaml_serde::from_str::<Option<T>>(front)?.unwrap_or_default())
}

/// The line of the file on which the top-level key `key` of `front` is written, if it is: for
/// a value that is well-formed YAML but not what the reader accepts (a name with a capital),
/// which the YAML parser has no line for.
pub(crate) fn key_line(front: &str, key: &str) -> Option<usize> {
    front
        .lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize)]
    struct Front {
        name: Option<String>,
    }

    #[test]
    fn the_front_matter_and_the_body_are_split_at_the_dashes() {
        let (front, body) = split("\u{feff}---\r\nname: t\r\n---\r\nBody.\r\n").unwrap();
        assert_eq!(front, "---\r\nname: t\r\n");
        assert_eq!(body, "Body.\r\n");
        assert_eq!(parse::<Front>(front).unwrap().name.as_deref(), Some("t"));
        assert!(parse::<Front>("---\n").unwrap().name.is_none());
    }

    #[test]
    fn a_missing_or_unclosed_front_matter_points_at_the_first_line() {
        for (text, missing) in [("# Title\n", true), ("", true), ("---\nname: t\n", false)] {
            let error = split(text).unwrap_err();
            assert_eq!(
                matches!(error, FrontMatterError::Missing),
                missing,
                "{text}"
            );
            assert_eq!(error.line(), 1);
        }
    }

    #[test]
    fn yaml_errors_and_keys_have_the_files_line() {
        let (front, _) = split("---\nname: t\n  bad: indent\n---\n").unwrap();
        assert_eq!(parse::<Front>(front).unwrap_err().line(), 3);
        assert_eq!(key_line(front, "name"), Some(2));
        assert_eq!(key_line("---\nnames: x\nname : y\n", "name"), Some(3));
        assert_eq!(key_line(front, "description"), None);
    }
}
