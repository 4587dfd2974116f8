//! How a `bash` rule meets one simple command of a line (the commands `shell` found, a
//! wrapper's and a script's among them). An allow rule matches exactly what it says; a deny
//! rule also sees the usual other spellings of the same command: without the assignments
//! before it, named by its path or by its file name (`/bin/rm` is `rm`), and git's dashed
//! form (`/usr/lib/git-core/git-push` is `git push`).

use super::rule::{Effect, Pattern, Rule};
use super::shell::{SimpleCommand, Word, file_name};

/// Whether a `bash` rule matches a command: an allow rule all of its words (a carrier needs
/// none: what it carries is checked on its own), a deny rule any of its spellings.
pub(super) fn command_matches(rule: &Rule, command: &SimpleCommand) -> bool {
    let Pattern::Command(pattern) = &rule.pattern else {
        return true;
    };
    if rule.effect == Effect::Allow {
        return command.carrier || pattern.allows(&command.words);
    }
    pattern.may_match(&command.words)
        || spellings(command.command())
            .iter()
            .any(|words| pattern.may_match(words))
}

/// A command's words as written, by its file name, and in git's dashed form split in two.
fn spellings(words: &[Word]) -> Vec<Vec<Word>> {
    let mut spellings = vec![words.to_vec()];
    let Some(Word::Known(path)) = words.first() else {
        return spellings;
    };
    let name = file_name(path);
    if name != path {
        spellings.push([&[Word::Known(name.to_owned())], &words[1..]].concat());
    }
    if let Some(sub) = name.strip_prefix("git-").filter(|sub| !sub.is_empty()) {
        let git = [Word::Known("git".into()), Word::Known(sub.to_owned())];
        spellings.push([&git, &words[1..]].concat());
    }
    spellings
}
