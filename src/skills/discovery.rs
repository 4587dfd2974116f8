//! Finding the skills: every directory holding a `SKILL.md` in the skill directories, the
//! first definition of a name winning.
//!
//! Precedence, highest first:
//!
//! 1. the directories `--skills-dir` names, in the order given — the caller's explicit choice
//! 2. `<workspace>/.zero/skills/` — zero's own
//! 3. `<workspace>/.agents/skills/` — the location agents share
//! 4. `<workspace>/.claude/skills/` — Claude Code's
//! 5. `$XDG_CONFIG_HOME/zero/skills/` (else `~/.config/zero/skills/`) — the user's
//!
//! The workspace beats the user because the repository knows what its work needs and its team
//! shares it, as with specialists; among the workspace's directories zero's own comes first,
//! then the shared one, then Claude Code's, so a skill written for zero is the one used.
//!
//! The workspace's directories are read beneath the workspace (`fsutil::read_within`): a
//! skill's instructions go to the model, so a `SKILL.md` or a skill directory that links out
//! of the checkout is not read (a warning names it). The caller's and the user's directories
//! follow their links, as the user's specialists do.
//!
//! Discovery never fails: a missing directory is empty, and a skill that cannot be loaded
//! becomes a [`Warning`] naming the file (and the line) while the others still load. It
//! reads the file system; `exec` runs it before the run's async runtime starts.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::skill_md::{self, SkillError};
use super::{Origin, SKILL_FILE, Skill};
use crate::environ::{self, Base};
use crate::fsutil::{self, BeneathError, OpenError, Root};

/// The largest `SKILL.md` read: the format asks for a few hundred lines, and a bigger file
/// would not be read whole into the model's context anyway.
const SKILL_LIMIT: u64 = 256 * 1024;

/// The workspace's skill directories, highest precedence first.
const WORKSPACE_DIRS: [&str; 3] = [".zero/skills", ".agents/skills", ".claude/skills"];

/// Where discovery looks. Explicit rather than read from the environment inside
/// [`discover`], so tests can point it anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchPaths {
    /// The caller's directories (`--skills-dir`), in order.
    pub(crate) given: Vec<PathBuf>,
    /// The workspace root (canonical).
    pub(crate) workspace: PathBuf,
    /// The user's skill directory, when there is a config base directory.
    pub(crate) user: Option<PathBuf>,
}

impl SearchPaths {
    /// The paths for `workspace` and the `given` directories, the user's from the
    /// environment `var` looks up (the XDG rules `environ` reads for every config file).
    pub(crate) fn new(
        workspace: &Path,
        given: Vec<PathBuf>,
        var: impl Fn(&str) -> Option<OsString>,
    ) -> Self {
        SearchPaths {
            given,
            workspace: workspace.to_path_buf(),
            user: environ::zero_dir(Base::Config, &var).map(|dir| dir.join("skills")),
        }
    }

    /// The skill directories, highest precedence first.
    fn layers(&self) -> Vec<Layer> {
        let given = self.given.iter().map(|dir| Layer {
            dir: dir.clone(),
            origin: Origin::Given,
            beneath: None,
        });
        let root = Root::new(self.workspace.clone());
        let workspace = WORKSPACE_DIRS.iter().map(move |relative| Layer {
            dir: self.workspace.join(relative),
            origin: Origin::Workspace,
            beneath: Some(root.clone()),
        });
        let user = self.user.iter().map(|dir| Layer {
            dir: dir.clone(),
            origin: Origin::User,
            beneath: None,
        });
        given.chain(workspace).chain(user).collect()
    }
}

/// One directory skills are read from, and how.
#[derive(Debug, Clone)]
struct Layer {
    /// The directory.
    dir: PathBuf,
    /// What kind of directory it is.
    origin: Origin,
    /// For a directory of the workspace, the workspace: everything read must resolve beneath
    /// it. `None` for the caller's and the user's own directories, whose links are followed.
    beneath: Option<Root>,
}

impl Layer {
    /// The skill directories in it: visible entries that are directories (links followed;
    /// a workspace's are read only if they resolve inside it), sorted by name.
    fn skill_dirs(&self) -> Result<Vec<PathBuf>, BeneathError> {
        fsutil::dir_within(self.beneath.as_ref(), &self.dir)?;
        let mut dirs = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(OpenError::Io)? {
            let entry = entry.map_err(OpenError::Io)?;
            let path = entry.path();
            let visible = !entry.file_name().as_encoded_bytes().starts_with(b".");
            // The directory's own listing says what an entry is; only a link costs a look.
            let kind = entry.file_type().map_err(OpenError::Io)?;
            if visible && (kind.is_dir() || (kind.is_symlink() && path.is_dir())) {
                dirs.push(path);
            }
        }
        dirs.sort();
        Ok(dirs)
    }

    /// The skill in `dir`, `None` when it has no `SKILL.md` (a directory of shared files is
    /// not a skill), or why it could not be loaded.
    fn load(&self, dir: &Path) -> Result<Option<Skill>, Warning> {
        let file = dir.join(SKILL_FILE);
        let bytes = match fsutil::read_within(self.beneath.as_ref(), &file, SKILL_LIMIT) {
            Ok((bytes, _)) => bytes,
            Err(BeneathError::Open(OpenError::Io(error)))
                if error.kind() == io::ErrorKind::NotFound =>
            {
                return Ok(None);
            }
            Err(error) => return Err(Warning::Unreadable { file, error }),
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(Warning::NotUtf8 { file });
        };
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let written = skill_md::parse(&text, &name).map_err(|refused| Warning::Refused {
            file: file.clone(),
            line: refused.line,
            error: refused.error,
        })?;
        Ok(Some(Skill {
            name: written.name,
            description: written.description,
            allowed_tools: written.allowed_tools,
            body: written.body,
            dir: dir.to_path_buf(),
            origin: self.origin,
        }))
    }
}

/// What discovery found.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    /// The skills that won, one per name, sorted by name.
    pub(crate) skills: Vec<Skill>,
    /// Problems that did not stop discovery, in the order found.
    pub(crate) warnings: Vec<Warning>,
}

impl Discovery {
    /// Keeps only the skills `names` names (`--skill`), a warning for each name no skill has.
    pub(crate) fn keep_only(&mut self, names: &[String]) {
        self.skills.retain(|skill| names.contains(&skill.name));
        for name in names {
            if !self.skills.iter().any(|skill| &skill.name == name) {
                self.warnings.push(Warning::NotFound { name: name.clone() });
            }
        }
    }
}

/// A problem discovery met and stepped over.
#[derive(Debug)]
pub(crate) enum Warning {
    /// A `SKILL.md` breaks the format.
    Refused {
        /// The file.
        file: PathBuf,
        /// The line the problem is on.
        line: usize,
        /// What is wrong.
        error: SkillError,
    },
    /// A `SKILL.md` could not be read: not a regular file, too large, or (in the workspace)
    /// resolving outside it.
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        error: BeneathError,
    },
    /// A `SKILL.md` is not UTF-8 text.
    NotUtf8 {
        /// The file.
        file: PathBuf,
    },
    /// A skill directory exists but could not be listed, or (in the workspace) resolves
    /// outside it.
    UnreadableDirectory {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: BeneathError,
    },
    /// `--skill` names a skill that was not found.
    NotFound {
        /// The name.
        name: String,
    },
}

impl fmt::Display for Warning {
    /// One line naming the file (and the line, when there is one) and what happened.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Refused { file, line, error } => {
                write!(f, "skill {}:{line}: {error} (skipped)", file.display())
            }
            Warning::Unreadable { file, error } => {
                write!(
                    f,
                    "skill {}: cannot read it: {error} (skipped)",
                    file.display()
                )
            }
            Warning::NotUtf8 { file } => {
                write!(
                    f,
                    "skill {}: it is not UTF-8 text (skipped)",
                    file.display()
                )
            }
            Warning::UnreadableDirectory { path, error } => write!(
                f,
                "cannot read the skill directory {}: {error}",
                path.display()
            ),
            Warning::NotFound { name } => write!(f, "--skill {name}: no skill of that name"),
        }
    }
}

/// Finds every skill, the first of a name in precedence order winning (the module docs give
/// the order).
pub(crate) fn discover(paths: &SearchPaths) -> Discovery {
    let mut found = Found::default();
    let mut read: Vec<PathBuf> = Vec::new();
    for layer in paths.layers() {
        // A directory reached twice (`--skills-dir .claude/skills`) is read once, at its
        // higher precedence, so its warnings are not doubled.
        let identity = layer
            .dir
            .canonicalize()
            .unwrap_or_else(|_| layer.dir.clone());
        if read.contains(&identity) {
            continue;
        }
        read.push(identity);
        found.read(&layer);
    }
    Discovery {
        skills: found.skills.into_values().collect(),
        warnings: found.warnings,
    }
}

/// Discovery's running state: the winner for each name, and the warnings.
#[derive(Default)]
struct Found {
    skills: BTreeMap<String, Skill>,
    warnings: Vec<Warning>,
}

impl Found {
    /// Loads every skill of `layer` whose name no earlier layer took. A missing directory is
    /// empty.
    fn read(&mut self, layer: &Layer) {
        let dirs = match layer.skill_dirs() {
            Ok(dirs) => dirs,
            Err(BeneathError::Open(OpenError::Io(error)))
                if error.kind() == io::ErrorKind::NotFound =>
            {
                return;
            }
            Err(error) => {
                let path = layer.dir.clone();
                self.warnings
                    .push(Warning::UnreadableDirectory { path, error });
                return;
            }
        };
        for dir in dirs {
            match layer.load(&dir) {
                Ok(Some(skill)) => {
                    self.skills.entry(skill.name.clone()).or_insert(skill);
                }
                Ok(None) => {}
                Err(warning) => self.warnings.push(warning),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// A workspace, a user directory and a given directory, all empty.
    struct Fixture {
        root: tempfile::TempDir,
        paths: SearchPaths,
    }

    impl Fixture {
        fn new() -> Self {
            let root = tempfile::tempdir().unwrap();
            let base = root.path().canonicalize().unwrap();
            let workspace = base.join("workspace");
            fs::create_dir_all(&workspace).unwrap();
            let paths = SearchPaths {
                given: vec![base.join("given")],
                workspace,
                user: Some(base.join("config/zero/skills")),
            };
            Fixture { root, paths }
        }

        /// The skill directories, highest precedence first.
        fn dirs(&self) -> Vec<PathBuf> {
            self.paths
                .layers()
                .into_iter()
                .map(|layer| layer.dir)
                .collect()
        }

        /// Writes the skill `name` in `dir` with `description`, returning its file.
        fn skill(&self, dir: &Path, name: &str, description: &str) -> PathBuf {
            let text = format!("---\nname: {name}\ndescription: {description}\n---\nSteps.\n");
            self.write(&dir.join(name), &text)
        }

        fn write(&self, dir: &Path, text: &str) -> PathBuf {
            fs::create_dir_all(dir).unwrap();
            let file = dir.join(SKILL_FILE);
            fs::write(&file, text).unwrap();
            file
        }
    }

    fn warnings(discovery: &Discovery) -> Vec<String> {
        discovery.warnings.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn each_source_adds_its_skills_and_the_first_of_a_name_wins() {
        let fixture = Fixture::new();
        let dirs = fixture.dirs();
        assert_eq!(dirs.len(), 5);
        for (layer, dir) in dirs.iter().enumerate() {
            fixture.skill(dir, "shared", &format!("layer {layer}"));
            fixture.skill(dir, &format!("only-{layer}"), "d");
        }
        // Peel the layers off from the top: each time, the highest one left wins.
        for (layer, dir) in dirs.iter().enumerate() {
            let discovery = discover(&fixture.paths);
            assert!(discovery.warnings.is_empty(), "{:?}", discovery.warnings);
            assert_eq!(discovery.skills.len(), 6 - layer);
            let shared = discovery
                .skills
                .iter()
                .find(|s| s.name == "shared")
                .unwrap();
            assert_eq!(shared.description, format!("layer {layer}"));
            assert_eq!(shared.dir, dir.join("shared"));
            fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn the_origin_says_which_kind_of_directory_each_came_from() {
        let fixture = Fixture::new();
        let dirs = fixture.dirs();
        for (dir, name) in [(&dirs[0], "a"), (&dirs[2], "b"), (&dirs[4], "c")] {
            fixture.skill(dir, name, "d");
        }
        let origins: Vec<(String, Origin)> = discover(&fixture.paths)
            .skills
            .into_iter()
            .map(|skill| (skill.name, skill.origin))
            .collect();
        let expected = [
            ("a", Origin::Given),
            ("b", Origin::Workspace),
            ("c", Origin::User),
        ];
        assert_eq!(
            origins,
            expected.map(|(name, origin)| (name.to_string(), origin))
        );
    }

    #[test]
    fn a_broken_skill_is_skipped_with_its_file_and_line_and_the_rest_load() {
        let fixture = Fixture::new();
        let dir = &fixture.dirs()[1];
        let broken = fixture.write(&dir.join("broken"), "---\nname: broken\nname2: [\n---\n");
        fixture.skill(dir, "fine", "d");
        fs::create_dir_all(dir.join("assets")).unwrap();
        fs::write(dir.join("README.md"), "not a skill").unwrap();
        let discovery = discover(&fixture.paths);
        let names: Vec<&str> = discovery.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fine"]);
        let said = warnings(&discovery);
        assert_eq!(said.len(), 1, "{said:?}");
        let prefix = format!("skill {}:4: invalid front matter", broken.display());
        assert!(
            said[0].starts_with(&prefix) && said[0].ends_with("(skipped)"),
            "{said:?}"
        );
    }

    #[test]
    fn a_workspace_skill_linking_out_of_it_is_not_read_but_the_users_links_are() {
        let fixture = Fixture::new();
        let outside = fixture.root.path().canonicalize().unwrap().join("outside");
        fixture.skill(&outside, "stray", "from outside");
        let dirs = fixture.dirs();
        fs::create_dir_all(&dirs[1]).unwrap();
        std::os::unix::fs::symlink(outside.join("stray"), dirs[1].join("stray")).unwrap();
        fs::create_dir_all(dirs[4].parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &dirs[4]).unwrap();
        let discovery = discover(&fixture.paths);
        let stray: Vec<Origin> = discovery.skills.iter().map(|s| s.origin).collect();
        assert_eq!(stray, [Origin::User]);
        let workspace = fixture.paths.workspace.display();
        assert_eq!(
            warnings(&discovery),
            [format!(
                "skill {}: cannot read it: it resolves outside {workspace} (skipped)",
                dirs[1].join("stray/SKILL.md").display()
            )]
        );
    }

    #[test]
    fn keep_only_keeps_the_named_skills_and_warns_about_unknown_names() {
        let fixture = Fixture::new();
        for name in ["a", "b"] {
            fixture.skill(&fixture.dirs()[1], name, "d");
        }
        let mut discovery = discover(&fixture.paths);
        discovery.keep_only(&["b".into(), "zz".into()]);
        assert_eq!(discovery.skills.len(), 1);
        assert_eq!(discovery.skills[0].name, "b");
        assert_eq!(warnings(&discovery), ["--skill zz: no skill of that name"]);
    }

    #[test]
    fn a_given_directory_that_is_a_workspace_one_is_read_once() {
        let mut fixture = Fixture::new();
        let claude = fixture.dirs()[3].clone();
        fixture.paths.given = vec![claude.clone()];
        fixture.write(&claude.join("bad"), "no front matter\n");
        assert_eq!(warnings(&discover(&fixture.paths)).len(), 1);
    }
}
