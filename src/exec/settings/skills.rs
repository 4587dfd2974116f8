//! The skills the run offers (`--skills-dir`, `--skill`, `--no-skills`): looked for once, on a
//! thread of their own from the moment the settings are resolved (`skills::Finding`), and only
//! in the modes that show them to the model or the caller; and the skills its launching run
//! had in use (`--skill-in-use`), which narrow it from its start.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cli::ExecArgs;
use crate::rules::{InUse, Narrowing};
use crate::skills::{self, Finding, SearchPaths, Skill};
use crate::tasks::HandedSkills;

use super::Mode;
use crate::exec::failure::Failure;
use crate::exec::flags;
use crate::exec::inputs::Environment;

/// The run's skills.
pub(crate) struct SkillSettings {
    /// The skills offered, being found: none with `--no-skills` or in a mode that shows none.
    found: Arc<Finding>,
    /// `--skills-dir`, canonical, for a specialist to find the same skills.
    dirs: Vec<PathBuf>,
    /// `--skill-in-use`: the launching run's skills in use.
    in_use: Vec<InUse>,
}

impl SkillSettings {
    /// The skills the flags and the environment `env` describe for `workspace`, looked for
    /// when `mode` needs them. A `--skills-dir` that is not a directory is a usage error.
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
        let found = match args.no_skills || mode == Mode::ListSpecialists {
            true => Finding::none(),
            false => {
                let paths = SearchPaths::new(workspace, dirs.clone(), |name| env.var_os(name));
                Finding::start(paths, args.skill.clone())
            }
        };
        let in_use = args
            .skill_in_use
            .iter()
            .map(|json| {
                serde_json::from_str(json).map_err(|error| {
                    Failure::usage(format!(
                        "--skill-in-use {json}: {error} (it takes {{\"skill\": NAME, \
                         \"allowed_tools\": [ENTRY, ...]}})"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SkillSettings {
            found: Arc::new(found),
            dirs,
            in_use,
        })
    }

    /// The run's skills in use in `workspace`: at first the launching run's, then each one the
    /// model loads.
    pub(crate) fn narrowing(&self, workspace: &Path) -> Arc<Narrowing> {
        Arc::new(Narrowing::new(workspace, &self.in_use))
    }

    /// The skills offered, sorted by name (waited for the first time).
    pub(crate) fn offered(&self) -> &[Skill] {
        self.found.skills()
    }

    /// The skills being found, for the `Skill` tool.
    pub(crate) fn finding(&self) -> Arc<Finding> {
        Arc::clone(&self.found)
    }

    /// What discovery stepped over (broken `SKILL.md`s, unknown `--skill` names), each a
    /// warning for the run's start.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let found = self.found.get();
        found.warnings.iter().map(ToString::to_string).collect()
    }

    /// The directories of the offered skills the tools must be able to read.
    pub(crate) fn read_roots(&self) -> Vec<PathBuf> {
        skills::read_roots(self.offered())
    }

    /// What a specialist may be given of them: the skills offered, and where they were found.
    pub(super) fn handed(&self) -> HandedSkills {
        HandedSkills {
            found: Some(self.finding()),
            dirs: self.dirs.clone(),
        }
    }
}
