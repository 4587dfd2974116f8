//! The system prompt's list of skills: each skill's name and description, bounded in count
//! and bytes (tighter in the compact style, whose every token a small model reads again at
//! every turn), so a hundred skills cost a bounded part of every request.

use super::Skill;
use crate::tools::text::prefix_at_boundary;

/// How much of the prompt the list may take in one style.
struct Bounds {
    /// The most skills listed.
    skills: usize,
    /// The most bytes of the whole section.
    bytes: usize,
    /// The most bytes of one description.
    description: usize,
}

/// The full style's bounds.
const FULL: Bounds = Bounds {
    skills: 100,
    bytes: 24 * 1024,
    description: 250,
};

/// The compact style's bounds.
const COMPACT: Bounds = Bounds {
    skills: 12,
    bytes: 1024,
    description: 100,
};

/// The section listing `skills` (sorted by name), or `None` without any. The skills past the
/// bounds are counted, not listed.
pub(crate) fn section(skills: &[Skill], compact: bool) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let bounds = if compact { &COMPACT } else { &FULL };
    let mut text = match compact {
        true => "\nSkills (load one with the Skill tool when the task matches it):\n".to_string(),
        false => "\nSkills: instructions for particular tasks. When the task matches a skill's \
                  description, load it with the Skill tool (by its name) before you start, \
                  then follow it; read the files it names with read_file.\n"
            .to_string(),
    };
    let mut listed = 0;
    for skill in skills.iter().take(bounds.skills) {
        let line = entry(skill, bounds.description);
        if text.len() + line.len() > bounds.bytes {
            break;
        }
        text.push_str(&line);
        listed += 1;
    }
    if listed < skills.len() {
        text.push_str(&format!(
            "- ({} more skills not listed)\n",
            skills.len() - listed
        ));
    }
    Some(text)
}

/// One skill's line: its name and its description on one line, cut at `limit` bytes.
fn entry(skill: &Skill, limit: usize) -> String {
    let description = skill
        .description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let cut = prefix_at_boundary(&description, limit);
    let more = if cut.len() < description.len() {
        "…"
    } else {
        ""
    };
    format!("- {}: {cut}{more}\n", skill.name)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::skills::Origin;

    fn skills(count: usize, description: &str) -> Vec<Skill> {
        (0..count)
            .map(|n| Skill {
                name: format!("skill-{n:03}"),
                description: description.to_string(),
                allowed_tools: Vec::new(),
                body: "Steps.".into(),
                dir: PathBuf::from("/skills"),
                origin: Origin::Workspace,
            })
            .collect()
    }

    #[test]
    fn no_skills_no_section() {
        assert_eq!(section(&[], false), None);
    }

    #[test]
    fn each_skill_is_a_line_of_its_name_and_description() {
        let text = section(&skills(2, "Writes\n  notes."), false).unwrap();
        assert!(
            text.contains("- skill-000: Writes notes.\n- skill-001: Writes notes.\n"),
            "{text}"
        );
        assert!(!text.contains("more skills"), "{text}");
    }

    #[test]
    fn both_styles_are_bounded_in_count_and_bytes() {
        let many = skills(200, &"d".repeat(1024));
        for (compact, bounds) in [(false, &FULL), (true, &COMPACT)] {
            let text = section(&many, compact).unwrap();
            let listed = text
                .lines()
                .filter(|line| line.starts_with("- skill-"))
                .count();
            assert!(listed > 0 && listed <= bounds.skills, "{listed}");
            assert!(text.len() <= bounds.bytes + 64, "{}", text.len());
            assert!(text.ends_with(&format!("- ({} more skills not listed)\n", 200 - listed)));
            assert!(text.contains("…"), "long descriptions are cut");
        }
        let short = skills(200, "d");
        let full = section(&short, false).unwrap();
        assert!(full.contains("- (100 more skills not listed)"), "{full}");
        let compact = section(&short, true).unwrap();
        assert!(
            compact.contains("- (188 more skills not listed)"),
            "{compact}"
        );
    }
}
