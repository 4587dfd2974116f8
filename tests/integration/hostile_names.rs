//! Names in the data directory that zero did not write: stray files whose names strip down to
//! `..` or `.`, records and indexes naming paths outside, and symbolic links named like zero's
//! own entries. Whichever way zero looks at the data directory — `zero tasks list`,
//! `zero tasks gc`, the reconciliation a `zero exec` does at start — it leaves the stranger
//! exactly as it was, follows no link, keeps every real record and log, says on stderr which
//! entry it left alone, and exits as it would have anyway. A malformed id on the command line
//! is a usage error that touches nothing.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::stat::{UtimensatFlags, utimensat};
use nix::sys::time::TimeSpec;
use serde_json::json;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::runs::{Home, one_finished_task};
use crate::support::zero::{Wire, zero_std_with};

/// Run ids and task ids of the right shape that no run of this test wrote.
const RUN_1: &str = "run_20200101000000_0000c1";
const RUN_2: &str = "run_20200101000000_0000c2";
const RUN_3: &str = "run_20200101000000_0000c3";
const DEAD_RUN: &str = "run_20200101000000_00dead";
const TASK_1: &str = "task_0000000000d1";
const TASK_2: &str = "task_0000000000d2";

/// How one zero process that looked at the data directory ended.
struct Looked {
    what: &'static str,
    code: i32,
    stderr: String,
}

impl Looked {
    /// Asserts it exited with `code` and warned about `path` by name.
    fn warned_about(&self, path: &Path, code: i32) {
        assert_eq!(self.code, code, "{}:\n{}", self.what, self.stderr);
        let named = self.stderr.lines().any(|line| {
            line.starts_with("zero: warning:") && line.contains(&path.display().to_string())
        });
        assert!(
            named,
            "{} did not warn about {}:\n{}",
            self.what,
            path.display(),
            self.stderr
        );
    }
}

/// `zero tasks <args>`.
fn tasks(home: &Home, what: &'static str, args: &[&str]) -> Looked {
    let output = home.tasks(args).output().unwrap();
    Looked {
        what,
        code: output.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A `zero exec` whose model answers at once: all it does to the data directory is the
/// reconciliation at start.
fn exec_start_up(home: &Home) -> Looked {
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let workspace = tempfile::tempdir().unwrap();
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_HOME", home.path())
        .current_dir(workspace.path())
        // Without a session: the run's own footprint is not what these tests look for.
        .args(["exec", "--no-session", "-o", "stream-json", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Looked {
        what: "zero exec",
        code: output.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `zero tasks list`, `zero tasks gc` (its default cutoff spares the real task, which just
/// ended) and a `zero exec` start-up, in that order.
fn every_look(home: &Home) -> [Looked; 3] {
    [
        tasks(home, "zero tasks list", &["list"]),
        tasks(home, "zero tasks gc", &["gc"]),
        exec_start_up(home),
    ]
}

/// Everything under `root`, without following links: each path with what it is (a link's
/// target, a file's contents).
fn tree(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut found = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let what = if meta.is_symlink() {
            format!("link to {}", fs::read_link(&path).unwrap().display())
        } else if meta.is_dir() {
            pending.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            "directory".to_string()
        } else {
            format!(
                "file: {}",
                String::from_utf8_lossy(&fs::read(&path).unwrap())
            )
        };
        found.insert(path, what);
    }
    found
}

/// Makes the entry at `path` (a link itself, not its target) last modified long ago, so `gc`
/// would count it as an old leftover.
fn make_old(path: &Path) {
    let long_ago = TimeSpec::new(1_577_836_800, 0);
    utimensat(
        None,
        path,
        &long_ago,
        &long_ago,
        UtimensatFlags::NoFollowSymlink,
    )
    .unwrap();
}

/// A link at `link` to `target`, made old (see [`make_old`]).
fn old_symlink(target: &Path, link: &Path) {
    symlink(target, link).unwrap();
    make_old(link);
}

/// A finished shell task's record, ended long ago (so `gc` would delete it).
fn old_record(id: &str, run_id: &str, output: &Path) -> serde_json::Value {
    json!({
        "schemaVersion": 1, "id": id, "kind": "shell", "command": "true", "runId": run_id,
        "pid": null, "startTime": null, "bootId": null,
        "startedAt": "2020-01-01T00:00:00.000Z", "endedAt": "2020-01-01T00:00:01.000Z",
        "status": "completed", "exitCode": 0, "outputPath": output,
    })
}

fn write_json(path: &Path, value: &serde_json::Value) {
    fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

#[test]
fn stray_files_in_runs_never_make_zero_delete_the_data_directory() {
    let (home, _) = one_finished_task();
    let runs = home.path().join("runs");
    // Each strips to `..`, `.` or the empty run id under today's names, or is no name at all.
    let strays = [
        "...lock",
        "..lock",
        ".lock",
        "...tasks",
        "....lock.new",
        "run_x.lock",
        "notes.txt",
    ]
    .map(|name| runs.join(name));
    for stray in &strays {
        fs::write(stray, "not zero's").unwrap();
        make_old(stray);
    }
    let before = tree(&home.path());

    let looks = every_look(&home);
    assert_eq!(tree(&home.path()), before, "the data directory changed");
    for looked in looks {
        for stray in &strays {
            looked.warned_about(stray, 0);
        }
    }
}

#[test]
fn records_and_indexes_naming_other_paths_are_not_followed() {
    let (home, real) = one_finished_task();
    let tasks_dir = home.path().join("tasks");
    let real_log = tasks_dir.join(format!("{real}.log"));
    // `tasks/../../outside.log`, which an unchecked record id would make gc delete.
    let outside = home.path().parent().unwrap().join("outside.log");
    fs::write(&outside, "precious").unwrap();
    let escaping = tasks_dir.join(format!("{TASK_1}.json"));
    write_json(
        &escaping,
        &old_record("../../outside", DEAD_RUN, Path::new("/x")),
    );
    // A record file claiming the real task's id: acting on it would delete the real log.
    let impostor = tasks_dir.join(format!("{TASK_2}.json"));
    write_json(&impostor, &old_record(&real, DEAD_RUN, &real_log));
    // A record naming a run id that is a path.
    let wandering = tasks_dir.join("task_0000000000d3.json");
    let mut running = old_record("task_0000000000d3", "../../x", Path::new("/x"));
    running["status"] = json!("running");
    write_json(&wandering, &running);
    // A dead run whose index names paths instead of task ids.
    let index = home.path().join(format!("runs/{DEAD_RUN}.tasks"));
    fs::write(home.path().join(format!("runs/{DEAD_RUN}.lock")), "").unwrap();
    fs::write(&index, "../x\n../../outside\n").unwrap();
    let before = tree(&tasks_dir);

    // The start-up reconciles the dead run, reading its index; `list` and `gc` read tasks/.
    let start_up = exec_start_up(&home);
    let [list, gc, _] = every_look(&home);
    assert_eq!(tree(&tasks_dir), before, "tasks/ changed");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
    start_up.warned_about(&index, 0);
    for stranger in [&escaping, &impostor, &wandering] {
        list.warned_about(stranger, 0);
        gc.warned_about(stranger, 0);
    }
}

#[test]
fn a_symbolic_link_named_like_a_runs_file_is_never_followed() {
    let (home, real) = one_finished_task();
    let runs = home.path().join("runs");
    let precious = tempfile::tempdir().unwrap();
    fs::write(precious.path().join("thesis.txt"), "years of work").unwrap();
    fs::create_dir(precious.path().join("chapters")).unwrap();
    fs::write(precious.path().join("chapters/1.txt"), "chapter one").unwrap();
    let precious_file = precious.path().join("thesis.txt");
    // A dead run (its lease is a real, unheld file) whose run directory is a link.
    let run_dir = runs.join(RUN_1);
    old_symlink(precious.path(), &run_dir);
    fs::write(runs.join(format!("{RUN_1}.lock")), "").unwrap();
    // A task index left behind by a gone run, as a link to a file naming the real task.
    fs::write(precious.path().join("index"), format!("{real}\n")).unwrap();
    let index = runs.join(format!("{RUN_2}.tasks"));
    old_symlink(&precious.path().join("index"), &index);
    // A lease that is a link: locking it would lock a file outside.
    let lease = runs.join(format!("{RUN_3}.lock"));
    old_symlink(&precious_file, &lease);
    let tasks_before = tree(&home.path().join("tasks"));
    let precious_before = tree(precious.path());

    let looks = every_look(&home);
    assert_eq!(
        tree(precious.path()),
        precious_before,
        "the link's target changed"
    );
    for (link, target) in [
        (&run_dir, precious.path()),
        (&index, &precious.path().join("index")),
        (&lease, &precious_file),
    ] {
        let kept = fs::read_link(link).ok();
        assert_eq!(kept.as_deref(), Some(target), "{}", link.display());
    }
    assert_eq!(
        tree(&home.path().join("tasks")),
        tasks_before,
        "tasks/ changed"
    );
    for looked in looks {
        for link in [&run_dir, &index, &lease] {
            looked.warned_about(link, 0);
        }
    }
}

#[test]
fn a_symbolic_link_named_like_a_tasks_file_is_never_followed() {
    let (home, _) = one_finished_task();
    let tasks_dir = home.path().join("tasks");
    let precious = tempfile::tempdir().unwrap();
    // A record that is a link to a `running` record of a dead run that indexes it:
    // reconciling it would write `interrupted` in the link's place.
    let linked_record = tasks_dir.join(format!("{TASK_1}.json"));
    let linked_log = tasks_dir.join(format!("{TASK_1}.log"));
    let mut running = old_record(TASK_1, DEAD_RUN, &linked_log);
    running["status"] = json!("running");
    running["endedAt"] = json!(null);
    write_json(&precious.path().join("record.json"), &running);
    fs::write(precious.path().join("d1.log"), "log one").unwrap();
    symlink(precious.path().join("record.json"), &linked_record).unwrap();
    symlink(precious.path().join("d1.log"), &linked_log).unwrap();
    fs::write(home.path().join(format!("runs/{DEAD_RUN}.lock")), "").unwrap();
    fs::write(
        home.path().join(format!("runs/{DEAD_RUN}.tasks")),
        format!("{TASK_1}\n"),
    )
    .unwrap();
    // A real record ended long ago whose output is a link: gc would delete both.
    let linked_output = tasks_dir.join(format!("{TASK_2}.log"));
    write_json(
        &tasks_dir.join(format!("{TASK_2}.json")),
        &old_record(TASK_2, DEAD_RUN, &linked_output),
    );
    fs::write(precious.path().join("d2.log"), "log two").unwrap();
    symlink(precious.path().join("d2.log"), &linked_output).unwrap();
    let tasks_before = tree(&tasks_dir);
    let precious_before = tree(precious.path());

    // The start-up reconciles the dead run and meets the linked record through its index.
    let start_up = exec_start_up(&home);
    let [list, gc, _] = every_look(&home);
    assert_eq!(tree(&tasks_dir), tasks_before, "tasks/ changed");
    assert_eq!(
        tree(precious.path()),
        precious_before,
        "the links' targets changed"
    );
    start_up.warned_about(&linked_record, 0);
    list.warned_about(&linked_record, 0);
    gc.warned_about(&linked_record, 0);
    gc.warned_about(&linked_output, 0);
}

#[test]
fn a_malformed_id_on_the_command_line_is_a_usage_error_that_touches_nothing() {
    let home = Home::new();
    // A dead run with a `running` task: any command that got as far as reconciling would
    // change both.
    let root = home.path();
    fs::create_dir_all(root.join("tasks")).unwrap();
    fs::create_dir_all(root.join("runs")).unwrap();
    let output = root.join(format!("tasks/{TASK_1}.log"));
    fs::write(&output, "").unwrap();
    let mut running = old_record(TASK_1, DEAD_RUN, &output);
    running["status"] = json!("running");
    running["endedAt"] = json!(null);
    write_json(&root.join(format!("tasks/{TASK_1}.json")), &running);
    fs::write(root.join(format!("runs/{DEAD_RUN}.lock")), "").unwrap();
    fs::write(
        root.join(format!("runs/{DEAD_RUN}.tasks")),
        format!("{TASK_1}\n"),
    )
    .unwrap();
    let before = tree(&root);

    for command in ["show", "output", "stop"] {
        let looked = tasks(&home, "zero tasks", &[command, "../x"]);
        assert_eq!(looked.code, 2, "{command}: {}", looked.stderr);
        assert!(
            looked.stderr.contains(
                "`../x` is not a task id: a task id is `task_` and 12 lowercase hex digits, \
                 like task_0123456789ab"
            ),
            "{command}: {}",
            looked.stderr
        );
    }
    let looked = tasks(&home, "zero tasks", &["list", "--run", "../x"]);
    assert_eq!(looked.code, 2, "{}", looked.stderr);
    assert!(
        looked
            .stderr
            .contains("`../x` is not a run id: a run id is `run_`"),
        "{}",
        looked.stderr
    );
    assert_eq!(
        tree(&root),
        before,
        "a usage error changed the data directory"
    );
}
