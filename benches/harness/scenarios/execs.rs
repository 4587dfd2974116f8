//! What the exec check costs a command that executes many programs: one `bash` call of a
//! `cargo build`-like tree of 2,000 execs (`for i in $(seq 2000); do /bin/true; done`), its
//! tool turn with no deny rule against with `--deny 'bash(git push *)'`, where each of the
//! 2,000 execs stops until the guardian has read its argv and matched it; and a real build, of
//! which the check's share is what a user pays: `make -j2` compiling 100 C files with the
//! system's `cc` (each file `cc`, `cc1` and `as`: about 300 execs) and linking them. The cases
//! are interleaved run by run, so both see the same machine.

use std::path::Path;

use anyhow::{Result, ensure};
use serde_json::json;

use super::{Bench, installed};
use crate::support::fake_model::Reply;
use crate::table::{Row, Unit};

/// How many programs the command executes.
const EXECS: usize = 2000;

/// What the command prints once every program has run.
const DONE: &str = "execs-done";

/// The model's answer after the command.
const ANSWER: &str = "Ran them.";

/// The two cases every row is measured in: no deny rule, and one on commands.
const CASES: [(&str, &[&str]); 2] = [
    ("no deny rule", &[]),
    ("a deny rule on commands", &["--deny=bash(git push *)"]),
];

impl Bench<'_> {
    /// The exec-check rows (see the module documentation).
    pub(super) fn exec_check(&self, rows: &mut Vec<Row>) -> Result<()> {
        let command = format!("for i in $(seq {EXECS}); do /bin/true; done; echo {DONE}");
        let name = |label: &str| format!("{EXECS} execs in one bash call, {label}: the tool turn");
        self.interleaved(rows, &name, "≤ 0.1 ms an exec more", &command, &|_| Ok(()))?;
        let name = |label: &str| format!("make -j2 of {SOURCES} C files, {label}: the tool turn");
        if !installed("make") || !installed("cc") {
            for (label, _) in CASES {
                rows.push(Row::not_measured(
                    name(label),
                    "≤ 5% more",
                    "make or cc not installed",
                ));
            }
            return Ok(());
        }
        let command = format!("make -s -j2 && echo {DONE}");
        self.interleaved(rows, &name, "≤ 5% more", &command, &write_build)
    }

    /// A row `name`d for each of [`CASES`]: the tool turn of one `bash` call of `command` in a
    /// new workspace that `prepare` fills, the cases interleaved run by run.
    fn interleaved(
        &self,
        rows: &mut Vec<Row>,
        name: &dyn Fn(&str) -> String,
        target: &'static str,
        command: &str,
        prepare: &dyn Fn(&Path) -> Result<()>,
    ) -> Result<()> {
        let mut turns: Vec<Row> = CASES
            .iter()
            .map(|(label, _)| Row::new(name(label), Unit::Ms, target))
            .collect();
        for _ in 0..self.options.runs {
            for ((_, flags), row) in CASES.iter().zip(turns.iter_mut()) {
                let replies = vec![
                    Reply::tool_call("bash", json!({ "command": command })),
                    Reply::text(ANSWER),
                ];
                let workspace = self.temp_dir()?;
                prepare(workspace.path())?;
                let job = self.job_with(replies, workspace.path(), flags)?;
                ensure!(
                    job.body(1).contains(DONE) && job.body(1).contains("exit code: 0"),
                    "`{command}` did not pass under {flags:?}: {}",
                    job.body(1)
                );
                row.time(job.turn(0));
            }
        }
        rows.extend(turns);
        Ok(())
    }
}

/// How many C files the build compiles.
const SOURCES: usize = 100;

/// Writes [`SOURCES`] small C files, each a few functions, and the Makefile that compiles each
/// to an object and links them into one program, into `dir`.
fn write_build(dir: &Path) -> Result<()> {
    let mut objects = Vec::new();
    let mut calls = String::new();
    for n in 0..SOURCES {
        let source = format!(
            "#include <stdio.h>\n#include <string.h>\n\
             int f{n}(const char *s) {{ int h = {n}; for (; *s; s++) h = h * 31 + *s; return h; }}\n\
             void g{n}(char *out, size_t size) {{ snprintf(out, size, \"%d\", f{n}(\"x\")); }}\n"
        );
        std::fs::write(dir.join(format!("f{n}.c")), source)?;
        objects.push(format!("f{n}.o"));
        calls.push_str(&format!("int f{n}(const char *); "));
    }
    let main = format!("{calls}\nint main(void) {{ return f0(\"a\") == 0; }}\n");
    std::fs::write(dir.join("main.c"), main)?;
    let makefile = format!(
        "CFLAGS = -O2\nprogram: main.o {objects}\n\t$(CC) -o $@ $^\n",
        objects = objects.join(" ")
    );
    std::fs::write(dir.join("Makefile"), makefile)?;
    Ok(())
}
