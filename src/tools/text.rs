//! Cutting tool output to a budget without splitting a UTF-8 character.

/// The longest prefix of `s` that is at most `max` bytes and ends on a char boundary.
pub(crate) fn prefix_at_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest suffix of `s` that is at most `max` bytes and starts on a char boundary.
pub(crate) fn suffix_at_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Keeps the head and the tail of `s` within `max` bytes in total, with a note in between
/// saying how much was left out. Returns the text unchanged when it fits.
pub(crate) fn head_tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let head = prefix_at_boundary(s, max / 2);
    let tail = suffix_at_boundary(s, max - head.len());
    let omitted = s.len() - head.len() - tail.len();
    format!("{head}\n[... {omitted} bytes omitted ...]\n{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        let s = "ééééé"; // 2 bytes each
        assert_eq!(prefix_at_boundary(s, 3), "é");
        assert_eq!(suffix_at_boundary(s, 3), "é");
    }

    #[test]
    fn head_tail_keeps_both_ends() {
        let s = format!("{}{}", "a".repeat(100), "b".repeat(100));
        let cut = head_tail(&s, 50);
        assert!(cut.starts_with("aaaa") && cut.ends_with("bbbb"));
        assert!(cut.contains("150 bytes omitted"));
        assert_eq!(head_tail("short", 50), "short");
    }
}
