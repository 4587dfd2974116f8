//! The options of a command, read as its own option parser reads them (getopt: clusters of
//! single letters, `--long`, `--long=value` and unambiguous prefixes of long options, `--`
//! ending them), so the rules know where a command's operands start — for a wrapper, where
//! the command it runs starts.
//!
//! An option the spec does not name is not guessed at: whether it takes an argument decides
//! where everything after it begins, so reading stops with the reason instead.

use super::Word;

/// The options one command takes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    /// Single-letter options without an argument.
    pub(super) flags: &'static str,
    /// Single-letter options with an argument (the rest of the cluster, or the next word).
    pub(super) with_arg: &'static str,
    /// Single-letter options whose argument may only be attached (`xargs -i{}`).
    pub(super) attached: &'static str,
    /// Long options without an argument (an attached `=value` is taken too: an optional one).
    pub(super) long_flags: &'static [&'static str],
    /// Long options with an argument (`--name=value`, or the next word).
    pub(super) long_with_arg: &'static [&'static str],
    /// Whether `-10` (digits alone) is an option, as `nice` reads it.
    pub(super) numeric: bool,
    /// Whether `+x` is an option too (`declare +x`, `sh +o`).
    pub(super) plus: bool,
    /// Whether options may follow operands (GNU's permutation, as `tee` has it); otherwise
    /// the first operand ends them, as every wrapper's parser does (`+` in its getopt string).
    pub(super) permute: bool,
}

impl Spec {
    /// No options at all: the base every spec is written from.
    pub(super) const EMPTY: Spec = Spec {
        flags: "",
        with_arg: "",
        attached: "",
        long_flags: &[],
        long_with_arg: &[],
        numeric: false,
        plus: false,
        permute: false,
    };
}

/// One option as read: its name (`c`, or `--long` for a long one) and its argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opt {
    /// The letter, or the long name with its `--`.
    pub(super) name: String,
    /// The argument, when it takes one (attached text is a known word of its own).
    pub(super) arg: Option<Word>,
}

/// A command's words, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Read {
    /// Every option, in order.
    pub(super) options: Vec<Opt>,
    /// The indices of the operands, in order.
    pub(super) operands: Vec<usize>,
}

impl Read {
    /// Whether an option named `name` (a letter, or `--long`) was given.
    pub(super) fn has(&self, name: &str) -> bool {
        self.options.iter().any(|opt| opt.name == name)
    }

    /// The argument of the last option named one of `names`.
    pub(super) fn arg(&self, names: &[&str]) -> Option<&Word> {
        self.options
            .iter()
            .rev()
            .find(|opt| names.contains(&opt.name.as_str()))
            .and_then(|opt| opt.arg.as_ref())
    }

    /// The index of the first operand, or `len` when there is none.
    pub(super) fn first_operand(&self, len: usize) -> usize {
        self.operands.first().copied().unwrap_or(len)
    }
}

/// Reads `words` (a command's arguments, its name left out) by `spec`; the error says why
/// they cannot be read: an option the spec does not name, or a word known only as the line
/// runs where an option may stand (it may be any option, or several).
pub(super) fn read(words: &[Word], spec: &Spec) -> Result<Read, String> {
    let mut read = Read::default();
    let mut at = 0;
    let mut ended = false;
    while at < words.len() {
        let text = match &words[at] {
            Word::Known(text) => text.as_str(),
            Word::Unknown if ended || (!spec.permute && !read.operands.is_empty()) => {
                read.operands.push(at);
                at += 1;
                continue;
            }
            Word::Unknown => {
                return Err(
                    "is given a word known only as the line runs where an option may stand".into(),
                );
            }
        };
        if ended || !is_option(text, spec) {
            read.operands.push(at);
            if !spec.permute {
                ended = true;
            }
            at += 1;
            continue;
        }
        if text == "--" {
            ended = true;
            at += 1;
            continue;
        }
        at = if let Some(long) = text.strip_prefix("--") {
            long_option(words, at, long, spec, &mut read)?
        } else {
            cluster(words, at, text, spec, &mut read)?
        };
    }
    Ok(read)
}

/// Whether `text` is an option by `spec`.
fn is_option(text: &str, spec: &Spec) -> bool {
    let dash = text.starts_with('-') || (spec.plus && text.starts_with('+'));
    dash && text.len() > 1
}

/// A `--long` option at `at`; the index after it (and its argument).
fn long_option(
    words: &[Word],
    at: usize,
    long: &str,
    spec: &Spec,
    read: &mut Read,
) -> Result<usize, String> {
    let (name, attached) = match long.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (long, None),
    };
    let known = |list: &[&'static str]| -> Vec<&'static str> {
        match list.iter().find(|option| **option == name) {
            Some(exact) => vec![*exact],
            None => list
                .iter()
                .copied()
                .filter(|option| option.starts_with(name))
                .collect(),
        }
    };
    let flags = known(spec.long_flags);
    let with_arg = known(spec.long_with_arg);
    let (full, takes) = match (flags.as_slice(), with_arg.as_slice()) {
        ([flag], []) => (*flag, false),
        ([], [option]) => (*option, true),
        _ => {
            return Err(format!(
                "is given the option `--{name}`, which the rules do not know"
            ));
        }
    };
    let mut next = at + 1;
    let arg =
        match (takes, attached) {
            (_, Some(value)) => Some(Word::Known(value.to_owned())),
            (true, None) => {
                next += 1;
                Some(words.get(at + 1).cloned().ok_or_else(|| {
                    format!("is given the option `--{full}` without its argument")
                })?)
            }
            (false, None) => None,
        };
    read.options.push(option(format!("--{full}"), arg));
    Ok(next)
}

/// A cluster of single-letter options (`-abc`, `-n5`, `+x`) at `at`; the index after it.
fn cluster(
    words: &[Word],
    at: usize,
    text: &str,
    spec: &Spec,
    read: &mut Read,
) -> Result<usize, String> {
    let letters = &text[1..];
    if spec.numeric && letters.bytes().all(|b| b.is_ascii_digit()) {
        read.options.push(option(letters.to_owned(), None));
        return Ok(at + 1);
    }
    for (offset, letter) in letters.char_indices() {
        let rest = &letters[offset + letter.len_utf8()..];
        let name = letter.to_string();
        if spec.with_arg.contains(letter) {
            if !rest.is_empty() {
                read.options
                    .push(option(name, Some(Word::Known(rest.to_owned()))));
                return Ok(at + 1);
            }
            let arg = words
                .get(at + 1)
                .cloned()
                .ok_or_else(|| format!("is given the option `-{letter}` without its argument"))?;
            read.options.push(option(name, Some(arg)));
            return Ok(at + 2);
        }
        if spec.attached.contains(letter) {
            let arg = (!rest.is_empty()).then(|| Word::Known(rest.to_owned()));
            read.options.push(option(name, arg));
            return Ok(at + 1);
        }
        if !spec.flags.contains(letter) {
            return Err(format!(
                "is given the option `{}{letter}`, which the rules do not know",
                &text[..1]
            ));
        }
        read.options.push(option(name, None));
    }
    Ok(at + 1)
}

fn option(name: String, arg: Option<Word>) -> Opt {
    Opt { name, arg }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_pattern::words;

    const TIMEOUT: Spec = Spec {
        flags: "fpv",
        with_arg: "ks",
        long_flags: &["foreground", "preserve-status", "verbose"],
        long_with_arg: &["kill-after", "signal"],
        ..Spec::EMPTY
    };

    #[test]
    fn options_are_read_as_getopt_reads_them() {
        let args = words("-vk 5 --sig KILL --kill-after=3 -- 60 cmd -x");
        let parsed = read(&args, &TIMEOUT).unwrap();
        let names: Vec<&str> = parsed.options.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["v", "k", "--signal", "--kill-after"]);
        assert_eq!(parsed.arg(&["k"]), Some(&Word::Known("5".into())));
        assert_eq!(parsed.first_operand(args.len()), 6);
        assert_eq!(parsed.operands.len(), 3);
        let attached = read(&words("-s9 60"), &TIMEOUT).unwrap();
        assert_eq!(attached.arg(&["s"]), Some(&Word::Known("9".into())));
    }

    #[test]
    fn what_the_spec_does_not_name_stops_the_reading() {
        for args in ["-x 60 cmd", "--frob 60", "--sig", "? 60 cmd", "-k"] {
            let args = words(args);
            assert!(read(&args, &TIMEOUT).is_err(), "{args:?}");
        }
        // An ambiguous prefix is refused; one that names one option is that option.
        let spec = Spec {
            long_flags: &["verbose", "version"],
            ..Spec::EMPTY
        };
        assert!(read(&words("--ver"), &spec).is_err());
        assert!(read(&words("--verb"), &spec).unwrap().has("--verbose"));
        let tee = Spec {
            flags: "a",
            permute: true,
            ..Spec::EMPTY
        };
        let parsed = read(&words("f -a g"), &tee).unwrap();
        assert!(parsed.has("a"));
        assert_eq!(parsed.operands, [0, 2]);
    }
}
