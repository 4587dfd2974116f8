//! Durations on the command line — `zero tasks gc --older-than 7d`, `zero exec --timeout 20m` —
//! read by `humantime`, the crate the field uses for them (`90s`, `20m`, `1h 30m`, `7d`, `2w`),
//! so every duration flag accepts the same grammar.

use std::time::Duration;

/// Parses a duration; the error says what is accepted.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration ({e}); use e.g. 90s, 20m, 12h or 7d"))
}

/// Parses `--timeout`: a duration above zero.
pub(crate) fn parse_timeout(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err("the timeout must be longer than zero".into());
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_humantime_reads_them() {
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in ["", "7", "d", "-7d", "soon", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_timeout_is_longer_than_zero() {
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("0").is_err());
    }
}
