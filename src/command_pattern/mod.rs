//! A `bash` rule's command pattern, `cargo test *`, the words it is matched against, and how
//! it matches them: the one matcher both checks of a deny rule use — the line check (`rules`,
//! over the simple commands a line's parse finds) and the exec check (`runtime::guardian`,
//! over the argv of every program a command's tree executes, see `exec`).
//!
//! The pattern is split at white space into words. A lone `*` stands for any number of words
//! (none included), so `git diff *` matches `git diff` and `git diff --stat`; a word holding
//! `*` matches one word with anything in the starred places (`--target=*`); every other word
//! must equal the command's word, which is compared after quote removal. Claude Code's
//! prefix form `git diff:*` is read as `git diff *`.
//!
//! A word the command's own text cannot tell ([`Word::Unknown`]) is judged for the side that
//! keeps the caller safe: an allow pattern covers it only with a lone `*`, while a deny pattern
//! is taken to match it, standing for any number of any words.
//!
//! A deny pattern also matches with options put between its words: `git push *` denies
//! `git -C . push`, `git -c core.x=y push` and `git --no-pager push`, which run the same
//! subcommand. Between two of its words (after the command's name) a deny pattern skips any
//! run of option words (`-x`, `--long`, `--long=value`), each optionally followed by one
//! argument word. An allow pattern never does: what it allows is exactly what it says.

mod exec;

use std::fmt;

pub(crate) use self::exec::{DenyRule, Exec};

/// A word of a command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Word {
    /// Its text is known before the command runs.
    Known(String),
    /// Its text (and, unquoted, how many words it becomes) is known only when it runs.
    Unknown,
}

/// One word of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// `*`: any number of words.
    Any,
    /// A word with `*` in it: one word, its starred places anything.
    Glob(String),
    /// A word as it must be.
    Literal(String),
    /// Any run of options, each perhaps with one argument (only in a deny pattern's test).
    Options,
}

/// A command pattern, as a rule wrote it. It travels as its text (see [`fmt::Display`]), which
/// reads back as the same pattern: the exec check's guardian gets its rules that way.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub(crate) struct CommandPattern {
    /// The pieces as written: what an allow rule matches.
    pieces: Vec<Piece>,
    /// The same with [`Piece::Options`] between the words: what a deny rule matches. Made
    /// once, when the rule is read, not for every command checked.
    deny: Vec<Piece>,
}

impl CommandPattern {
    /// The pattern `text` describes; `None` when it has no words.
    pub(crate) fn parse(text: &str) -> Option<CommandPattern> {
        let text = match text.trim_end().strip_suffix(":*") {
            Some(prefix) => format!("{prefix} *"),
            None => text.to_owned(),
        };
        let pieces: Vec<Piece> = text
            .split_whitespace()
            .map(|word| match word {
                "*" => Piece::Any,
                glob if glob.contains('*') => Piece::Glob(glob.to_owned()),
                literal => Piece::Literal(literal.to_owned()),
            })
            .collect();
        (!pieces.is_empty()).then(|| CommandPattern {
            deny: options_between(&pieces),
            pieces,
        })
    }

    /// Whether the command `words` certainly match: an allow rule's test.
    pub(crate) fn allows(&self, words: &[Word]) -> bool {
        matches(&self.pieces, words, false)
    }

    /// Whether the command `words` may match, unknown words counted as matching and options
    /// allowed between the pattern's words: a deny rule's test.
    pub(crate) fn may_match(&self, words: &[Word]) -> bool {
        matches(&self.deny, words, true)
    }
}

impl fmt::Display for CommandPattern {
    /// The pattern's words, one space apart: what [`CommandPattern::parse`] reads back as it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, piece) in self.pieces.iter().enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            match piece {
                Piece::Any => f.write_str("*")?,
                Piece::Glob(text) | Piece::Literal(text) => f.write_str(text)?,
                // Only in the deny form, never among the pieces as written.
                Piece::Options => {}
            }
        }
        Ok(())
    }
}

impl From<CommandPattern> for String {
    fn from(pattern: CommandPattern) -> String {
        pattern.to_string()
    }
}

impl TryFrom<String> for CommandPattern {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        CommandPattern::parse(&text).ok_or_else(|| "an empty command pattern".to_owned())
    }
}

/// `pieces` with [`Piece::Options`] after the first word and between the words that follow
/// it (not next to a `*`, which takes options anyway).
fn options_between(pieces: &[Piece]) -> Vec<Piece> {
    let mut loosened = Vec::with_capacity(pieces.len() * 2);
    for (index, piece) in pieces.iter().enumerate() {
        let after_word = index > 0 && pieces[index - 1] != Piece::Any;
        if after_word && *piece != Piece::Any {
            loosened.push(Piece::Options);
        }
        loosened.push(piece.clone());
    }
    loosened
}

/// Wildcard matching of `pieces` against `words`, both sides' wildcards allowed (an unknown
/// word is one on the command's side when `unknown_matches`). Dynamic programming over
/// (piece, word) positions: linear in their product.
fn matches(pieces: &[Piece], words: &[Word], unknown_matches: bool) -> bool {
    let width = words.len() + 1;
    // reach[i * width + j]: pieces[i..] can match words[j..].
    let mut reach = vec![false; (pieces.len() + 1) * width];
    reach[pieces.len() * width + words.len()] = true;
    for i in (0..=pieces.len()).rev() {
        for j in (0..=words.len()).rev() {
            if i == pieces.len() && j == words.len() {
                continue;
            }
            let at = |i: usize, j: usize| reach[i * width + j];
            let mut ok = false;
            if i < pieces.len() && pieces[i] == Piece::Any {
                ok = at(i + 1, j) || (j < words.len() && at(i, j + 1));
            }
            if i < pieces.len() && pieces[i] == Piece::Options {
                // None, or an option (and perhaps its argument) and then more.
                ok = at(i + 1, j)
                    || (j < words.len()
                        && is_option(&words[j], unknown_matches)
                        && (at(i, j + 1) || (j + 1 < words.len() && at(i, j + 2))));
            }
            if !ok && j < words.len() && words[j] == Word::Unknown && unknown_matches {
                ok = at(i, j + 1) || (i < pieces.len() && at(i + 1, j));
            }
            if !ok && i < pieces.len() && j < words.len() {
                ok = piece_matches(&pieces[i], &words[j], unknown_matches) && at(i + 1, j + 1);
            }
            reach[i * width + j] = ok;
        }
    }
    reach[0]
}

/// Whether `word` is an option (`-x`, `--long`): a word unknown until the command runs may be
/// one when `unknown_matches`.
fn is_option(word: &Word, unknown_matches: bool) -> bool {
    match word {
        Word::Known(text) => text.starts_with('-') && text.len() > 1,
        Word::Unknown => unknown_matches,
    }
}

/// Whether one piece matches one word.
fn piece_matches(piece: &Piece, word: &Word, unknown_matches: bool) -> bool {
    match (piece, word) {
        (Piece::Any, _) => true,
        (Piece::Options, _) => false,
        (_, Word::Unknown) => unknown_matches,
        (Piece::Literal(literal), Word::Known(text)) => literal == text,
        (Piece::Glob(glob), Word::Known(text)) => glob_matches(glob, text),
    }
}

/// Whether `text` matches `glob`, whose only wildcard is `*` (any characters).
fn glob_matches(glob: &str, text: &str) -> bool {
    let mut parts = glob.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The pattern a caller could allow for a command it was refused: its name, and its second
/// word when that is a subcommand (`git push *`), then `*`.
pub(crate) fn suggestion(words: &[Word]) -> Option<String> {
    let Some(Word::Known(name)) = words.first() else {
        return None;
    };
    let shell_word = |text: &str| {
        !text.is_empty()
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@+,".contains(&b))
    };
    if !shell_word(name) {
        return None;
    }
    match words.get(1) {
        Some(Word::Known(sub)) if !sub.starts_with('-') && shell_word(sub) => {
            Some(format!("{name} {sub} *"))
        }
        _ => Some(format!("{name} *")),
    }
}

/// `text`'s words as a test writes them: each word split at whitespace known, `?` one the
/// analysis could not know.
#[cfg(test)]
pub(crate) fn words(text: &str) -> Vec<Word> {
    text.split_whitespace()
        .map(|w| match w {
            "?" => Word::Unknown,
            w => Word::Known(w.to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> CommandPattern {
        CommandPattern::parse(text).unwrap()
    }

    #[test]
    fn a_trailing_star_is_a_prefix_and_claudes_colon_star_means_the_same() {
        for text in ["git diff *", "git diff:*"] {
            let p = pattern(text);
            assert!(p.allows(&words("git diff")), "{text}");
            assert!(p.allows(&words("git diff --stat HEAD")), "{text}");
            assert!(!p.allows(&words("git difftool")), "{text}");
            assert!(!p.allows(&words("git")), "{text}");
            assert_eq!(p, pattern("git diff *"));
        }
        let exact = pattern("npm run test");
        assert!(exact.allows(&words("npm run test")));
        assert!(!exact.allows(&words("npm run test --watch")));
    }

    #[test]
    fn stars_inside_words_and_between_them() {
        let p = pattern("cargo * --target=*-linux-*");
        assert!(p.allows(&words("cargo build --release --target=x86_64-linux-gnu")));
        assert!(!p.allows(&words("cargo build --target=x86_64-darwin")));
        assert!(glob_matches("a*b*c", "aXbYc"));
        assert!(!glob_matches("a*b", "ab-"));
        assert!(glob_matches("*", ""));
        assert!(!glob_matches("ab*ba", "aba"));
    }

    #[test]
    fn unknown_words_are_allowed_only_by_a_lone_star_and_always_may_be_denied() {
        assert!(pattern("cargo test *").allows(&words("cargo test ?")));
        assert!(!pattern("cargo test").allows(&words("cargo ?")));
        assert!(!pattern("git *").allows(&words("? push")));
        assert!(!pattern("echo a*").allows(&words("echo ?")));
        // `git $(echo push) origin` may be `git push origin`; `$X` may be `git push`.
        assert!(pattern("git push *").may_match(&words("git ? origin")));
        assert!(pattern("git push *").may_match(&words("? origin")));
        assert!(!pattern("git push *").may_match(&words("git status ?")));
        assert!(!pattern("curl *").may_match(&words("git status")));
    }

    #[test]
    fn a_deny_pattern_sees_through_options_between_its_words_and_an_allow_pattern_does_not() {
        let push = pattern("git push *");
        for denied in [
            "git push",
            "git -C . push origin main",
            "git -c core.sshCommand=x push",
            "git --no-pager push",
            "git --git-dir=.git --work-tree . push -f",
            "git -C ? push",
        ] {
            assert!(push.may_match(&words(denied)), "{denied}");
        }
        for other in [
            "git status",
            "git log --grep=push",
            "git stash push",
            "gitx push",
        ] {
            assert!(!push.may_match(&words(other)), "{other}");
        }
        assert!(!push.allows(&words("git -C . push")));
        assert!(
            pattern("npm run deploy").may_match(&words("npm --silent run --if-present deploy"))
        );
        assert!(!pattern("npm run deploy").may_match(&words("npm run test deploy")));
    }

    #[test]
    fn a_pattern_reads_back_from_its_text() {
        for text in [
            "git push *",
            "cargo * --target=*-linux-*",
            "git diff:*",
            "ls",
        ] {
            let written = pattern(text);
            assert_eq!(pattern(&written.to_string()), written, "{text}");
            let json = serde_json::to_string(&written).unwrap();
            assert_eq!(
                serde_json::from_str::<CommandPattern>(&json).unwrap(),
                written
            );
        }
        assert!(serde_json::from_str::<CommandPattern>("\"  \"").is_err());
    }

    #[test]
    fn the_suggestion_names_the_command_and_its_subcommand() {
        assert_eq!(suggestion(&words("ls -la")), Some("ls *".into()));
        assert_eq!(
            suggestion(&words("git push origin")),
            Some("git push *".into())
        );
        assert_eq!(suggestion(&words("? push")), None);
        assert_eq!(suggestion(&words("it's")), None);
    }
}
