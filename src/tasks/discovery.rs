//! Finding the specialists: the built-in ones, then the user's, then the project's. A later
//! definition of a name replaces an earlier one.
//!
//! Precedence, lowest first:
//!
//! 1. built-in: `explorer`, `code-review`, `worker`
//! 2. `~/.claude/agents/*.md` — Claude Code, user
//! 3. `$XDG_CONFIG_HOME/zero/specialists/*.md`, else `~/.config/zero/specialists/*.md`
//! 4. `<workspace>/.claude/agents/*.md` — Claude Code, project
//! 5. `<workspace>/.zero/specialists/*.md`
//!
//! The project beats the user because the repository knows what its work needs and its team
//! shares it. At each level zero's own directory beats Claude Code's, because a manifest
//! written for zero says exactly what zero should do where a Claude agent file is translated.
//!
//! The workspace's directories are read beneath the workspace: every component of a path,
//! links included, must resolve inside it (`fsutil::open_beneath`). A checkout is not the
//! user's to vouch for, and a manifest's instructions become a specialist's prompt and its
//! name and description are listed to the model, so a `.zero/specialists` or a manifest that
//! links out of the workspace is not read (a warning names it). The user's own directories
//! follow their links: they are the user's, and linking them in from a dotfiles checkout is
//! the usual way to share them between machines.
//!
//! Discovery never fails: a missing directory is simply empty, and a manifest that cannot be
//! loaded becomes a [`Warning`] while the others still load. It reads the file system, so a
//! caller on an async worker runs it on a blocking thread.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::manifest::{self, Dialect, Ignored, MANIFEST_LIMIT, ManifestError, Parsed};
use super::{Source, Specialist};
use crate::fsutil::{self, BeneathError, OpenError, Root};

/// The built-in manifests, compiled in.
const BUILTINS: [&str; 3] = [
    include_str!("builtin/explorer.md"),
    include_str!("builtin/code-review.md"),
    include_str!("builtin/worker.md"),
];

/// Where discovery looks. Explicit rather than read from the environment inside
/// [`discover`], so tests (and a `Task` tool with its own idea of home) can point it anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchPaths {
    /// The workspace root; the project's manifests live under it.
    pub(crate) workspace: PathBuf,
    /// The user's home directory, for `~/.claude/agents` and the `~/.config` fallback.
    pub(crate) home: Option<PathBuf>,
    /// The config base directory (`$XDG_CONFIG_HOME`); when `None`, `~/.config` is used.
    pub(crate) config_home: Option<PathBuf>,
}

impl SearchPaths {
    /// The paths for `workspace` under the `HOME` and `XDG_CONFIG_HOME` that the environment
    /// `var` looks up, by the one reading of the XDG rules (`environ`: unset, empty or
    /// relative values are ignored), so specialists and `config.toml` come from one root.
    pub(crate) fn new(workspace: &Path, var: impl Fn(&str) -> Option<OsString>) -> Self {
        SearchPaths {
            workspace: workspace.to_path_buf(),
            home: crate::environ::home(&var),
            config_home: crate::environ::Base::Config.dir(&var),
        }
    }

    /// The manifest directories, lowest precedence first.
    fn layers(&self) -> Vec<Layer> {
        let config = self
            .config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|home| home.join(".config")));
        let mut layers = Vec::new();
        if let Some(home) = &self.home {
            let dir = home.join(".claude").join("agents");
            layers.push(Layer::users(dir, Dialect::ClaudeCode));
        }
        if let Some(config) = config {
            let dir = config.join("zero").join("specialists");
            layers.push(Layer::users(dir, Dialect::Zero));
        }
        layers.push(self.workspaces(".claude/agents", Dialect::ClaudeCode));
        layers.push(self.workspaces(".zero/specialists", Dialect::Zero));
        layers
    }

    /// The workspace's directory `relative`, read beneath it.
    fn workspaces(&self, relative: &str, dialect: Dialect) -> Layer {
        Layer {
            dir: self.workspace.join(relative),
            dialect,
            beneath: Some(Root::new(self.workspace.clone())),
        }
    }
}

/// One directory manifests are read from, and how.
#[derive(Debug, Clone)]
struct Layer {
    /// The directory.
    dir: PathBuf,
    /// The dialect its manifests are written in.
    dialect: Dialect,
    /// For a directory of the workspace, the workspace: the directory and each manifest in it
    /// must resolve beneath it. `None` for the user's own directories, whose links are
    /// followed (see the module documentation).
    beneath: Option<Root>,
}

impl Layer {
    /// One of the user's own directories.
    fn users(dir: PathBuf, dialect: Dialect) -> Layer {
        Layer {
            dir,
            dialect,
            beneath: None,
        }
    }

    /// The manifests in the directory: visible `*.md` files (symlinks followed, though a
    /// workspace's are read only if they resolve inside it), sorted by file name. Dot files
    /// are editor and tool droppings, not manifests.
    fn manifest_files(&self) -> Result<Vec<PathBuf>, BeneathError> {
        fsutil::dir_within(self.beneath.as_ref(), &self.dir)?;
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(OpenError::Io)? {
            let path = entry.map_err(OpenError::Io)?.path();
            let visible = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| !name.starts_with('.'));
            if visible && path.extension().is_some_and(|ext| ext == "md") && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        Ok(files)
    }

    /// Reads and parses the manifest at `path`, in this directory. Only a regular file of at
    /// most [`MANIFEST_LIMIT`] bytes is read: a FIFO swapped in after the listing saw a file
    /// is refused rather than waited on.
    fn load(&self, path: &Path) -> Result<Parsed, ManifestError> {
        let (bytes, _) = fsutil::read_within(self.beneath.as_ref(), path, MANIFEST_LIMIT)?;
        manifest::parse_file(bytes, path, self.dialect)
    }
}

/// What discovery found.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    /// The specialists that won, one per name, sorted by name.
    pub(crate) specialists: Vec<Specialist>,
    /// Problems that did not stop discovery, in the order found.
    pub(crate) warnings: Vec<Warning>,
}

/// A problem discovery met and stepped over.
#[derive(Debug)]
pub(crate) enum Warning {
    /// A manifest could not be loaded and was skipped.
    Skipped {
        /// The manifest.
        source: Source,
        /// Why it could not be loaded.
        error: ManifestError,
    },
    /// A manifest loaded, but part of it was left out.
    Ignored {
        /// The manifest.
        source: Source,
        /// What was left out.
        ignored: Ignored,
    },
    /// Two manifests in one directory define the same name; the later file (by name) wins.
    Duplicate {
        /// The specialist's name.
        name: String,
        /// The manifest that was used.
        kept: PathBuf,
        /// The manifest that was dropped.
        dropped: PathBuf,
    },
    /// A manifest directory exists but could not be listed, or (in the workspace) resolves
    /// outside it.
    UnreadableDirectory {
        /// The directory.
        path: PathBuf,
        /// Why it could not be listed.
        error: BeneathError,
    },
}

impl fmt::Display for Warning {
    /// One line naming the file (and line, when known) and what happened.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Skipped { source, error } => {
                write!(f, "specialist manifest {source}")?;
                if let Some(line) = error.line() {
                    write!(f, ":{line}")?;
                }
                write!(f, ": {error} (skipped)")
            }
            Warning::Ignored { source, ignored } => {
                write!(f, "specialist manifest {source}: {ignored}")
            }
            Warning::Duplicate {
                name,
                kept,
                dropped,
            } => write!(
                f,
                "specialist manifests {} and {} both define `{name}`; using {}",
                dropped.display(),
                kept.display(),
                kept.display()
            ),
            Warning::UnreadableDirectory { path, error } => write!(
                f,
                "cannot read the specialist directory {}: {error}",
                path.display()
            ),
        }
    }
}

/// Finds every specialist: built-in, then user, then project, a later one replacing an
/// earlier one of the same name (the module docs give the full order).
pub(crate) fn discover(paths: &SearchPaths) -> Discovery {
    let mut found = Found::default();
    for text in BUILTINS {
        found.admit(
            manifest::parse(text, Dialect::Zero, Source::Builtin),
            Source::Builtin,
        );
    }
    let layers = paths.layers();
    let identities: Vec<PathBuf> = layers
        .iter()
        .map(|layer| {
            layer
                .dir
                .canonicalize()
                .unwrap_or_else(|_| layer.dir.clone())
        })
        .collect();
    for (index, layer) in layers.iter().enumerate() {
        let identity = &identities[index];
        // A directory reached twice (a workspace that is the home directory) is read once, at
        // its higher precedence, so its warnings are not doubled; and the way it was first
        // reached, so the user's own directory is read as the user's even where the workspace
        // reaches it too (nothing is read that the user's layer would not read).
        if identities[index + 1..].contains(identity) {
            continue;
        }
        let first = identities.iter().position(|other| other == identity);
        let beneath = first.map_or(&layer.beneath, |first| &layers[first].beneath);
        found.read_directory(&Layer {
            beneath: beneath.clone(),
            ..layer.clone()
        });
    }
    Discovery {
        specialists: found.specialists.into_values().collect(),
        warnings: found.warnings,
    }
}

/// Discovery's running state: the winner so far for each name, and the warnings.
#[derive(Default)]
struct Found {
    specialists: BTreeMap<String, Specialist>,
    warnings: Vec<Warning>,
}

impl Found {
    /// Loads every `*.md` in `layer`, in file-name order. A missing directory is empty.
    fn read_directory(&mut self, layer: &Layer) {
        let files = match layer.manifest_files() {
            Ok(files) => files,
            Err(BeneathError::Open(OpenError::Io(error)))
                if error.kind() == io::ErrorKind::NotFound =>
            {
                return;
            }
            Err(error) => {
                self.warnings.push(Warning::UnreadableDirectory {
                    path: layer.dir.clone(),
                    error,
                });
                return;
            }
        };
        let mut in_this_directory: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in files {
            let loaded = layer.load(&path);
            let Some(name) = self.admit(loaded, Source::File(path.clone())) else {
                continue;
            };
            if let Some(dropped) = in_this_directory.insert(name.clone(), path.clone()) {
                self.warnings.push(Warning::Duplicate {
                    name,
                    kept: path,
                    dropped,
                });
            }
        }
    }

    /// Records a loaded manifest (replacing any earlier one of its name) and its notices, or
    /// the reason it was skipped. Returns the name it defined.
    fn admit(&mut self, loaded: Result<Parsed, ManifestError>, source: Source) -> Option<String> {
        match loaded {
            Ok(parsed) => {
                self.warnings
                    .extend(parsed.ignored.into_iter().map(|ignored| Warning::Ignored {
                        source: source.clone(),
                        ignored,
                    }));
                let name = parsed.specialist.name.clone();
                self.specialists.insert(name.clone(), parsed.specialist);
                Some(name)
            }
            Err(error) => {
                self.warnings.push(Warning::Skipped { source, error });
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// A home, a config home and a workspace, all empty, in one temporary directory.
    struct Fixture {
        _root: tempfile::TempDir,
        paths: SearchPaths,
    }

    impl Fixture {
        fn new() -> Self {
            let root = tempfile::tempdir().unwrap();
            let home = root.path().join("home");
            let workspace = root.path().join("workspace");
            fs::create_dir_all(&home).unwrap();
            fs::create_dir_all(&workspace).unwrap();
            let paths = SearchPaths {
                workspace,
                home: Some(home),
                config_home: Some(root.path().join("config")),
            };
            Fixture { _root: root, paths }
        }

        /// The layer directories, lowest precedence first.
        fn dirs(&self) -> [PathBuf; 4] {
            let home = self.paths.home.as_ref().unwrap();
            let config = self.paths.config_home.as_ref().unwrap();
            let workspace = &self.paths.workspace;
            [
                home.join(".claude/agents"),
                config.join("zero/specialists"),
                workspace.join(".claude/agents"),
                workspace.join(".zero/specialists"),
            ]
        }

        fn write(&self, dir: &Path, file: &str, text: &str) -> PathBuf {
            fs::create_dir_all(dir).unwrap();
            let path = dir.join(file);
            fs::write(&path, text).unwrap();
            path
        }

        fn discover(&self) -> Discovery {
            discover(&self.paths)
        }
    }

    fn manifest(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\nInstructions.\n")
    }

    fn names(discovery: &Discovery) -> Vec<&str> {
        discovery
            .specialists
            .iter()
            .map(|s| s.name.as_str())
            .collect()
    }

    fn find<'a>(discovery: &'a Discovery, name: &str) -> &'a Specialist {
        discovery
            .specialists
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no specialist `{name}`"))
    }

    #[test]
    fn without_manifest_directories_the_builtins_load_cleanly() {
        let discovery = Fixture::new().discover();
        assert_eq!(names(&discovery), ["code-review", "explorer", "worker"]);
        assert!(discovery.warnings.is_empty(), "{:?}", discovery.warnings);
        assert!(
            discovery
                .specialists
                .iter()
                .all(|s| s.source == Source::Builtin)
        );
        let read_only = ["glob", "grep", "list_directory", "read_file"];
        assert_eq!(find(&discovery, "explorer").tools, read_only);
        assert_eq!(find(&discovery, "code-review").tools, read_only);
        assert_eq!(
            find(&discovery, "worker").tools,
            [
                "apply_patch",
                "bash",
                "edit_file",
                "glob",
                "grep",
                "list_directory",
                "read_file",
                "update_plan",
                "write_file"
            ]
        );
    }

    #[test]
    fn later_layers_replace_earlier_ones_by_name() {
        let fixture = Fixture::new();
        let dirs = fixture.dirs();
        let files: Vec<PathBuf> = dirs
            .iter()
            .enumerate()
            .map(|(layer, dir)| {
                fixture.write(
                    dir,
                    "explorer.md",
                    &manifest("explorer", &format!("layer {layer}")),
                )
            })
            .collect();
        // Peel the layers off from the top: each time, the highest one left wins.
        for layer in (0..dirs.len()).rev() {
            let discovery = fixture.discover();
            let explorer = find(&discovery, "explorer");
            assert_eq!(explorer.description, format!("layer {layer}"));
            assert_eq!(explorer.source, Source::File(files[layer].clone()));
            fs::remove_file(&files[layer]).unwrap();
        }
        assert_eq!(
            find(&fixture.discover(), "explorer").source,
            Source::Builtin
        );
    }

    #[test]
    fn every_layer_adds_its_own_specialists_sorted_by_name() {
        let fixture = Fixture::new();
        for (layer, dir) in fixture.dirs().iter().enumerate() {
            let name = format!("extra-{}", 4 - layer);
            fixture.write(dir, &format!("{name}.md"), &manifest(&name, "d"));
        }
        let discovery = fixture.discover();
        assert_eq!(
            names(&discovery),
            [
                "code-review",
                "explorer",
                "extra-1",
                "extra-2",
                "extra-3",
                "extra-4",
                "worker"
            ]
        );
        assert!(discovery.warnings.is_empty(), "{:?}", discovery.warnings);
    }

    #[test]
    fn user_manifests_fall_back_to_dot_config_without_xdg_config_home() {
        let mut fixture = Fixture::new();
        let home = fixture.paths.home.clone().unwrap();
        fixture.write(
            &home.join(".config/zero/specialists"),
            "mine.md",
            &manifest("mine", "d"),
        );
        assert!(!names(&fixture.discover()).contains(&"mine"));
        fixture.paths.config_home = None;
        assert!(names(&fixture.discover()).contains(&"mine"));
    }

    #[test]
    fn claude_agent_files_are_read_in_the_claude_dialect() {
        let fixture = Fixture::new();
        let path = fixture.write(
            &fixture.dirs()[2],
            "reviewer.md",
            "---\nname: reviewer\ndescription: Reviews.\ntools: Read, Grep, WebFetch\ncolor: \
             red\n---\nReview.\n",
        );
        let discovery = fixture.discover();
        assert_eq!(find(&discovery, "reviewer").tools, ["grep", "read_file"]);
        let warnings: Vec<String> = discovery.warnings.iter().map(|w| w.to_string()).collect();
        let source = path.display();
        assert_eq!(
            warnings,
            [format!(
                "specialist manifest {source}: Claude Code tool `WebFetch` is not given to \
                 specialists in `tools`; left out"
            )]
        );
    }

    #[test]
    fn a_broken_manifest_is_skipped_with_its_file_and_line() {
        let fixture = Fixture::new();
        let dir = &fixture.dirs()[3];
        let broken = fixture.write(
            dir,
            "broken.md",
            "---\nname: broken\ndescription: d\n  bad: indent\n---\nBody.\n",
        );
        fixture.write(dir, "fine.md", &manifest("fine", "d"));
        let discovery = fixture.discover();
        assert!(names(&discovery).contains(&"fine"));
        assert!(!names(&discovery).contains(&"broken"));
        assert_eq!(discovery.warnings.len(), 1, "{:?}", discovery.warnings);
        let warning = discovery.warnings[0].to_string();
        let prefix = format!(
            "specialist manifest {}:4: invalid front matter: ",
            broken.display()
        );
        assert!(warning.starts_with(&prefix), "{warning}");
        assert!(warning.ends_with("(skipped)"), "{warning}");
    }

    #[test]
    fn only_visible_md_files_are_manifests() {
        let fixture = Fixture::new();
        let dir = &fixture.dirs()[3];
        fixture.write(dir, "notes.txt", "not a manifest");
        fixture.write(dir, ".draft.md", "---\n---\n");
        fixture.write(dir, "README", "hello");
        fs::create_dir_all(dir.join("nested.md")).unwrap();
        let discovery = fixture.discover();
        assert_eq!(names(&discovery), ["code-review", "explorer", "worker"]);
        assert!(discovery.warnings.is_empty(), "{:?}", discovery.warnings);
    }

    #[test]
    fn two_files_defining_one_name_in_a_directory_warn_and_the_later_wins() {
        let fixture = Fixture::new();
        let dir = &fixture.dirs()[3];
        let first = fixture.write(dir, "a.md", &manifest("twin", "first"));
        let second = fixture.write(dir, "b.md", &manifest("twin", "second"));
        let discovery = fixture.discover();
        assert_eq!(find(&discovery, "twin").description, "second");
        assert_eq!(
            discovery
                .warnings
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>(),
            [format!(
                "specialist manifests {} and {} both define `twin`; using {}",
                first.display(),
                second.display(),
                second.display()
            )]
        );
    }

    /// The warnings' text.
    fn warnings(discovery: &Discovery) -> Vec<String> {
        discovery.warnings.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn only_a_regular_file_of_bounded_size_is_read() {
        let fixture = Fixture::new();
        for dir in [&fixture.dirs()[1], &fixture.dirs()[3]] {
            fs::create_dir_all(dir).unwrap();
            // Returns at once: a FIFO with no writer is never opened for a blocking read.
            nix::unistd::mkfifo(&dir.join("fifo.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
            let huge = fs::File::create(dir.join("huge.md")).unwrap();
            huge.set_len(MANIFEST_LIMIT + 1).unwrap();
            fs::write(dir.join("latin1.md"), b"---\nname: caf\xe9\n---\n").unwrap();
        }
        let discovery = fixture.discover();
        assert_eq!(names(&discovery), ["code-review", "explorer", "worker"]);
        let warnings = warnings(&discovery);
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        for (warning, says) in warnings.iter().zip([
            "larger than 1048576 bytes",
            "not UTF-8",
            "larger than 1048576 bytes",
            "not UTF-8",
        ]) {
            assert!(warning.contains(says), "{warning}");
        }
    }

    #[test]
    fn a_workspace_directory_or_manifest_linking_out_of_it_is_not_read() {
        let fixture = Fixture::new();
        let outside = fixture._root.path().join("outside");
        fixture.write(&outside, "stray.md", &manifest("stray", "from outside"));
        let [_, _, claude, zero] = fixture.dirs();
        fs::create_dir_all(zero.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &zero).unwrap();
        fs::create_dir_all(&claude).unwrap();
        std::os::unix::fs::symlink(outside.join("stray.md"), claude.join("linked.md")).unwrap();
        // A link that stays inside the workspace is read.
        let notes = fixture.paths.workspace.join("notes");
        fixture.write(&notes, "kept.md", &manifest("kept", "from inside"));
        std::os::unix::fs::symlink("../../notes/kept.md", claude.join("kept.md")).unwrap();

        let discovery = fixture.discover();
        assert_eq!(
            names(&discovery),
            ["code-review", "explorer", "kept", "worker"]
        );
        let workspace = fixture.paths.workspace.display();
        assert_eq!(
            warnings(&discovery),
            [
                format!(
                    "specialist manifest {}: cannot read the manifest: it resolves outside \
                     {workspace} (skipped)",
                    claude.join("linked.md").display()
                ),
                format!(
                    "cannot read the specialist directory {}: it resolves outside {workspace}",
                    zero.display()
                ),
            ]
        );
    }

    #[test]
    fn the_users_own_directories_follow_their_links() {
        let fixture = Fixture::new();
        let dotfiles = fixture._root.path().join("dotfiles");
        fixture.write(&dotfiles, "mine.md", &manifest("mine", "d"));
        let [claude, zero, ..] = fixture.dirs();
        fs::create_dir_all(claude.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&dotfiles, &claude).unwrap();
        fs::create_dir_all(&zero).unwrap();
        std::os::unix::fs::symlink(dotfiles.join("mine.md"), zero.join("other.md")).unwrap();
        let discovery = fixture.discover();
        assert!(names(&discovery).contains(&"mine"));
        assert!(discovery.warnings.is_empty(), "{:?}", discovery.warnings);
    }

    #[test]
    fn a_workspace_that_is_home_reads_its_claude_agents_once() {
        let mut fixture = Fixture::new();
        fixture.paths.workspace = fixture.paths.home.clone().unwrap();
        let dir = &fixture.dirs()[0];
        fixture.write(
            dir,
            "odd.md",
            "---\nname: odd\ndescription: d\nshade: x\n---\nB.\n",
        );
        let discovery = fixture.discover();
        assert!(names(&discovery).contains(&"odd"));
        assert_eq!(discovery.warnings.len(), 1, "{:?}", discovery.warnings);
    }
}
