//! The names a line gives values to: an assignment, `declare`/`export`/`local`, `read`,
//! `printf -v`, `for NAME in`, `${NAME:=…}`, `env NAME=…`. Two kinds of name make a line
//! something the rules cannot follow:
//!
//! - a subscript (`a[…]`): bash evaluates an indexed array's subscript as arithmetic, and
//!   arithmetic expands what a variable holds, `$(…)` included — `x='a[$(git push)]'` then
//!   `$((x))` runs `git push`. Only a plain number is followed;
//! - a variable bash or a shell it starts runs as code, or that changes what a later part of
//!   the line means (`PS4` with `set -x`, `BASH_ENV` for the next `bash`, an exported
//!   function in `BASH_FUNC_*`, `CDPATH` for `cd`).

use super::Opaque;

/// The variables bash, or a shell it starts, runs as code or reads to decide what a later
/// command means.
const CODE_VARIABLES: [&str; 11] = [
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "CDPATH",
];

/// Checks `text`, a name being given a value, or a `NAME=VALUE` word (`NAME+=VALUE` too).
pub(super) fn check(text: &str) -> Result<(), Opaque> {
    let name = text
        .split_once('=')
        .map_or(text, |(name, _)| name.strip_suffix('+').unwrap_or(name));
    let (variable, subscript) = match name.split_once('[') {
        Some((variable, rest)) => (variable, Some(rest.strip_suffix(']').unwrap_or(rest))),
        None => (name, None),
    };
    if let Some(subscript) = subscript
        && !subscript.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(Opaque::code(format!(
            "it names `{name}`, whose subscript bash evaluates as arithmetic (which can run \
             commands); only a plain number is followed"
        )));
    }
    if CODE_VARIABLES.contains(&variable) || variable.starts_with("BASH_FUNC_") {
        return Err(Opaque::code(format!(
            "it sets `{variable}`, which bash or a shell it starts reads as code or as where \
             `cd` goes"
        )));
    }
    Ok(())
}

/// [`check`] for a name that may be known only as the line runs.
pub(super) fn check_word(word: &super::Word, what: &str) -> Result<(), Opaque> {
    match word {
        super::Word::Known(text) => check(text),
        super::Word::Unknown => Err(Opaque::code(format!(
            "{what} a name known only as the line runs (it may hold a subscript bash \
             evaluates)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscripts_other_than_numbers_and_code_variables_are_not_followed() {
        for fine in ["x", "x=1", "x+=a", "a[3]=b", "PATH=/bin", "HOME"] {
            assert!(check(fine).is_ok(), "{fine}");
        }
        for hidden in [
            "a[$(git push)]",
            "a[i]=1",
            "a[x]",
            "PS4",
            "PS4=$(x)",
            "BASH_ENV=x",
            "BASH_FUNC_git%%=() { :; }",
            "CDPATH=/etc",
        ] {
            assert!(check(hidden).is_err(), "{hidden}");
        }
    }
}
