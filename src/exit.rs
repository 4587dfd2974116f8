//! The exit codes of `zero`: one enum, the one mapping from it to the process's exit status.
//!
//! A leaf: every command (`exec`, `review`, `tasks`) decides its code here, and `output` maps a
//! code to the `run_end.status` that goes with it.

/// The exit codes of `zero`, exactly as documented (README, ARCHITECTURE, `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// The job finished and the model gave its final answer.
    Success,
    /// A bug or an I/O failure writing output.
    Internal,
    /// Bad flags, missing prompt, unreadable prompt file, bad workspace.
    Usage,
    /// No provider, authentication, network, retries exhausted, or a required sandbox the
    /// system cannot enforce.
    Provider,
    /// A budget ran out before a final answer.
    Incomplete,
    /// `zero review` found findings at or above `--fail-on`.
    Findings,
    /// Ended by SIGHUP.
    Hangup,
    /// Ended by SIGINT.
    Interrupted,
    /// Ended by SIGTERM.
    Terminated,
}

impl ExitCode {
    /// The numeric code the process exits with.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Internal => 1,
            ExitCode::Usage => 2,
            ExitCode::Provider => 3,
            ExitCode::Incomplete => 4,
            ExitCode::Findings => 5,
            ExitCode::Hangup => 129,
            ExitCode::Interrupted => 130,
            ExitCode::Terminated => 143,
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        // Every code is below 256 by construction.
        std::process::ExitCode::from(code.code() as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_documented_table() {
        let table = [
            (ExitCode::Success, 0),
            (ExitCode::Internal, 1),
            (ExitCode::Usage, 2),
            (ExitCode::Provider, 3),
            (ExitCode::Incomplete, 4),
            (ExitCode::Findings, 5),
            (ExitCode::Hangup, 129),
            (ExitCode::Interrupted, 130),
            (ExitCode::Terminated, 143),
        ];
        for (code, number) in table {
            assert_eq!(code.code(), number, "{code:?}");
        }
    }
}
