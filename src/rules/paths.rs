//! A file tool's rule pattern, `src/**`, and the paths a call touches.
//!
//! Patterns are globs (`*` within one path component, `**` across them) relative to the
//! workspace: `src/**`, `./src/**` and Claude Code's `/src/**` (relative to the project) all
//! name the workspace's `src`; `//etc/**` is the absolute `/etc/**` and `~/x` is beneath the
//! home directory. `dir/**` also matches `dir` itself, so a search rooted there is covered.
//!
//! A path is matched as it resolves — exactly as the tool will open it
//! (`tools::policy::resolve_path`, the tools' own resolution: `..` and links component by
//! component, as the kernel has them, so `link/../x` is beside the link's target) — and as the
//! call spells it (made absolute against the workspace, `.` and `..` folded): a deny matches
//! when either does, an allow only when both do, so neither a link nor a `..` carries a call
//! around a rule.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::tools::policy::{NotADirectory, resolve_path};

/// A compiled path pattern.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    /// The absolute globs it stands for (the directory itself too, for `dir/**`).
    globs: Vec<GlobMatcher>,
}

impl PathPattern {
    /// Compiles `text` for the workspace `workspace` (canonical) and the home directory
    /// `home`; the error says what is wrong with it.
    pub(crate) fn parse(
        text: &str,
        workspace: &Path,
        home: Option<&Path>,
    ) -> Result<PathPattern, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err("the path pattern is empty".into());
        }
        let absolute = if let Some(rest) = trimmed.strip_prefix("//") {
            format!("/{rest}")
        } else if let Some(rest) = trimmed.strip_prefix("~/") {
            let home = home.ok_or("`~/` needs HOME to be set")?;
            format!("{}/{rest}", globset::escape(&home.to_string_lossy()))
        } else {
            let rest = trimmed.trim_start_matches("./").trim_start_matches('/');
            let root = globset::escape(&workspace.to_string_lossy());
            match rest {
                "" | "." => root,
                rest => format!("{}/{rest}", root.trim_end_matches('/')),
            }
        };
        let mut sources = vec![absolute.clone()];
        if let Some(directory) = absolute.strip_suffix("/**") {
            sources.push(directory.to_owned());
        }
        let globs = sources
            .iter()
            .map(|source| {
                GlobBuilder::new(source)
                    .literal_separator(true)
                    .build()
                    .map(|glob| glob.compile_matcher())
                    .map_err(|error| format!("the path pattern is not a valid glob ({error})"))
            })
            .collect::<Result<_, _>>()?;
        Ok(PathPattern { globs })
    }

    /// Whether `path` (absolute) matches.
    pub(crate) fn matches(&self, path: &Path) -> bool {
        self.globs.iter().any(|glob| glob.is_match(path))
    }
}

/// A path a call touches, in the two forms it is matched in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Touched {
    /// As spelled, made absolute and folded.
    pub(crate) spelled: PathBuf,
    /// As it resolves through symbolic links.
    pub(crate) resolved: PathBuf,
}

impl Touched {
    /// `path` as a call names it, relative to `workspace`.
    pub(crate) fn new(workspace: &Path, path: &str) -> Touched {
        let spelled = fold(&workspace.join(path));
        let resolved = resolve_path(workspace, path).unwrap_or_else(|NotADirectory(file)| file);
        Touched { spelled, resolved }
    }

    /// Both forms, for matching.
    pub(crate) fn forms(&self) -> [&Path; 2] {
        [&self.spelled, &self.resolved]
    }
}

/// `path` with `.` and `..` folded away, without looking at the disk.
fn fold(path: &Path) -> PathBuf {
    let mut folded = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::Normal(name) => folded.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> PathPattern {
        PathPattern::parse(text, Path::new("/ws"), Some(Path::new("/home/u"))).unwrap()
    }

    #[test]
    fn patterns_are_relative_to_the_workspace_in_every_spelling() {
        for text in ["src/**", "./src/**", "/src/**"] {
            let p = pattern(text);
            assert!(p.matches(Path::new("/ws/src/a/b.rs")), "{text}");
            assert!(p.matches(Path::new("/ws/src")), "{text}");
            assert!(!p.matches(Path::new("/ws/srcx/a.rs")), "{text}");
            assert!(!p.matches(Path::new("/ws/.github/src/a")), "{text}");
        }
        assert!(pattern("//etc/**").matches(Path::new("/etc/passwd")));
        assert!(pattern("~/.ssh/*").matches(Path::new("/home/u/.ssh/id")));
        assert!(pattern("*.md").matches(Path::new("/ws/README.md")));
        assert!(!pattern("*.md").matches(Path::new("/ws/docs/a.md")));
        assert!(pattern("**/*.md").matches(Path::new("/ws/docs/a.md")));
        assert!(PathPattern::parse("a[", Path::new("/ws"), None).is_err());
        assert!(PathPattern::parse("~/x", Path::new("/ws"), None).is_err());
    }

    #[test]
    fn a_workspace_path_with_glob_characters_is_taken_literally() {
        let p = PathPattern::parse("src/**", Path::new("/w[1]"), None).unwrap();
        assert!(p.matches(Path::new("/w[1]/src/a")));
        assert!(!p.matches(Path::new("/w1/src/a")));
    }

    #[test]
    fn a_path_is_folded_and_resolved_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(ws.join(".github")).unwrap();
        std::os::unix::fs::symlink(ws.join(".github"), ws.join("link")).unwrap();
        let touched = Touched::new(&ws, "src/../link/new.yml");
        assert_eq!(touched.spelled, ws.join("link/new.yml"));
        assert_eq!(touched.resolved, ws.join(".github/new.yml"));
        assert_eq!(Touched::new(&ws, "/etc/../x").spelled, Path::new("/x"));
    }

    #[test]
    fn a_dotdot_after_a_link_is_resolved_as_the_kernel_resolves_it() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(ws.join(".github/workflows")).unwrap();
        std::os::unix::fs::symlink(".github/workflows", ws.join("l")).unwrap();
        let touched = Touched::new(&ws, "l/../workflows/evil.yml");
        assert_eq!(touched.resolved, ws.join(".github/workflows/evil.yml"));
        assert_eq!(touched.spelled, ws.join("workflows/evil.yml"));
    }
}
