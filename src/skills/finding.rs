//! Skills found on a thread of their own: discovery reads a file per skill, and a hundred of
//! them cost milliseconds of system calls, so it starts as soon as the settings know where to
//! look and runs beside the run's other start-up work (the provider, the MCP servers, the
//! server's probe). The first use waits for it; every later use reads what it found.

use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use super::Skill;
use super::discovery::{Discovery, SearchPaths, discover};
use crate::sync::lock;

/// The run's skills, being found or found.
#[derive(Debug)]
pub(crate) struct Finding {
    /// The discovery's thread, until something waits for it.
    thread: Mutex<Option<JoinHandle<Discovery>>>,
    /// What it found, once something waited for it.
    found: OnceLock<Discovery>,
}

impl Finding {
    /// Starts finding the skills `paths` leads to, keeping only those `only` names when it
    /// names any. Without a thread to run it on, it is found at once.
    pub(crate) fn start(paths: SearchPaths, only: Vec<String>) -> Finding {
        let find = move || {
            let mut found = discover(&paths);
            if !only.is_empty() {
                found.keep_only(&only);
            }
            found
        };
        let thread = std::thread::Builder::new().name("zero-skills".into());
        match thread.spawn(find.clone()) {
            Ok(handle) => Finding {
                thread: Mutex::new(Some(handle)),
                found: OnceLock::new(),
            },
            Err(_) => Finding::done(find()),
        }
    }

    /// No skills at all (`--no-skills`, or a mode that shows none).
    pub(crate) fn none() -> Finding {
        Finding::done(Discovery::default())
    }

    fn done(found: Discovery) -> Finding {
        Finding {
            thread: Mutex::new(None),
            found: OnceLock::from(found),
        }
    }

    /// What discovery found, waited for the first time. A discovery that panicked found
    /// nothing.
    pub(crate) fn get(&self) -> &Discovery {
        self.found.get_or_init(|| {
            let thread = lock(&self.thread).take();
            thread
                .and_then(|thread| thread.join().ok())
                .unwrap_or_default()
        })
    }

    /// The skills found, sorted by name.
    pub(crate) fn skills(&self) -> &[Skill] {
        &self.get().skills
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn what_the_thread_found_is_what_every_use_reads() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().canonicalize().unwrap();
        let dir = workspace.join(".zero/skills/notes");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: notes\ndescription: d\n---\nx\n",
        )
        .unwrap();
        let paths = SearchPaths {
            given: Vec::new(),
            workspace,
            user: None::<PathBuf>,
        };
        let finding = Finding::start(paths.clone(), Vec::new());
        assert_eq!(finding.skills().len(), 1);
        assert_eq!(finding.skills()[0].name, "notes");
        let only = Finding::start(paths, vec!["other".into()]);
        assert!(only.skills().is_empty());
        assert_eq!(only.get().warnings.len(), 1);
        assert!(Finding::none().skills().is_empty());
    }
}
