//! Timeouts, the retry policy and the waiting notices of the HTTP transport.

use crate::environ::names::{
    ZERO_CONNECT_TIMEOUT_MS, ZERO_FIRST_BYTE_TIMEOUT_MS, ZERO_MAX_ATTEMPTS, ZERO_RETRY_BASE_MS,
    ZERO_RETRY_MAX_WAIT_MS, ZERO_STREAM_IDLE_TIMEOUT_MS, ZERO_WAIT_NOTICE_MS,
};
use std::time::Duration;

/// A tuning variable whose value is not a usable number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} is not valid: expected {expected}")]
pub struct InvalidTuning {
    /// The environment variable.
    pub(crate) variable: &'static str,
    /// What it was set to.
    pub(crate) value: String,
    /// What it should be.
    pub(crate) expected: &'static str,
}

/// Timeouts and retry policy shared by both wires.
///
/// The defaults suit real endpoints, local servers included: a local model may take minutes to
/// read a long prompt before its first token, so the first-byte timeout is generous, while a
/// stream that goes silent mid-answer is given up on sooner. Each knob can be overridden by an
/// environment variable, read once when the configuration is resolved (`Tuning::from_env`),
/// mainly so tests and CI can make failures fast:
///
/// | variable | field | default |
/// |---|---|---|
/// | `ZERO_CONNECT_TIMEOUT_MS` | [`connect_timeout`](Self::connect_timeout) | 10 000 |
/// | `ZERO_FIRST_BYTE_TIMEOUT_MS` | [`first_byte_timeout`](Self::first_byte_timeout) | 180 000 |
/// | `ZERO_STREAM_IDLE_TIMEOUT_MS` | [`idle_timeout`](Self::idle_timeout) | 120 000 |
/// | `ZERO_MAX_ATTEMPTS` | [`max_attempts`](Self::max_attempts) | 4 |
/// | `ZERO_RETRY_BASE_MS` | [`retry_base`](Self::retry_base) | 500 |
/// | `ZERO_RETRY_MAX_WAIT_MS` | [`retry_max_wait`](Self::retry_max_wait) | 30 000 |
/// | `ZERO_WAIT_NOTICE_MS` | [`wait_notice`](Self::wait_notice) | 10 000 |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// How long to wait for the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// How long to wait from sending the request to the first byte of the response body.
    pub first_byte_timeout: Duration,
    /// How long a stream may go without any bytes once it has started.
    pub idle_timeout: Duration,
    /// Attempts in total, the first included (at least 1).
    pub max_attempts: u32,
    /// The first backoff step; each later one doubles, with jitter.
    pub retry_base: Duration,
    /// The longest single wait: caps a backoff step and a server's `Retry-After`.
    pub retry_max_wait: Duration,
    /// How long a response may go without a byte before the caller hears that zero is still
    /// waiting (a [`Notice::Waiting`](super::Notice::Waiting)); told again each time the
    /// silence doubles. Zero: never.
    pub wait_notice: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(180),
            idle_timeout: Duration::from_secs(120),
            max_attempts: 4,
            retry_base: Duration::from_millis(500),
            retry_max_wait: Duration::from_secs(30),
            wait_notice: Duration::from_secs(10),
        }
    }
}

impl Tuning {
    /// The defaults, overridden by whichever `ZERO_*` tuning variables `env` has (see the
    /// table above). An unparsable value is an error rather than silently ignored.
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Tuning, InvalidTuning> {
        let millis =
            |variable: &'static str, default: Duration| -> Result<Duration, InvalidTuning> {
                match env(variable).filter(|value| !value.is_empty()) {
                    None => Ok(default),
                    Some(value) => value
                        .trim()
                        .parse::<u64>()
                        .map(Duration::from_millis)
                        .map_err(|_| InvalidTuning {
                            variable,
                            value,
                            expected: "a whole number of milliseconds",
                        }),
                }
            };
        let defaults = Tuning::default();
        let max_attempts = match env(ZERO_MAX_ATTEMPTS).filter(|value| !value.is_empty()) {
            None => defaults.max_attempts,
            Some(value) => {
                value
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or(InvalidTuning {
                        variable: ZERO_MAX_ATTEMPTS,
                        value,
                        expected: "a whole number of at least 1",
                    })?
            }
        };
        Ok(Tuning {
            connect_timeout: millis(ZERO_CONNECT_TIMEOUT_MS, defaults.connect_timeout)?,
            first_byte_timeout: millis(ZERO_FIRST_BYTE_TIMEOUT_MS, defaults.first_byte_timeout)?,
            idle_timeout: millis(ZERO_STREAM_IDLE_TIMEOUT_MS, defaults.idle_timeout)?,
            max_attempts,
            retry_base: millis(ZERO_RETRY_BASE_MS, defaults.retry_base)?,
            retry_max_wait: millis(ZERO_RETRY_MAX_WAIT_MS, defaults.retry_max_wait)?,
            wait_notice: millis(ZERO_WAIT_NOTICE_MS, defaults.wait_notice)?,
        })
    }

    /// After how much silence the caller is next told that zero is still waiting, given how
    /// much it was told of last (`None`: nothing yet): [`wait_notice`](Self::wait_notice),
    /// then twice the last, so a long wait is a handful of lines rather than one every few
    /// seconds. `None` when notices are off.
    pub(crate) fn next_wait_notice(&self, last: Option<Duration>) -> Option<Duration> {
        if self.wait_notice.is_zero() {
            return None;
        }
        Some(last.map_or(self.wait_notice, |last| last.saturating_mul(2)))
    }

    /// How long to wait after failed attempt number `attempt` (1-based): what the server asked
    /// for when it said (capped), else exponential backoff with jitter so that many clients
    /// failing together do not retry in lockstep.
    pub(crate) fn retry_wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(self.retry_max_wait);
        }
        let step = self
            .retry_base
            .saturating_mul(1 << attempt.saturating_sub(1).min(16));
        step.min(self.retry_max_wait)
            .mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        }
    }

    #[test]
    fn variables_override_defaults() {
        let env = env_of(&[
            ("ZERO_STREAM_IDLE_TIMEOUT_MS", "250"),
            ("ZERO_MAX_ATTEMPTS", "2"),
            ("ZERO_RETRY_BASE_MS", ""),
        ]);
        let tuning = Tuning::from_env(&env).unwrap();
        assert_eq!(tuning.idle_timeout, Duration::from_millis(250));
        assert_eq!(tuning.max_attempts, 2);
        assert_eq!(tuning.retry_base, Tuning::default().retry_base);
        assert_eq!(tuning.connect_timeout, Tuning::default().connect_timeout);
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable() {
        let err = Tuning::from_env(&env_of(&[("ZERO_CONNECT_TIMEOUT_MS", "soon")])).unwrap_err();
        assert_eq!(err.variable, "ZERO_CONNECT_TIMEOUT_MS");
        assert!(Tuning::from_env(&env_of(&[("ZERO_MAX_ATTEMPTS", "0")])).is_err());
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let tuning = Tuning {
            retry_base: Duration::from_millis(100),
            retry_max_wait: Duration::from_millis(300),
            ..Tuning::default()
        };
        for _ in 0..50 {
            let first = tuning.retry_wait(1, None);
            assert!(
                first >= Duration::from_millis(50) && first <= Duration::from_millis(100),
                "{first:?}"
            );
            let second = tuning.retry_wait(2, None);
            assert!(
                second >= Duration::from_millis(100) && second <= Duration::from_millis(200),
                "{second:?}"
            );
            assert!(tuning.retry_wait(30, None) <= Duration::from_millis(300));
        }
    }

    #[test]
    fn waiting_notices_double_and_zero_turns_them_off() {
        let tuning = Tuning {
            wait_notice: Duration::from_secs(10),
            ..Tuning::default()
        };
        let first = tuning.next_wait_notice(None);
        assert_eq!(first, Some(Duration::from_secs(10)));
        assert_eq!(
            tuning.next_wait_notice(first),
            Some(Duration::from_secs(20))
        );
        let off = Tuning {
            wait_notice: Duration::ZERO,
            ..Tuning::default()
        };
        assert_eq!(off.next_wait_notice(None), None);
        let env = env_of(&[("ZERO_WAIT_NOTICE_MS", "250")]);
        assert_eq!(
            Tuning::from_env(&env).unwrap().wait_notice,
            Duration::from_millis(250)
        );
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let tuning = Tuning {
            retry_max_wait: Duration::from_secs(5),
            ..Tuning::default()
        };
        assert_eq!(
            tuning.retry_wait(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            tuning.retry_wait(1, Some(Duration::from_secs(600))),
            Duration::from_secs(5)
        );
    }
}
