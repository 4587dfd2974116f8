//! Durations on the command line — `zero tasks gc --older-than 7d`, `zero exec --timeout 20m` —
//! read by `humantime`, the crate the field uses for them (`90s`, `20m`, `1h 30m`, `7d`, `2w`),
//! so every duration flag accepts the same grammar, and the same bound.

use std::time::Duration;

use crate::runtime::MAX_DURATION;

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DurationError {
    /// Not in `humantime`'s grammar.
    #[error("`{text}` is not a duration ({reason}); use e.g. 90s, 20m, 12h or 7d")]
    Unparsable {
        /// What was given.
        text: String,
        /// `humantime`'s reason.
        reason: String,
    },
    /// Longer than [`MAX_DURATION`].
    #[error("`{text}` is longer than 100 years, the longest duration zero takes")]
    TooLong {
        /// What was given.
        text: String,
    },
    /// A timeout of zero.
    #[error("the timeout must be longer than zero")]
    ZeroTimeout,
}

/// Parses a duration of at most [`MAX_DURATION`]; the error says what is accepted.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let duration = humantime::parse_duration(text).map_err(|error| DurationError::Unparsable {
        text: text.to_string(),
        reason: error.to_string(),
    })?;
    if duration > MAX_DURATION {
        return Err(DurationError::TooLong {
            text: text.to_string(),
        });
    }
    Ok(duration)
}

/// Parses `--timeout` (and `timeout` in config.toml): a duration above zero, at most
/// [`MAX_DURATION`].
pub(crate) fn parse_timeout(text: &str) -> Result<Duration, DurationError> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err(DurationError::ZeroTimeout);
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use std::time::{Instant, SystemTime, UNIX_EPOCH};

    use super::*;

    #[test]
    fn durations_read_as_humantime_reads_them() {
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("100y"), Ok(MAX_DURATION));
        for bad in ["", "7", "d", "-7d", "soon", "99999999999999999999d"] {
            assert!(
                matches!(parse_duration(bad), Err(DurationError::Unparsable { .. })),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn a_timeout_is_longer_than_zero() {
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_timeout("0s"), Err(DurationError::ZeroTimeout));
        assert_eq!(parse_timeout("0"), Err(DurationError::ZeroTimeout));
    }

    #[test]
    fn extreme_durations_are_refused_and_every_accepted_one_fits_every_clock() {
        for extreme in [
            "18446744073709551615s",
            "9223372036854775807s",
            "300000000000y",
            "101y",
            "5300w",
        ] {
            for parse in [parse_duration, parse_timeout] {
                assert_eq!(
                    parse(extreme),
                    Err(DurationError::TooLong {
                        text: extreme.to_string()
                    }),
                    "{extreme}"
                );
            }
        }
        let longest = parse_timeout("100y").unwrap();
        let now = SystemTime::now();
        let deadline = now.checked_add(longest).expect("a deadline");
        assert!(now.checked_sub(longest).is_some());
        assert!(Instant::now().checked_add(longest).is_some());
        let millis = deadline.duration_since(UNIX_EPOCH).unwrap().as_millis();
        assert!(u64::try_from(millis).is_ok());
        let age = chrono::Duration::from_std(longest).unwrap();
        assert!(chrono::Utc::now().checked_sub_signed(age).is_some());
    }

    proptest::proptest! {
        #[test]
        fn any_count_of_any_unit_is_refused_or_fits_a_deadline(
            count in proptest::prelude::any::<u64>(),
            unit in proptest::sample::select(vec!["ns", "ms", "s", "m", "h", "d", "w", "M", "y"]),
        ) {
            if let Ok(duration) = parse_timeout(&format!("{count}{unit}")) {
                proptest::prop_assert!(duration <= MAX_DURATION);
                proptest::prop_assert!(SystemTime::now().checked_add(duration).is_some());
            }
        }
    }
}
