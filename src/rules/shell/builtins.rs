//! The builtins of the line's own shell whose effect the rules must know: the ones that run
//! text as code or change what later names mean (never followed), the ones that give values
//! to names (`read`, `printf -v`, `declare` and its kin, `unset`, `getopts`, `wait -p`,
//! `mapfile`: each name checked by `names`), `test`/`[` (`-v NAME[…]` evaluates the subscript)
//! and the ones that move the shell (`cd`, `pushd`, `popd`), which decide where a relative
//! redirection lands.
//!
//! A builtin is a builtin only when the line's shell runs it by that name: a wrapper's
//! command (`timeout 5 cd x`) is a program, so only a command of the line's own is asked here.

use super::options::{self, Spec};
use super::{Follow, Move, Opaque, Shape, Word, as_parsed, names};

/// Builtins that run text as shell code, now or later, or that change what later names mean:
/// a line using one is never followed.
const CODE: [&str; 14] = [
    "eval", "source", ".", "builtin", "command", "alias", "enable", "trap", "fc", "coproc",
    "select", "let", "compgen", "hash",
];

/// The builtin `name` with `args` (each with its shape), when the line's shell runs it: what
/// to follow, or why it cannot be followed. `None` when `name` is no builtin the rules need
/// to know.
pub(super) fn follow(
    name: &str,
    args: &[Word],
    shapes: &[Shape],
) -> Option<Result<Follow, Opaque>> {
    let checked = |result: Result<(), Opaque>| result.map(|()| Follow::default());
    Some(match name {
        _ if CODE.contains(&name) => Err(Opaque::code(format!(
            "it runs `{name}`, which runs text as shell code or changes what later names mean"
        ))),
        // A program in the shell's place: its redirections stay the line's (`exec > log`).
        "exec" => Err(Opaque::program(
            "it runs `exec`, which replaces the shell by a command the rules do not follow",
        )),
        "read" => checked(read(args)),
        "printf" => checked(printf(args)),
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            checked(declare(name, args, shapes))
        }
        "unset" => checked(names_after(
            name,
            args,
            &Spec {
                flags: "fvn",
                ..Spec::EMPTY
            },
        )),
        "getopts" => checked(
            args.get(1)
                .map_or(Ok(()), |word| names::check_word(word, "`getopts` sets")),
        ),
        "wait" => checked(wait(args)),
        "mapfile" | "readarray" => checked(mapfile(name, args)),
        "test" | "[" => checked(test(args, shapes)),
        "cd" | "pushd" | "popd" => Ok(Follow {
            moves: Some(moves(name, args)),
            ..Follow::default()
        }),
        _ => return None,
    })
}

/// Reads `args` by `spec` for the builtin `name`.
fn read_options(name: &str, args: &[Word], spec: &Spec) -> Result<options::Read, Opaque> {
    options::read(args, spec).map_err(|why| Opaque::code(format!("`{name}` {why}")))
}

/// `read [-ers] [-a NAME] [-d D] … NAME…`: every name it sets.
fn read(args: &[Word]) -> Result<(), Opaque> {
    let spec = Spec {
        flags: "ers",
        with_arg: "adinNptu",
        ..Spec::EMPTY
    };
    let read = read_options("read", args, &spec)?;
    if let Some(array) = read.arg(&["a"]) {
        names::check_word(array, "`read -a` sets")?;
    }
    read.operands
        .iter()
        .try_for_each(|&at| names::check_word(&args[at], "`read` sets"))
}

/// `printf -v NAME FORMAT …`: the name it sets (its format and arguments are data).
fn printf(args: &[Word]) -> Result<(), Opaque> {
    let spec = Spec {
        with_arg: "v",
        ..Spec::EMPTY
    };
    let read = read_options("printf", args, &spec)?;
    read.arg(&["v"])
        .map_or(Ok(()), |name| names::check_word(name, "`printf -v` sets"))
}

/// `declare`, `typeset`, `local`, `export`, `readonly`: no integer (`-i`, later assignments
/// are arithmetic) or reference (`-n`) attribute, and every name they set (an assignment's
/// the walk has checked).
fn declare(name: &str, args: &[Word], shapes: &[Shape]) -> Result<(), Opaque> {
    let spec = Spec {
        flags: "aAfFgiIlnprtux",
        plus: true,
        ..Spec::EMPTY
    };
    let read = read_options(name, &as_parsed(args, shapes), &spec)?;
    if let Some(option) = read.options.iter().find(|o| o.name == "i" || o.name == "n") {
        return Err(Opaque::code(format!(
            "it runs `{name} -{}`, after which values given to the names are evaluated as \
             arithmetic or as references to other names",
            option.name
        )));
    }
    read.operands
        .iter()
        .filter(|&&at| !shapes[at].named)
        .try_for_each(|&at| names::check_word(&args[at], &format!("`{name}` sets")))
}

/// A builtin whose operands are all names: each is checked.
fn names_after(name: &str, args: &[Word], spec: &Spec) -> Result<(), Opaque> {
    let read = read_options(name, args, spec)?;
    read.operands
        .iter()
        .try_for_each(|&at| names::check_word(&args[at], &format!("`{name}` names")))
}

/// `wait [-fn] [-p NAME] …`: the name `-p` sets.
fn wait(args: &[Word]) -> Result<(), Opaque> {
    let spec = Spec {
        flags: "fn",
        with_arg: "p",
        ..Spec::EMPTY
    };
    let read = read_options("wait", args, &spec)?;
    read.arg(&["p"])
        .map_or(Ok(()), |name| names::check_word(name, "`wait -p` sets"))
}

/// `mapfile`/`readarray`: no callback (`-C` runs code) and the array it sets.
fn mapfile(name: &str, args: &[Word]) -> Result<(), Opaque> {
    let spec = Spec {
        flags: "t",
        with_arg: "dnOsuCc",
        ..Spec::EMPTY
    };
    let read = read_options(name, args, &spec)?;
    if read.has("C") {
        return Err(Opaque::code(format!(
            "it runs `{name} -C`, whose callback is shell code"
        )));
    }
    read.operands
        .iter()
        .try_for_each(|&at| names::check_word(&args[at], &format!("`{name}` sets")))
}

/// `test`/`[`: `-v NAME` and `-R NAME` evaluate a subscript in the name, and an unquoted
/// expansion may become those words.
fn test(args: &[Word], shapes: &[Shape]) -> Result<(), Opaque> {
    if shapes.iter().any(|shape| shape.splits) {
        return Err(Opaque::code(
            "`test` or `[` is given an unquoted expansion, which may become `-v NAME[…]` \
             (whose subscript bash evaluates); quote it",
        ));
    }
    for (at, word) in args.iter().enumerate() {
        if matches!(word, Word::Known(text) if text == "-v" || text == "-R")
            && let Some(name) = args.get(at + 1)
            && *name != Word::Known("]".into())
        {
            names::check_word(name, "`test -v` checks")?;
        }
    }
    Ok(())
}

/// Where `cd`, `pushd` or `popd` with `args` moves the shell: a directory the line names, or
/// somewhere the rules cannot know (`$HOME`, `-`, the directory stack, a computed word).
fn moves(name: &str, args: &[Word]) -> Move {
    let spec = Spec {
        flags: if name == "cd" { "LPe@" } else { "n" },
        ..Spec::EMPTY
    };
    let Ok(read) = options::read(args, &spec) else {
        return Move::Unknown;
    };
    match (name, read.operands.as_slice()) {
        ("popd", _) => Move::Unknown,
        (_, [at]) => match &args[*at] {
            Word::Known(dir) if dir != "-" && !dir.starts_with('+') => Move::To(dir.clone()),
            _ => Move::Unknown,
        },
        _ => Move::Unknown,
    }
}
