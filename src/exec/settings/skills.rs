//! The skills the run offers (`--skills-dir`, `--skill`, `--no-skills`): found once, when the
//! settings are resolved, and only for the modes that show them to the model or the caller.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cli::ExecArgs;
use crate::skills::{self, SearchPaths, Skill};
use crate::tasks::HandedSkills;

use super::Mode;
use crate::exec::failure::Failure;
use crate::exec::flags;
use crate::exec::inputs::Environment;

/// The run's skills.
pub(crate) struct SkillSettings {
    /// The skills offered, sorted by name: none with `--no-skills` or in a mode that shows
    /// none.
    pub(crate) offered: Arc<[Skill]>,
    /// What discovery stepped over (broken `SKILL.md`s, unknown `--skill` names), for the
    /// run's start.
    pub(crate) warnings: Vec<String>,
    /// `--skills-dir`, canonical, for a specialist to find the same skills.
    dirs: Vec<PathBuf>,
}

impl SkillSettings {
    /// The skills the flags and the environment `env` describe for `workspace`, found when
    /// `mode` needs them. A `--skills-dir` that is not a directory is a usage error.
    pub(super) fn resolve(
        args: &ExecArgs,
        env: &Environment,
        workspace: &Path,
        mode: Mode,
    ) -> Result<Self, Failure> {
        let dirs = args
            .skills_dir
            .iter()
            .map(|dir| flags::directory(dir, workspace, "--skills-dir"))
            .collect::<Result<Vec<_>, _>>()?;
        if args.no_skills || mode == Mode::ListSpecialists {
            return Ok(SkillSettings {
                offered: Arc::from([]),
                warnings: Vec::new(),
                dirs,
            });
        }
        let paths = SearchPaths::new(workspace, dirs.clone(), |name| env.var_os(name));
        let mut found = skills::discover(&paths);
        if !args.skill.is_empty() {
            found.keep_only(&args.skill);
        }
        Ok(SkillSettings {
            offered: Arc::from(found.skills),
            warnings: found.warnings.iter().map(ToString::to_string).collect(),
            dirs,
        })
    }

    /// The directories of the offered skills the policy must make readable.
    pub(super) fn read_roots(&self) -> Vec<PathBuf> {
        skills::read_roots(&self.offered)
    }

    /// What a specialist may be given of them: the names offered, and where they were found.
    pub(super) fn handed(&self) -> HandedSkills {
        HandedSkills {
            offered: self
                .offered
                .iter()
                .map(|skill| skill.name.clone())
                .collect(),
            dirs: self.dirs.clone(),
        }
    }
}
