//! How a `bash` rule meets one simple command of a line: the command pattern (`command_pattern`)
//! applied with the heuristics a deny list needs to see through the usual disguises — the
//! leading assignments, a command named by its path (`/bin/rm` is `rm`), wrappers that run the
//! rest of their words as a command (`env`, `timeout`, `xargs`, `find -exec`, …), and code handed
//! to a shell or an interpreter where the line does not show it as a command (`… | bash`,
//! `python3 -c`). An allow rule gets none of this: what it allows is exactly what it says.

use super::rule::{Effect, Pattern, Rule};
use super::shell::{self, SimpleCommand, Word};
use crate::command_pattern::CommandPattern;

/// Commands that run the rest of their arguments as another command: a deny rule is checked
/// against each tail of their words too (`env FOO=1 curl x`, `timeout 5 curl x`,
/// `xargs curl`, `find . -exec curl x ;`). Deny lists are a best effort; allow lists are the
/// sound way to limit commands.
const WRAPPERS: [&str; 22] = [
    "env", "nohup", "nice", "ionice", "timeout", "time", "xargs", "sudo", "doas", "su", "setsid",
    "stdbuf", "chroot", "unshare", "nsenter", "flock", "watch", "find", "parallel", "strace",
    "taskset", "busybox",
];

/// Whether a `bash` rule matches a command: an allow rule all of its words, a deny rule its
/// words with or without the leading assignments, with the command named by its path or by
/// its file name (`/bin/rm` is `rm`), or any tail of a wrapper's words.
pub(super) fn command_matches(rule: &Rule, command: &SimpleCommand) -> bool {
    let Pattern::Command(pattern) = &rule.pattern else {
        return true;
    };
    if rule.effect == Effect::Allow {
        return command.carrier || pattern.allows(&command.words);
    }
    let words = command.command();
    if pattern.may_match(&command.words) || may_match_named(pattern, words) {
        return true;
    }
    if runs_inline_code(words) {
        return true;
    }
    matches!(words.first(), Some(Word::Known(name)) if WRAPPERS.contains(&file_name(name)))
        && (1..words.len()).any(|start| may_match_named(pattern, &words[start..]))
}

/// Interpreters and the flags that hand them code to run on the command line.
const INLINE_CODE: [(&str, &[&str]); 9] = [
    ("python", &["-c"]),
    ("python3", &["-c"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("deno", &["eval"]),
    ("bun", &["-e", "--eval"]),
];

/// Whether the command (or the command a wrapper runs) hands code the line does not show as
/// a command to something that runs it: a shell reading its script from stdin (`… | bash`,
/// `bash <<< …`, `sh -s`, `sh -`), or an interpreter given code inline (`python3 -c`,
/// `node -e`, `perl -e`, …). What that code runs is unknown, so every deny rule on `bash` may
/// match it. (A script *file* is not looked into, by a shell or anything else: a deny list
/// is a best effort, an allow list is the sound way to limit commands.)
fn runs_inline_code(words: &[Word]) -> bool {
    let name_at = |at: usize| match words.get(at) {
        Some(Word::Known(name)) => Some(file_name(name)),
        _ => None,
    };
    let start = match name_at(0) {
        Some(name) if WRAPPERS.contains(&name) => (1..words.len())
            .find(|&at| name_at(at).is_some_and(runs_code))
            .unwrap_or(0),
        _ => 0,
    };
    let Some(name) = name_at(start) else {
        return false;
    };
    let args = &words[start + 1..];
    let known = |flag: &str| {
        args.iter()
            .any(|word| matches!(word, Word::Known(t) if t == flag))
    };
    if shell::SHELLS.contains(&name) {
        // Without a script operand (every argument an option), or told to read stdin.
        let operand = args
            .iter()
            .any(|word| !matches!(word, Word::Known(t) if t.starts_with('-')));
        return known("-s") || known("-") || !operand;
    }
    let Some((_, flags)) = INLINE_CODE
        .iter()
        .find(|(interpreter, _)| *interpreter == name)
    else {
        return false;
    };
    // The options before the first operand (`python3 tool.py -c x` runs a file: its `-c` is
    // the script's); an operand may itself be the subcommand that takes code (`deno eval`).
    for word in args {
        match word {
            Word::Known(text) if flags.contains(&text.as_str()) => return true,
            Word::Known(text) if text.starts_with('-') => continue,
            Word::Known(_) => return false,
            // Unknown until the line runs: it may be the flag that takes code.
            Word::Unknown => return true,
        }
    }
    false
}

/// Whether `name` is a shell or an interpreter that may run code given inline.
fn runs_code(name: &str) -> bool {
    shell::SHELLS.contains(&name)
        || INLINE_CODE
            .iter()
            .any(|(interpreter, _)| *interpreter == name)
}

/// Whether `pattern` may match `words`, their command named as written or by its file name.
fn may_match_named(pattern: &CommandPattern, words: &[Word]) -> bool {
    if pattern.may_match(words) {
        return true;
    }
    match words.first() {
        Some(Word::Known(name)) if file_name(name) != name => {
            let mut by_name = words.to_vec();
            by_name[0] = Word::Known(file_name(name).to_owned());
            pattern.may_match(&by_name)
        }
        _ => false,
    }
}

/// A command's file name: `rm` for `/bin/rm`.
fn file_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}
