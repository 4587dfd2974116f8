//! A hook the model can rewrite: at `--auto medium` and above the model writes the workspace
//! and the `--add-dir` roots, so a guard whose script lives there (the `./ci/guard.sh` of a
//! checkout) is a guard the model it guards may rewrite before it next runs. zero still runs
//! it — the caller named it — but says so once, when the run starts.
//!
//! Every path-like word of a hook's command line counts, not only the program: in
//! `bash ci/guard.sh` or `python3 ./check.py` the script is what decides, and in
//! `./ci/guard.sh --policy ci/policy.json` so is the file it reads. A word is path-like when
//! it holds a `/` (`$CLAUDE_PROJECT_DIR` read as the workspace, which it is when the hook
//! runs) or names a file that exists in the workspace (`python3 check.py`). The words are the
//! ones a shell would run, found by the rules' parser of command lines; a line it cannot
//! parse is split at blanks.

use std::path::{Path, PathBuf};

use super::{Hook, HookSet, quoted};
use crate::rules::shell::{self, Word};
use crate::tools::policy::{NotADirectory, resolve_path};

impl HookSet {
    /// The warnings for the hooks whose command line names a file beneath one of `writable`
    /// (canonical roots the model may write; empty when it may write nothing), for a run in
    /// `workspace`: one per hook, naming every such file.
    pub(crate) fn writable_warnings(&self, workspace: &Path, writable: &[PathBuf]) -> Vec<String> {
        if writable.is_empty() {
            return Vec::new();
        }
        self.all()
            .filter_map(|hook| {
                let exposed: Vec<String> = words(&hook.command, workspace)
                    .into_iter()
                    .filter_map(|word| beneath(&word, workspace, writable))
                    .map(|path| format!("`{}`", path.display()))
                    .collect();
                (!exposed.is_empty()).then(|| warning(hook, &exposed))
            })
            .collect()
    }
}

/// The warning for `hook`, whose command names the writable files `exposed`.
fn warning(hook: &Hook, exposed: &[String]) -> String {
    format!(
        "the {} hook `{}` runs {} beneath a directory this run's model may write, so the \
         model it guards can rewrite it before it runs; keep a guard outside the workspace \
         and the --add-dir roots (see docs/HOOKS.md, \"Where a guard must live\")",
        hook.point.key(),
        hook.command,
        exposed.join(", ")
    )
}

/// The words of `command` that may name files, `$CLAUDE_PROJECT_DIR` read as `workspace`.
fn words(command: &str, workspace: &Path) -> Vec<String> {
    let quoted = quoted(&workspace.to_string_lossy());
    let line = [
        "\"$CLAUDE_PROJECT_DIR\"",
        "${CLAUDE_PROJECT_DIR}",
        "$CLAUDE_PROJECT_DIR",
    ]
    .iter()
    .fold(command.to_string(), |line, variable| {
        line.replace(variable, &quoted)
    });
    let words: Vec<String> = match shell::analyse(&line) {
        Ok(analysis) => analysis
            .commands
            .iter()
            .flat_map(|command| command.words.iter())
            .filter_map(|word| match word {
                Word::Known(text) => Some(text.clone()),
                Word::Unknown => None,
            })
            .collect(),
        Err(_) => line.split_whitespace().map(str::to_string).collect(),
    };
    words
        .into_iter()
        // `--policy=ci/p.json`, `FOO=./x`: the value.
        .map(|word| match word.split_once('=') {
            Some((_, value)) => value.to_string(),
            None => word,
        })
        .filter(|word| !word.starts_with('-'))
        .filter(|word| word.contains('/') || workspace.join(word).is_file())
        .collect()
}

/// Where `word` leads, as a tool opening it would find it (`tools::policy::resolve_path`: `..`
/// and links component by component, as the kernel does), when that is beneath one of
/// `writable`.
fn beneath(word: &str, workspace: &Path, writable: &[PathBuf]) -> Option<PathBuf> {
    let resolved = resolve_path(workspace, word).unwrap_or_else(|NotADirectory(path)| path);
    writable
        .iter()
        .any(|root| resolved.starts_with(root))
        .then_some(resolved)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn set(commands: &[&str]) -> HookSet {
        let hooks: Vec<_> = commands.iter().map(|c| json!({"command": c})).collect();
        let mut set = HookSet::default();
        set.add_file_value(&json!({"hooks": {"pre_tool_use": hooks}}), &|_| {
            Ok(Duration::from_secs(1))
        })
        .unwrap();
        set
    }

    #[test]
    fn every_path_like_word_beneath_a_writable_root_is_named() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        std::fs::write(root.join("check.py"), "").unwrap();
        let outside = tempfile::tempdir().unwrap();
        let guard = outside.path().join("guard.sh");
        let hooks = set(&[
            "./ci/guard.sh",
            "bash ci/guard.sh --strict",
            "python3 check.py",
            "\"$CLAUDE_PROJECT_DIR\"/hooks/x.sh",
            &format!("{} --policy=ci/p.json", guard.display()),
            &guard.display().to_string(),
            "jq -r .tool_name",
        ]);
        let warnings = hooks.writable_warnings(&root, std::slice::from_ref(&root));
        assert_eq!(warnings.len(), 5, "{warnings:#?}");
        assert!(warnings[0].contains("/ci/guard.sh`"), "{}", warnings[0]);
        assert!(warnings[1].contains("/ci/guard.sh`"), "{}", warnings[1]);
        assert!(warnings[2].contains("/check.py`"), "{}", warnings[2]);
        assert!(warnings[3].contains("/hooks/x.sh`"), "{}", warnings[3]);
        assert!(warnings[4].contains("/ci/p.json`"), "{}", warnings[4]);
        assert!(!warnings[4].contains("guard.sh`"), "{}", warnings[4]);
        // At `--auto low` the model writes nothing.
        assert!(hooks.writable_warnings(&root, &[]).is_empty());
    }

    #[test]
    fn a_path_that_leaves_the_root_by_dot_dot_is_outside() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        let inner = root.join("repo");
        std::fs::create_dir(&inner).unwrap();
        let hooks = set(&["../guard.sh", "ci/../../guard.sh"]);
        assert!(
            hooks
                .writable_warnings(&inner, std::slice::from_ref(&inner))
                .is_empty()
        );
        assert_eq!(hooks.writable_warnings(&inner, &[root]).len(), 2);
    }
}
