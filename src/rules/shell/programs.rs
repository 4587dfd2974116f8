//! Programs that run something the line names: a command (wrappers such as `timeout`,
//! `env`, `nice`, `xargs`, `find -exec`), a shell script (`sh -c SCRIPT`), or code the rules
//! cannot read (an interpreter's inline code, a shell or an interpreter reading its program
//! from stdin, an `awk` program that calls `system`). Each is read with its own option
//! syntax (`options`), so the command it runs is found where the program finds it; an option
//! the rules do not know stops the reading, and the line is not followed.
//!
//! Every other program is taken as itself. What a program does with the files it is given
//! (a script, a Makefile, a build script) is its own: the rules allow or deny the program.

use super::options::{self, Spec};
use super::{Follow, Inner, Opaque, Shape, Word, as_parsed, names, sed};

/// Shells: `-c SCRIPT` is followed as a line of its own; without a script operand they read
/// their program from stdin.
const SHELLS: [&str; 13] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash", "posh", "fish", "csh",
    "tcsh",
];

/// Programs that run a command given to them in a way the rules do not follow (as another
/// user, in another namespace, under a tracer, on a schedule): a line running one is not
/// followed.
const UNFOLLOWED: [&str; 23] = [
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "watch",
    "parallel",
    "strace",
    "ltrace",
    "unshare",
    "nsenter",
    "chroot",
    "flock",
    "busybox",
    "script",
    "fakeroot",
    "valgrind",
    "gdb",
    "systemd-run",
    "xvfb-run",
    "firejail",
    "bwrap",
    "expect",
];

/// A program that runs the rest of its words as a command after its own options and a fixed
/// number of operands: the command is followed, and the wrapper only carries it.
struct Wrapper {
    name: &'static str,
    spec: Spec,
    /// Operands before the command (`timeout`'s duration, `chrt`'s priority).
    before: usize,
    /// Options after which the rest is not a command the rules can follow (`env -S` splits a
    /// string into one, `chrt -p` takes a process, `time -o` writes a file).
    refused: &'static [&'static str],
    /// Options that run the command in another directory (`env -C`).
    elsewhere: &'static [&'static str],
    /// Whether `NAME=VALUE` words before the command are its environment (`env`).
    assignments: bool,
}

const fn wrapper(name: &'static str, spec: Spec, before: usize) -> Wrapper {
    Wrapper {
        name,
        spec,
        before,
        refused: &[],
        elsewhere: &[],
        assignments: false,
    }
}

/// The wrappers, their options as coreutils and util-linux read them.
const WRAPPERS: [Wrapper; 10] = [
    wrapper(
        "timeout",
        Spec {
            flags: "fpv",
            with_arg: "ks",
            long_flags: &["foreground", "preserve-status", "verbose"],
            long_with_arg: &["kill-after", "signal"],
            ..Spec::EMPTY
        },
        1,
    ),
    wrapper(
        "nice",
        Spec {
            with_arg: "n",
            long_with_arg: &["adjustment"],
            numeric: true,
            ..Spec::EMPTY
        },
        0,
    ),
    wrapper("nohup", Spec::EMPTY, 0),
    Wrapper {
        refused: &["S", "--split-string"],
        elsewhere: &["C", "--chdir"],
        assignments: true,
        ..wrapper(
            "env",
            Spec {
                flags: "i0v",
                with_arg: "uCS",
                long_flags: &[
                    "ignore-environment",
                    "null",
                    "debug",
                    "default-signal",
                    "ignore-signal",
                    "block-signal",
                    "list-signal-handling",
                ],
                long_with_arg: &["unset", "chdir", "split-string"],
                ..Spec::EMPTY
            },
            0,
        )
    },
    wrapper(
        "setsid",
        Spec {
            flags: "cfw",
            long_flags: &["ctty", "fork", "wait"],
            ..Spec::EMPTY
        },
        0,
    ),
    wrapper(
        "stdbuf",
        Spec {
            with_arg: "ioe",
            long_with_arg: &["input", "output", "error"],
            ..Spec::EMPTY
        },
        0,
    ),
    Wrapper {
        refused: &["p", "--pid"],
        ..wrapper(
            "chrt",
            Spec {
                flags: "abdefiomprRv",
                with_arg: "TPD",
                long_flags: &[
                    "all-tasks",
                    "batch",
                    "deadline",
                    "ext",
                    "fifo",
                    "idle",
                    "other",
                    "max",
                    "pid",
                    "rr",
                    "reset-on-fork",
                    "verbose",
                ],
                long_with_arg: &["sched-runtime", "sched-period", "sched-deadline"],
                ..Spec::EMPTY
            },
            1,
        )
    },
    Wrapper {
        refused: &["p", "P", "u", "--pid", "--pgid", "--uid"],
        ..wrapper(
            "ionice",
            Spec {
                flags: "tpPu",
                with_arg: "cn",
                long_flags: &["ignore", "pid", "pgid", "uid"],
                long_with_arg: &["class", "classdata"],
                ..Spec::EMPTY
            },
            0,
        )
    },
    Wrapper {
        refused: &["p", "--pid"],
        ..wrapper(
            "taskset",
            Spec {
                flags: "acp",
                long_flags: &["all-tasks", "cpu-list", "pid"],
                ..Spec::EMPTY
            },
            1,
        )
    },
    Wrapper {
        refused: &["o", "--output"],
        ..wrapper(
            "time",
            Spec {
                flags: "apqvV",
                with_arg: "fo",
                long_flags: &["append", "portability", "quiet", "verbose"],
                long_with_arg: &["format", "output"],
                ..Spec::EMPTY
            },
            0,
        )
    },
];

/// An interpreter: the options it is given before its script, the ones among them that hand
/// it code on the line, and the subcommand that takes code (`deno eval`).
struct Interpreter {
    names: &'static [&'static str],
    spec: Spec,
    /// Options whose argument (or presence) is code to run.
    code: &'static [&'static str],
    /// Options after which the next operand is a module, not a script file (`python3 -m`).
    module: &'static [&'static str],
    /// Its first operand is a subcommand (`deno run`, `bun test`), `eval` taking code.
    subcommands: bool,
}

const INTERPRETERS: [Interpreter; 9] = [
    Interpreter {
        names: &["python", "python2", "python3", "pypy", "pypy3"],
        spec: Spec {
            flags: "bBdEhIOqsSuvVx",
            with_arg: "cmWX",
            ..Spec::EMPTY
        },
        code: &["c"],
        module: &["m"],
        subcommands: false,
    },
    Interpreter {
        names: &["node", "nodejs"],
        spec: Spec {
            with_arg: "ep",
            long_flags: &[
                "test",
                "no-warnings",
                "enable-source-maps",
                "trace-warnings",
                "max-old-space-size",
            ],
            long_with_arg: &["eval", "print"],
            ..Spec::EMPTY
        },
        code: &["e", "p", "--eval", "--print"],
        module: &[],
        subcommands: false,
    },
    Interpreter {
        names: &["perl"],
        spec: Spec {
            flags: "wWtTc",
            with_arg: "eE",
            ..Spec::EMPTY
        },
        code: &["e", "E"],
        module: &[],
        subcommands: false,
    },
    Interpreter {
        names: &["ruby"],
        spec: Spec {
            flags: "wWvcd",
            with_arg: "e",
            ..Spec::EMPTY
        },
        code: &["e"],
        module: &[],
        subcommands: false,
    },
    Interpreter {
        names: &["php"],
        spec: Spec {
            flags: "lnq",
            with_arg: "r",
            ..Spec::EMPTY
        },
        code: &["r"],
        module: &[],
        subcommands: false,
    },
    Interpreter {
        names: &["lua", "luajit"],
        spec: Spec {
            flags: "vW",
            with_arg: "e",
            ..Spec::EMPTY
        },
        code: &["e"],
        module: &[],
        subcommands: false,
    },
    Interpreter {
        names: &["Rscript", "julia"],
        spec: Spec {
            with_arg: "eE",
            ..Spec::EMPTY
        },
        code: &["e", "E"],
        module: &[],
        subcommands: false,
    },
    Interpreter {
        names: &["deno", "bun"],
        spec: Spec {
            with_arg: "e",
            long_with_arg: &["eval"],
            ..Spec::EMPTY
        },
        code: &["e", "--eval"],
        module: &[],
        subcommands: true,
    },
    Interpreter {
        names: &["tclsh", "wish"],
        spec: Spec::EMPTY,
        code: &[],
        module: &[],
        subcommands: false,
    },
];

/// The awk family: the program is their first operand (or `-f FILE`'s file).
const AWKS: [&str; 5] = ["awk", "gawk", "mawk", "nawk", "original-awk"];

/// The keys `git -c` may set without making git run a program of the line's choosing (an
/// alias, a pager, an ssh command, a hook directory, a filter): the rest are not followed.
const GIT_PLAIN_KEYS: [&str; 8] = [
    "user.",
    "color.",
    "advice.",
    "init.",
    "core.quotepath",
    "core.autocrlf",
    "commit.gpgsign",
    "safe.directory",
];

/// What following the program `words` (its name first, each word with its shape) finds, or
/// why it cannot be followed.
pub(super) fn follow(words: &[Word], shapes: &[Shape]) -> Result<Follow, Opaque> {
    let Some(Word::Known(path)) = words.first() else {
        return Err(Opaque::code(
            "its command's name is known only as the line runs (it may be any command, \
             `eval` included)",
        ));
    };
    let name = file_name(path);
    let args = &words[1..];
    if SHELLS.contains(&name) {
        return shell(name, args);
    }
    if let Some(interpreter) = INTERPRETERS.iter().find(|i| i.names.contains(&name)) {
        return interpreter_code(name, interpreter, args).map(|()| Follow::default());
    }
    if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
        return wrapped(wrapper, args, &shapes[1..]);
    }
    match name {
        _ if AWKS.contains(&name) => awk(name, args).map(|()| Follow::default()),
        _ if UNFOLLOWED.contains(&name) => Err(Opaque::program(format!(
            "it runs `{name}`, which runs a command in a way the rules do not follow"
        ))),
        "xargs" => xargs(args, &shapes[1..]),
        "find" => find(args, &shapes[1..]),
        "git" => git(args).map(|()| Follow::default()),
        "sed" => sed(args).map(|()| Follow::default()),
        "tee" => Ok(tee(args)),
        _ => Ok(Follow::default()),
    }
}

/// A command's file name: `rm` for `/bin/rm`.
pub(crate) fn file_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Whether `word` names the process's own stdin (`-`, `/dev/stdin`, `/dev/fd/0`, …): a
/// script read from there is code the line does not show.
fn is_stdin(word: &Word) -> bool {
    match word {
        Word::Known(path) => {
            path == "-"
                || path.starts_with("/dev/stdin")
                || path.starts_with("/dev/fd/")
                || path.starts_with("/proc/")
        }
        Word::Unknown => true,
    }
}

/// A shell's options, as bash and the POSIX shells take them.
const SHELL_OPTIONS: Spec = Spec {
    flags: "abcefhiklmnprstuvxBCDEHPT",
    with_arg: "oO",
    long_flags: &[
        "login",
        "noprofile",
        "norc",
        "posix",
        "restricted",
        "verbose",
        "version",
        "help",
        "noediting",
        "debugger",
        "dump-strings",
        "dump-po-strings",
        "pretty-print",
    ],
    long_with_arg: &["rcfile", "init-file"],
    plus: true,
    ..Spec::EMPTY
};

/// A shell: exactly `-c SCRIPT` is followed (its script as a line of its own); a script file
/// is the shell's own; a program read from stdin, or any other use of its options with `-c`,
/// is code the rules cannot see.
fn shell(name: &str, args: &[Word]) -> Result<Follow, Opaque> {
    let unseen = |why: &str| Err(Opaque::code(format!("it runs `{name}` {why}")));
    let Ok(read) = options::read(args, &SHELL_OPTIONS) else {
        return unseen("with options the rules cannot follow (only `sh -c 'SCRIPT'` is analysed)");
    };
    let first = read.operands.first().map(|&at| &args[at]);
    if read.has("c") {
        return match (read.options.as_slice(), first) {
            ([only], Some(Word::Known(script))) if only.name == "c" => Ok(Follow {
                carrier: true,
                script: Some(script.clone()),
                ..Follow::default()
            }),
            _ => unseen(
                "with options or a script the rules cannot follow (only `sh -c 'SCRIPT'` is \
                 analysed)",
            ),
        };
    }
    match first {
        _ if read.has("s") || read.has("i") => unseen("reading its commands from stdin"),
        None => unseen("reading its commands from stdin"),
        Some(script) if is_stdin(script) => unseen("reading its commands from stdin"),
        Some(_) => Ok(Follow::default()),
    }
}

/// Refuses an interpreter given code on the line or reading it from stdin; a script file (or
/// module) is its own.
fn interpreter_code(name: &str, interpreter: &Interpreter, args: &[Word]) -> Result<(), Opaque> {
    let read = options::read(args, &interpreter.spec)
        .map_err(|why| Opaque::program(format!("`{name}` {why}")))?;
    if let Some(option) = read
        .options
        .iter()
        .find(|o| interpreter.code.contains(&o.name.as_str()))
    {
        return Err(Opaque::program(format!(
            "it runs `{name}` with code given on the line (`{}`), which the rules cannot read",
            option.name
        )));
    }
    if read
        .options
        .iter()
        .any(|o| interpreter.module.contains(&o.name.as_str()))
    {
        return Ok(());
    }
    match read.operands.first().map(|&at| &args[at]) {
        Some(Word::Known(sub)) if interpreter.subcommands && sub == "eval" => Err(Opaque::program(
            format!("it runs `{name} eval`, whose code the rules cannot read"),
        )),
        Some(script) if !is_stdin(script) => Ok(()),
        _ => Err(Opaque::program(format!(
            "it runs `{name}` reading its program from stdin, which the rules cannot read"
        ))),
    }
}

/// Refuses an awk program that runs commands (`system`, a pipe to or from a command,
/// `getline`, an `@load`ed extension), or that the line does not show.
fn awk(name: &str, args: &[Word]) -> Result<(), Opaque> {
    let spec = Spec {
        with_arg: "Fvfe",
        long_with_arg: &["source", "file", "field-separator", "assign"],
        ..Spec::EMPTY
    };
    let read =
        options::read(args, &spec).map_err(|why| Opaque::program(format!("`{name}` {why}")))?;
    let mut programs: Vec<&Word> = read
        .options
        .iter()
        .filter(|o| o.name == "e" || o.name == "--source")
        .filter_map(|o| o.arg.as_ref())
        .collect();
    if !read.has("f") && !read.has("--file") && programs.is_empty() {
        programs.extend(read.operands.first().map(|&at| &args[at]));
    }
    for program in programs {
        let runs = match program {
            Word::Known(text) => ["system", "|", "getline", "@"]
                .iter()
                .any(|word| text.contains(word)),
            Word::Unknown => true,
        };
        if runs {
            return Err(Opaque::program(format!(
                "it runs an `{name}` program that may run commands (`system`, a pipe, \
                 `getline`, `@load`) or that the line does not show"
            )));
        }
    }
    Ok(())
}

/// Refuses a `sed` script that runs commands (GNU sed's `e` command and `s///e` flag), or
/// that the line does not show; `--sandbox` runs none, and a script file (`-f`) is sed's own.
fn sed(args: &[Word]) -> Result<(), Opaque> {
    let spec = Spec {
        flags: "nrsuzE",
        with_arg: "efl",
        attached: "i",
        long_flags: &[
            "quiet",
            "silent",
            "regexp-extended",
            "separate",
            "unbuffered",
            "null-data",
            "posix",
            "sandbox",
            "debug",
            "follow-symlinks",
            "in-place",
        ],
        long_with_arg: &["expression", "file", "line-length"],
        permute: true,
        ..Spec::EMPTY
    };
    let read = options::read(args, &spec).map_err(|why| Opaque::program(format!("`sed` {why}")))?;
    if read.has("--sandbox") {
        return Ok(());
    }
    let mut scripts: Vec<&Word> = read
        .options
        .iter()
        .filter(|o| o.name == "e" || o.name == "--expression")
        .filter_map(|o| o.arg.as_ref())
        .collect();
    if scripts.is_empty() && !read.has("f") && !read.has("--file") {
        scripts.extend(read.operands.first().map(|&at| &args[at]));
    }
    let runs = |script: &&Word| match script {
        Word::Known(text) => sed::runs_commands(text),
        Word::Unknown => true,
    };
    if scripts.iter().any(runs) {
        return Err(Opaque::program(
            "it runs a `sed` script that may run commands (`e`, `s///e`) or that the line does \
             not show",
        ));
    }
    Ok(())
}

/// A wrapper: its options read, the command after them followed.
fn wrapped(wrapper: &Wrapper, args: &[Word], shapes: &[Shape]) -> Result<Follow, Opaque> {
    let name = wrapper.name;
    let read = options::read(&as_parsed(args, shapes), &wrapper.spec)
        .map_err(|why| Opaque::program(format!("`{name}` {why}")))?;
    if let Some(option) = read
        .options
        .iter()
        .find(|o| wrapper.refused.contains(&o.name.as_str()))
    {
        return Err(Opaque::program(format!(
            "it runs `{name}` with `{}`, after which the rules cannot follow what it runs",
            option.name
        )));
    }
    let mut start = read.first_operand(args.len());
    for _ in 0..wrapper.before {
        match args.get(start) {
            Some(Word::Known(_)) => start += 1,
            Some(Word::Unknown) => return Err(unknown_operand(name)),
            None => break,
        }
    }
    let mut assignments = 0;
    if wrapper.assignments {
        if args.get(start) == Some(&Word::Known("-".into())) {
            start += 1;
        }
        while let Some(word) = args.get(start + assignments) {
            match word {
                // An assignment the walk parsed has its name checked already.
                _ if shapes[start + assignments].named => assignments += 1,
                Word::Known(text) if text.split_once('=').is_some_and(|(n, _)| !n.is_empty()) => {
                    names::check(text)?;
                    assignments += 1;
                }
                Word::Known(_) => break,
                Word::Unknown => return Err(unknown_operand(name)),
            }
        }
    }
    let elsewhere = read
        .options
        .iter()
        .any(|o| wrapper.elsewhere.contains(&o.name.as_str()));
    let inner = Inner {
        words: args[start..].to_vec(),
        shapes: shapes[start..].to_vec(),
        assignments,
        elsewhere,
    };
    Ok(Follow {
        carrier: true,
        runs: if inner.words.len() > assignments {
            vec![inner]
        } else {
            Vec::new()
        },
        ..Follow::default()
    })
}

fn unknown_operand(name: &str) -> Opaque {
    Opaque::program(format!(
        "`{name}` is given a word known only as the line runs before its command (it may be \
         any number of words, the command among them)"
    ))
}

/// `xargs [OPTIONS] [COMMAND [ARGS…]]`: the command (`echo` when none) with the words it
/// reads from stdin after its own, unknown; with `-I`/`-i` the words holding the replace
/// string are unknown too.
fn xargs(args: &[Word], shapes: &[Shape]) -> Result<Follow, Opaque> {
    let spec = Spec {
        flags: "0oprtx",
        with_arg: "aEdILnsP",
        attached: "eil",
        long_flags: &[
            "null",
            "open-tty",
            "interactive",
            "no-run-if-empty",
            "verbose",
            "exit",
            "show-limits",
            "eof",
            "replace",
            "max-lines",
        ],
        long_with_arg: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-chars",
            "max-procs",
            "process-slot-var",
        ],
        ..Spec::EMPTY
    };
    let read =
        options::read(args, &spec).map_err(|why| Opaque::program(format!("`xargs` {why}")))?;
    let replace = read
        .options
        .iter()
        .filter(|o| matches!(o.name.as_str(), "I" | "i" | "--replace"))
        .map(|o| match &o.arg {
            Some(Word::Known(text)) => Some(text.clone()),
            Some(Word::Unknown) => None,
            None => Some("{}".to_owned()),
        })
        .next_back();
    let start = read.first_operand(args.len());
    let (mut words, mut kinds) = if start < args.len() {
        (args[start..].to_vec(), shapes[start..].to_vec())
    } else {
        (vec![Word::Known("echo".into())], vec![Shape::default()])
    };
    if let Some(replace) = replace {
        for word in words.iter_mut().skip(1) {
            let replaced = match (&replace, &*word) {
                (Some(replace), Word::Known(text)) => text.contains(replace.as_str()),
                _ => true,
            };
            if replaced {
                *word = Word::Unknown;
            }
        }
    }
    words.push(Word::Unknown);
    kinds.push(Shape {
        splits: true,
        named: false,
    });
    Ok(Follow {
        carrier: true,
        runs: vec![Inner {
            words,
            shapes: kinds,
            assignments: 0,
            elsewhere: false,
        }],
        ..Follow::default()
    })
}

/// `find`: every `-exec`, `-execdir`, `-ok` and `-okdir` command (`{}` unknown), the files
/// `-fprint`, `-fprint0`, `-fls` and `-fprintf` write. A word known only as the line runs may
/// be `-exec` itself, so `find` with one is not followed.
fn find(args: &[Word], shapes: &[Shape]) -> Result<Follow, Opaque> {
    if args.contains(&Word::Unknown) {
        return Err(Opaque::program(
            "it runs `find` with a word known only as the line runs (it may be `-exec`)",
        ));
    }
    let text = |at: usize| match &args[at] {
        Word::Known(text) => text.as_str(),
        Word::Unknown => "",
    };
    let mut follow = Follow::default();
    let mut at = 0;
    while at < args.len() {
        match text(at) {
            action @ ("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let start = at + 1;
                let end = (start..args.len())
                    .find(|&i| {
                        text(i) == ";" || (text(i) == "+" && i > start && text(i - 1) == "{}")
                    })
                    .ok_or_else(|| Opaque::program(format!("`find {action}` has no `;` or `+`")))?;
                let words = args[start..end]
                    .iter()
                    .map(|word| match word {
                        Word::Known(text) if text.contains("{}") => Word::Unknown,
                        other => other.clone(),
                    })
                    .collect();
                follow.runs.push(Inner {
                    words,
                    shapes: shapes[start..end].to_vec(),
                    assignments: 0,
                    elsewhere: action.ends_with("dir"),
                });
                at = end + 1;
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                follow.writes.extend(args.get(at + 1).cloned());
                at += 2;
            }
            _ => at += 1,
        }
    }
    Ok(follow)
}

/// `git`: its `-c KEY=VALUE` options may only set keys that run nothing (an alias, a pager
/// or an ssh command would run what the line says), and no `--config-env` or `--exec-path`.
fn git(args: &[Word]) -> Result<(), Opaque> {
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let Word::Known(text) = word else {
            return Err(Opaque::program(
                "`git` is given a word known only as the line runs among its own options (it \
                 may be `-c alias…`)",
            ));
        };
        match text.as_str() {
            "-c" => {
                let setting = args.get(at + 1).cloned().unwrap_or(Word::Unknown);
                git_setting(&setting)?;
                at += 2;
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => at += 2,
            option if option.starts_with("--config-env") || option.starts_with("--exec-path=") => {
                return Err(Opaque::program(format!(
                    "`git {option}` can make git run a program of the line's choosing"
                )));
            }
            option if option.starts_with('-') => at += 1,
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// One `git -c` setting.
fn git_setting(setting: &Word) -> Result<(), Opaque> {
    let key = match setting {
        Word::Known(text) => text
            .split('=')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase(),
        Word::Unknown => String::new(),
    };
    if !key.is_empty() && GIT_PLAIN_KEYS.iter().any(|plain| key.starts_with(plain)) {
        return Ok(());
    }
    Err(Opaque::program(format!(
        "`git -c {key}` sets a key the rules do not follow (an alias, a pager, an ssh \
         command or a hook can make git run another program)"
    )))
}

/// `tee [OPTIONS] FILE…`: the files it writes (an option it does not know may be anything,
/// so the files are then unknown).
fn tee(args: &[Word]) -> Follow {
    let spec = Spec {
        flags: "aip",
        long_flags: &["append", "ignore-interrupts", "output-error"],
        permute: true,
        ..Spec::EMPTY
    };
    let writes = match options::read(args, &spec) {
        Ok(read) => read.operands.iter().map(|&at| args[at].clone()).collect(),
        Err(_) => vec![Word::Unknown],
    };
    Follow {
        writes,
        ..Follow::default()
    }
}
