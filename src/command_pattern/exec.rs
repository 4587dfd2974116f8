//! How a deny rule meets a program as `execve(2)` starts it: the exec check's side of the
//! matcher (`runtime::guardian` reads the path and the argv of every exec of a command's tree
//! and asks [`Exec::refused_by`]).
//!
//! At exec there is no line to read and nothing unknown about the words: a program is its
//! path and its argv. Each exec is matched as itself: a wrapper (`timeout`, `env`, `nice`,
//! `xargs`, `find -exec`, a shell, an interpreter, a script) execs the program it runs, and
//! that exec is checked in its turn, so none of the line check's heuristics for wrappers and
//! inline code apply here. What does:
//! - the program's name is the file name of the path exec was given and of `argv[0]`, each
//!   tried: `/usr/bin/git` run with `argv[0]` `x` is `git`, and so is a link named `x` to git
//!   run as `git`;
//! - a program named `git-SUB` (`/usr/lib/git-core/git-push`, which git runs as `git SUB`) is
//!   `git SUB`;
//! - a git command line whose subcommand may be an alias is unknown to every deny rule naming
//!   git (fail closed): an alias runs inside git, with no exec to check, so `git -c
//!   alias.p=push p` — or `p` defined in a config file or `GIT_CONFIG_*` — must not pass as
//!   `git p`. A subcommand is taken for what it says only when it is one of git's own
//!   commands (git never lets an alias hide one of those);
//! - an argv the guardian could read only in part ends with an unknown word, which a deny
//!   pattern takes to match any number of words.

use super::{CommandPattern, Word};

/// One deny rule on commands as the exec check holds it: the rule as written, which a
/// refusal names, and its pattern.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct DenyRule {
    /// The rule as written (`bash(git push *)`, `Bash(git push:*)`).
    pub(crate) rule: String,
    /// What it matches.
    pub(crate) pattern: CommandPattern,
}

/// A program as exec starts it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exec<'a> {
    /// The path exec was given (`execve`'s first argument; for `execveat` the file it names).
    pub(crate) path: &'a [u8],
    /// Its argv, `argv[0]` first.
    pub(crate) argv: &'a [Vec<u8>],
    /// Whether the argv was read only in part: more words follow that are not known.
    pub(crate) cut: bool,
}

impl Exec<'_> {
    /// The first of `rules` that refuses this program, if one does.
    pub(crate) fn refused_by<'r>(&self, rules: &'r [DenyRule]) -> Option<&'r DenyRule> {
        let readings = self.readings();
        rules
            .iter()
            .find(|rule| readings.iter().any(|words| rule.pattern.may_match(words)))
    }

    /// The words of the program, one reading for each name it goes by (see the module
    /// documentation).
    fn readings(&self) -> Vec<Vec<Word>> {
        let mut names: Vec<String> = Vec::with_capacity(2);
        let given = [Some(self.path), self.argv.first().map(Vec::as_slice)];
        for name in given.into_iter().flatten().filter(|name| !name.is_empty()) {
            let name = text(file_name(name));
            if !names.contains(&name) {
                names.push(name);
            }
        }
        if names.is_empty() {
            // Nothing names the program: it may be anything.
            return vec![vec![Word::Unknown]];
        }
        let args = self.argv.iter().skip(1).map(|arg| Word::Known(text(arg)));
        names
            .into_iter()
            .map(|name| {
                let mut words = match name.strip_prefix("git-").filter(|sub| !sub.is_empty()) {
                    Some(sub) => vec![Word::Known("git".into()), Word::Known(sub.into())],
                    None => vec![Word::Known(name)],
                };
                words.extend(args.clone());
                let mut words = git_reading(words);
                if self.cut {
                    words.push(Word::Unknown);
                }
                words
            })
            .collect()
    }
}

/// A word's bytes as text (a byte that is not UTF-8 becomes U+FFFD, which no pattern a rule
/// can usefully write contains).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The file name of a path: `git` for `/usr/bin/git`.
fn file_name(path: &[u8]) -> &[u8] {
    path.rsplit(|byte| *byte == b'/').next().unwrap_or(path)
}

/// git's options before the subcommand that take the next word as their value.
const GIT_VALUED: [&str; 8] = [
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--attr-source",
];

/// git's own commands (`git --list-cmds=main` of git 2.47, and `lfs`, whose `git-lfs` program
/// git would run before it looked for an alias): a subcommand that is none of them may be an
/// alias.
const GIT_COMMANDS: [&str; 172] = [
    "add",
    "am",
    "annotate",
    "apply",
    "archimport",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout--worker",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-cache--daemon",
    "credential-store",
    "cvsexportcommit",
    "cvsimport",
    "cvsserver",
    "daemon",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "difftool--helper",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "fsmonitor--daemon",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "hook",
    "http-backend",
    "http-fetch",
    "http-push",
    "imap-send",
    "index-pack",
    "init",
    "init-db",
    "instaweb",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-octopus",
    "merge-one-file",
    "merge-ours",
    "merge-recursive",
    "merge-recursive-ours",
    "merge-recursive-theirs",
    "merge-resolve",
    "merge-subtree",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "p4",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "pickaxe",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "quiltimport",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "remote-ext",
    "remote-fd",
    "remote-ftp",
    "remote-ftps",
    "remote-http",
    "remote-https",
    "repack",
    "replace",
    "replay",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-email",
    "send-pack",
    "sh-i18n--envsubst",
    "shell",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "submodule--helper",
    "svn",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-archive--writer",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "web--browse",
    "whatchanged",
    "worktree",
    "write-tree",
    "lfs",
];

/// `words` when they are not git's or git's subcommand is certain; else `git` and one unknown
/// word: an alias set on the command line (`-c alias.X=…`, `--config-env alias.X=…`), or a
/// subcommand that is not one of git's own commands and so may be an alias from anywhere.
fn git_reading(words: Vec<Word>) -> Vec<Word> {
    if !matches!(words.first(), Some(Word::Known(name)) if name == "git") {
        return words;
    }
    let known = |at: usize| match words.get(at) {
        Some(Word::Known(word)) => Some(word.as_str()),
        _ => None,
    };
    let sets_alias = |value: Option<&str>| {
        value.is_some_and(|value| value.to_ascii_lowercase().starts_with("alias."))
    };
    let mut at = 1;
    let mut certain = true;
    while let Some(word) = known(at) {
        if GIT_VALUED.contains(&word) {
            certain &= !(matches!(word, "-c" | "--config-env") && sets_alias(known(at + 1)));
            at += 2;
        } else if let Some(value) = word.strip_prefix("--config-env=") {
            certain &= !sets_alias(Some(value));
            at += 1;
        } else if word.starts_with('-') {
            at += 1;
        } else {
            certain &= GIT_COMMANDS.contains(&word);
            break;
        }
    }
    if certain {
        words
    } else {
        vec![Word::Known("git".into()), Word::Unknown]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str) -> DenyRule {
        DenyRule {
            rule: format!("bash({pattern})"),
            pattern: CommandPattern::parse(pattern).unwrap(),
        }
    }

    /// Whether `pattern` refuses the exec of `path` with `argv` (words split at spaces).
    fn refuses(pattern: &str, path: &str, argv: &str) -> bool {
        let argv: Vec<Vec<u8>> = argv.split(' ').map(|w| w.as_bytes().to_vec()).collect();
        let exec = Exec {
            path: path.as_bytes(),
            argv: &argv,
            cut: false,
        };
        exec.refused_by(&[rule(pattern)]).is_some()
    }

    #[test]
    fn each_exec_is_matched_as_itself_by_its_file_name() {
        assert!(refuses(
            "git push *",
            "/usr/bin/git",
            "git push origin main"
        ));
        assert!(refuses("git push *", "/usr/bin/git", "git -C . push"));
        assert!(refuses(
            "git push *",
            "/usr/bin/git",
            "whatever push origin"
        ));
        assert!(refuses("git push *", "/tmp/x", "/usr/bin/git push"));
        assert!(!refuses("git push *", "/usr/bin/git", "git status"));
        assert!(!refuses(
            "git push *",
            "/usr/bin/git",
            "git log --grep=push"
        ));
        // A wrapper's own exec is not the program it wraps: that one is checked when it comes.
        assert!(!refuses(
            "git push *",
            "/usr/bin/timeout",
            "timeout 60 git push"
        ));
        assert!(refuses("rm -rf *", "/bin/rm", "rm -rf /"));
    }

    #[test]
    fn a_dashed_git_program_is_its_subcommand() {
        assert!(refuses(
            "git push *",
            "/usr/lib/git-core/git-push",
            "git-push origin"
        ));
        assert!(refuses("git push *", "/usr/bin/git", "git-push origin"));
        assert!(!refuses(
            "git push *",
            "/usr/lib/git-core/git-upload-pack",
            "git-upload-pack ."
        ));
    }

    #[test]
    fn a_git_subcommand_that_may_be_an_alias_is_unknown_to_rules_naming_git() {
        assert!(refuses(
            "git push *",
            "/usr/bin/git",
            "git -c alias.p=push p"
        ));
        assert!(refuses(
            "git push *",
            "/usr/bin/git",
            "git -c Alias.p=push status"
        ));
        assert!(refuses(
            "git push *",
            "/usr/bin/git",
            "git --config-env=alias.p=X p"
        ));
        assert!(refuses("git push *", "/usr/bin/git", "git p origin"));
        assert!(!refuses(
            "git push *",
            "/usr/bin/git",
            "git -c core.x=y status"
        ));
        assert!(!refuses("git push *", "/usr/bin/git", "git --version"));
        assert!(!refuses("curl *", "/usr/bin/git", "git p origin"));
    }

    #[test]
    fn an_argv_read_in_part_may_go_on_with_anything_and_a_nameless_one_is_anything() {
        let argv = vec![b"npm".to_vec(), b"run".to_vec()];
        let cut = Exec {
            path: b"/usr/bin/npm",
            argv: &argv,
            cut: true,
        };
        assert!(cut.refused_by(&[rule("npm run deploy")]).is_some());
        let whole = Exec { cut: false, ..cut };
        assert!(whole.refused_by(&[rule("npm run deploy")]).is_none());
        let nameless = Exec {
            path: b"",
            argv: &[],
            cut: false,
        };
        assert!(nameless.refused_by(&[rule("git push *")]).is_some());
    }
}
