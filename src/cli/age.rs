//! Ages on the command line (`zero tasks gc --older-than 7d`).
//!
//! A parser of our own rather than `humantime`: zero does not depend on it, and it accepts far
//! more than the documented grammar (`1h 30min`, months, years), each a form the docs would
//! have to promise forever. Exactly one form is accepted: a whole number and a unit.

use std::time::Duration;

/// Parses `<number><unit>` with unit `s`, `m`, `h` or `d` (`30m`, `12h`, `7d`). The error says
/// what is accepted.
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let unknown =
        || format!("`{text}` is not an age: use a number and s, m, h or d (30m, 12h, 7d)");
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().map_err(|_| unknown())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 60 * 60,
        "d" => 24 * 60 * 60,
        _ => return Err(unknown()),
    };
    number
        .checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("`{text}` is too long an age"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_a_number_and_a_unit() {
        assert_eq!(parse_age("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
        for bad in [
            "",
            "7",
            "d",
            "7 d",
            "-7d",
            "1.5h",
            "7w",
            "1h30m",
            "99999999999999999999d",
        ] {
            assert!(parse_age(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
