//! What the rules keep from the model when a search walks a tree. A search (`grep`, `glob`,
//! `list_directory`) is judged by where it starts; beneath that, a file a `read` of it would
//! be refused — a deny rule matches it, or allow rules apply to the search and none matches —
//! is left out of what the search shows, and a directory a deny rule matches is not entered.
//! So `--deny 'Read(secrets/**)'` keeps `secrets/prod.txt`'s lines out of `grep`'s output and
//! its name out of `glob`'s and `list_directory`'s, which is what Claude Code's users mean by
//! the rule.
//!
//! The tools hold it through their policy (`tools::policy::ReadFilter`, which `exec` builds
//! from the rules): `tools` does not know the rules.

use std::path::Path;

use super::rule::{Effect, Pattern, Rule, Ruling, rule_on};
use crate::tools::ToolId;
use crate::tools::policy::ReadFilter;

/// The rules on the search tools, as a filter of what their walks find.
#[derive(Debug, Clone)]
pub(crate) struct Reads {
    rules: Vec<Rule>,
}

/// The search tools, whose walks a [`Reads`] filters.
const SEARCHES: [ToolId; 3] = [ToolId::Grep, ToolId::Glob, ToolId::ListDirectory];

impl Reads {
    /// The filter `rules` make, or `None` when none of them covers a search.
    pub(crate) fn of(rules: &[Rule]) -> Option<Reads> {
        let rules: Vec<Rule> = rules
            .iter()
            .filter(|rule| SEARCHES.iter().any(|id| rule.covers(*id)))
            .filter(|rule| matches!(rule.pattern, Pattern::Path(_) | Pattern::Every))
            .cloned()
            .collect();
        (!rules.is_empty()).then_some(Reads { rules })
    }

    /// How the rules on `tool` rule on `path`; only deny rules when `denies_only`.
    fn ruling(&self, tool: ToolId, path: &Path, denies_only: bool) -> Ruling<'_> {
        let applicable: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|rule| rule.covers(tool) && (!denies_only || rule.effect == Effect::Deny))
            .collect();
        let hits: Vec<&Rule> = applicable
            .iter()
            .copied()
            .filter(|rule| rule.matches_path(&[path]))
            .collect();
        rule_on(&applicable, &hits)
    }
}

impl ReadFilter for Reads {
    fn hides(&self, tool: ToolId, path: &Path) -> bool {
        !matches!(self.ruling(tool, path, false), Ruling::Pass)
    }

    fn prunes(&self, tool: ToolId, dir: &Path) -> bool {
        !matches!(self.ruling(tool, dir, true), Ruling::Pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::rule::Origin;

    fn rule(text: &str, effect: Effect) -> Rule {
        Rule::parse(text, effect, Origin::Flag, Path::new("/ws"), None).unwrap()
    }

    #[test]
    fn a_read_deny_hides_and_prunes_and_a_read_allow_hides_what_it_does_not_cover() {
        let deny = Reads::of(&[rule("Read(secrets/**)", Effect::Deny)]).unwrap();
        for tool in SEARCHES {
            assert!(deny.hides(tool, Path::new("/ws/secrets/prod.txt")));
            assert!(deny.prunes(tool, Path::new("/ws/secrets")));
            assert!(!deny.hides(tool, Path::new("/ws/src/lib.rs")));
        }
        let allow = Reads::of(&[rule("Read(src/*.rs)", Effect::Allow)]).unwrap();
        assert!(allow.hides(ToolId::Grep, Path::new("/ws/src/notes.txt")));
        assert!(!allow.hides(ToolId::Grep, Path::new("/ws/src/lib.rs")));
        assert!(!allow.prunes(ToolId::Grep, Path::new("/ws/src/deep")));
        // zero's own names cover their one tool.
        let grep = Reads::of(&[rule("grep(secrets/**)", Effect::Deny)]).unwrap();
        assert!(grep.hides(ToolId::Grep, Path::new("/ws/secrets/a")));
        assert!(!grep.hides(ToolId::Glob, Path::new("/ws/secrets/a")));
        assert!(Reads::of(&[rule("read_file(secrets/**)", Effect::Deny)]).is_none());
    }
}
