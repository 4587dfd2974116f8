//! The analysis of hostile and ordinary lines: what it follows, and each construct it refuses
//! to follow (docs/RULES.md lists them).

use super::*;

fn known(words: &[&str]) -> Vec<Word> {
    words.iter().map(|w| Word::Known(w.to_string())).collect()
}

fn analysis(line: &str) -> Analysis {
    analyse(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// The words of every command `line` runs; the line must be followed.
fn commands(line: &str) -> Vec<Vec<Word>> {
    let found = analysis(line);
    assert_eq!(found.unknown, None, "{line}");
    found.commands.into_iter().map(|c| c.words).collect()
}

/// Why `line` cannot be followed; it must not be.
fn unknown(line: &str) -> String {
    match analyse(line) {
        Ok(found) => found
            .unknown
            .unwrap_or_else(|| panic!("{line:?} was followed: {:?}", found.commands)),
        Err(Unanalysable(why)) => why,
    }
}

/// The files `line` writes, as placed.
fn writes(line: &str) -> Vec<Write> {
    analysis(line).writes
}

fn at(path: &str) -> Write {
    Write::At(PathBuf::from(path))
}

#[test]
fn operators_subshells_and_groups_split_a_line_into_its_simple_commands() {
    assert_eq!(
        commands("cargo test && git diff; ls | wc -l || (echo a; { echo b; }) & true\nfalse"),
        [
            known(&["cargo", "test"]),
            known(&["git", "diff"]),
            known(&["ls"]),
            known(&["wc", "-l"]),
            known(&["echo", "a"]),
            known(&["echo", "b"]),
            known(&["true"]),
            known(&["false"]),
        ]
    );
}

#[test]
fn quotes_and_escapes_are_removed_before_matching() {
    assert_eq!(
        commands(r#"git "push" 'origin' m\ain"#),
        [known(&["git", "push", "origin", "main"])]
    );
}

#[test]
fn plain_substitutions_are_followed_and_their_words_unknown() {
    assert_eq!(
        commands("cargo test $(curl x) `wget y` <(nc z)"),
        [
            known(&["curl", "x"]),
            known(&["wget", "y"]),
            known(&["nc", "z"]),
            vec![
                Word::Known("cargo".into()),
                Word::Known("test".into()),
                Word::Unknown,
                Word::Unknown,
                Word::Unknown
            ],
        ]
    );
    assert_eq!(
        commands("git diff $(git rev-parse HEAD)")[0],
        known(&["git", "rev-parse", "HEAD"])
    );
    assert_eq!(
        commands("ls *.rs ~/x {a,b}"),
        [vec![
            Word::Known("ls".into()),
            Word::Unknown,
            Word::Unknown,
            Word::Unknown
        ]]
    );
}

#[test]
fn sh_c_scripts_and_wrappers_commands_are_commands_of_their_own() {
    let found = analysis("bash -c 'git diff; curl x'");
    assert_eq!(
        found
            .commands
            .iter()
            .map(|c| c.words.clone())
            .collect::<Vec<_>>(),
        [
            known(&["bash", "-c", "git diff; curl x"]),
            known(&["git", "diff"]),
            known(&["curl", "x"]),
        ]
    );
    assert!(found.commands[0].carrier);
    for (line, inner) in [
        ("timeout 60 git push", &["git", "push"][..]),
        ("timeout -k 5 --signal=KILL 60 git push", &["git", "push"]),
        ("nice -n 5 git push", &["git", "push"]),
        ("nice -10 git push", &["git", "push"]),
        ("nohup git push", &["git", "push"]),
        ("env -u X git push", &["git", "push"]),
        ("chrt -o 0 git push", &["git", "push"]),
        ("setsid -w git push", &["git", "push"]),
        ("stdbuf -oL git push", &["git", "push"]),
        ("ionice -c 3 git push", &["git", "push"]),
        ("taskset 1 git push", &["git", "push"]),
    ] {
        let found = commands(line);
        assert_eq!(found.last().unwrap(), &known(inner), "{line}");
    }
    let env = analysis("env A=1 B=2 git push");
    let inner = env.commands.last().unwrap();
    assert_eq!(inner.assignments, 2);
    assert_eq!(inner.command(), known(&["git", "push"]));
    assert_eq!(
        commands("timeout 60 sh -c 'git push'").last().unwrap(),
        &known(&["git", "push"])
    );
    assert_eq!(commands("sh script.sh"), [known(&["sh", "script.sh"])]);
    assert_eq!(
        commands("[ -f x ] && ls a[12]"),
        [
            known(&["[", "-f", "x", "]"]),
            vec![Word::Known("ls".into()), Word::Unknown]
        ]
    );
}

#[test]
fn xargs_and_find_run_commands_with_words_they_find() {
    let xargs = commands("git ls-files | xargs wc -l");
    assert_eq!(
        xargs.last().unwrap(),
        &vec![
            Word::Known("wc".into()),
            Word::Known("-l".into()),
            Word::Unknown
        ]
    );
    // What xargs reads may be git's own options (`-c alias.p=push p`).
    assert!(unknown("echo x | xargs git").contains("git"));
    assert_eq!(
        commands("xargs -0 -n1").last().unwrap(),
        &vec![Word::Known("echo".into()), Word::Unknown]
    );
    assert_eq!(
        commands("xargs -I{} git show {}").last().unwrap(),
        &vec![
            Word::Known("git".into()),
            Word::Known("show".into()),
            Word::Unknown,
            Word::Unknown
        ]
    );
    let find = commands("find . -name '*.rs' -exec sh -c 'git push' \\; -exec wc -l {} +");
    assert!(find.contains(&known(&["git", "push"])), "{find:?}");
    assert!(
        find.contains(&vec![
            Word::Known("wc".into()),
            Word::Known("-l".into()),
            Word::Unknown
        ]),
        "{find:?}"
    );
}

/// Item 2's constructs, each refused with a reason (docs/RULES.md, "What the analysis
/// follows").
#[test]
fn what_bash_would_run_unseen_makes_the_line_unknown() {
    for line in [
        // A substitution inside an expansion's operand.
        "cargo test ${u:-$(touch x)}",
        ": ${x:=$(touch x)}",
        "echo ${x:+`touch x`}",
        "echo ${x/a/$(touch x)}",
        // Arithmetic that names a variable, and subscripts bash evaluates.
        "x='a[$(touch y)]'; echo $((x))",
        "echo $(( $(touch x) ))",
        "(( x = 1 ))",
        "for ((i = 0; i < 2; i++)); do :; done",
        "echo ${s:i}",
        "echo ${a[i]}",
        "echo ${!n}",
        "echo ${z@P}",
        "printf -v 'a[$(touch y)]' x",
        "printf -v \"$n\" x",
        "[ -v 'a[$(touch y)]' ]",
        "test -v 'a[$(touch y)]'",
        "[ $X ]",
        "[[ -v a[$(touch y)] ]]",
        "[[ x -eq y ]]",
        "read 'a[$(touch y)]' <<< v",
        "read -a \"$n\"",
        "declare 'a[$(touch y)]=1'",
        "declare \"$x\"",
        "export a[$(touch y)]=1",
        "declare -i n=x",
        "local -n r=x",
        "export 'a[$(touch y)]=1'",
        "let x=1",
        "unset 'a[$(touch y)]'",
        "mapfile -C 'touch y' a",
        "a[i]=1",
        "a=(1 2)",
        // Variables bash runs as code.
        "PS4='$(touch y)'; set -x; true",
        "export BASH_ENV=x",
        "for PS4 in x; do :; done",
        "env 'BASH_FUNC_git%%=() { touch y; }' bash -c git",
        // Text run as code, and names changed.
        "eval 'git push'",
        "source ./env.sh",
        ". ./env.sh",
        "exec git push",
        "command git push",
        "builtin echo x",
        "alias g=git",
        "trap 'touch y' EXIT",
        "compgen -C 'touch y' x",
        "hash -p ./evil git",
        "enable -f ./x.so x",
        "fc -s",
        "coproc touch y",
        "wait -p 'a[$(touch y)]'",
        "getopts ab 'a[$(touch y)]'",
        "ruby -e 'x'",
        "php -r 'x'",
        "lua -e 'x'",
        "ionice -p 1",
        "taskset -p 1 2",
        "doas git push",
        "f() { touch x; }; f",
        "cat <<EOF\n$(touch x)\nEOF",
        // A command word that is not a literal.
        "$GIT push",
        "\"$(echo git)\" push",
        "./*.sh",
        // Code handed to a shell or an interpreter.
        "bash /dev/stdin <<< 'git push'",
        "bash <<< 'git push'",
        "echo 'git push' | bash",
        "sh -s < script.sh",
        "sh -",
        "bash -o posix -c 'git push'",
        "bash -lc 'ls'",
        "sh -c \"$X\"",
        "sh $OPT -c ls",
        "echo 'import os' | python3",
        "python3 -c 'print(1)'",
        "python3 <<< 'print(1)'",
        "node -e 'x'",
        "perl -le 'print 1'",
        "deno eval 'x'",
        "awk 'BEGIN{system(\"git push\")}'",
        "awk '{print | \"sh\"}'",
        // Wrappers the rules cannot read.
        "env -S 'git push origin'",
        "env --split-string='git push'",
        "env \"$X\" git push",
        "timeout \"$T\" git push",
        "nice --frobnicate git push",
        "chrt -p 0 1",
        "nice time -o out git push",
        "xargs $X",
        "find . $X",
        "find . -exec git push",
        "sudo git push",
        "flock /tmp/l git push",
        "git -c alias.p=push p",
        "git -c 'alias.p=!touch y' p",
        "git -c core.sshCommand=x push",
        "git --config-env=alias.p=X p",
        "git $X status",
        // Unquoted look-alikes.
        "git diff； curl x",
        "ｇｉｔ diff",
    ] {
        let why = unknown(line);
        assert!(!why.is_empty(), "{line}");
    }
}

#[test]
fn what_cannot_be_parsed_is_unanalysable() {
    for line in [
        "git diff\0; curl x",
        "git diff\r",
        "git diff\u{200B}; curl x",
        "echo 'unterminated",
    ] {
        assert!(analyse(line).is_err(), "{line:?} was analysed");
    }
    assert!(analyse(&"x".repeat(MAX_LINE + 1)).is_err());
    assert!(analyse(&"(".repeat(5000)).is_err());
    let nested = (0..12).fold("ls".to_string(), |inner, _| format!("echo $({inner})"));
    assert!(analyse(&nested).is_err());
}

#[test]
fn ordinary_lines_are_followed() {
    for line in [
        "cargo test -- --nocapture",
        "git log --oneline | head -5",
        "echo ${HOME:-/tmp} \"$PWD\" $((1 + 2)) ${#x} ${a[2]} ${s:1:2}",
        "[ -f Cargo.toml ] && test -n \"$(git status --porcelain)\"",
        "[ -v HOME ]",
        "read -r line < f",
        "printf -v out '%s' x",
        "declare -x A=1; export B=2; local c",
        "export PATH=$PATH:/opt/bin; local x=$(git rev-parse HEAD)",
        "env PATH=\"$PATH:/opt/bin\" git status",
        "for f in a b; do echo \"$f\"; done",
        "python3 tool.py -c x",
        "python3 -m pytest -q",
        "node build.js",
        "awk '{print $1}' f",
        "awk -F: -f prog.awk f",
        "bash script.sh arg",
        "git -c user.name=x -C . commit -m m",
        "timeout 60 cargo test",
        "env RUST_LOG=debug cargo test",
        "xargs -0 wc -l",
        "find . -name '*.rs' -print",
        "cat <<'EOF'\n$(curl x)\nEOF",
        "git commit -m 'ünïcode'",
    ] {
        let found = analysis(line);
        assert_eq!(found.unknown, None, "{line}");
    }
}

#[test]
fn output_redirections_and_tee_are_writes_and_descriptors_are_not() {
    assert_eq!(
        writes("echo a > out.txt 2>&1 >> log 2>/dev/null &> all >| c <> d"),
        [at("out.txt"), at("log"), at("all"), at("c"), at("d")]
    );
    assert_eq!(writes("{ echo a; } > out"), [at("out")]);
    assert_eq!(writes("echo a | tee -a x /tmp/y"), [at("x"), at("/tmp/y")]);
    assert_eq!(writes("find . -fprint list"), [at("list")]);
    assert!(matches!(writes("echo > $OUT")[..], [Write::Unplaced(_)]));
    assert!(matches!(writes("eval x")[..], [Write::Unplaced(_)]));
    assert_eq!(analysis("FOO=1 BAR=$(x) make").commands[1].assignments, 2);
}

#[test]
fn a_redirection_lands_where_the_line_has_moved_its_shell() {
    assert_eq!(
        writes("cd .github/workflows && echo x > ci.yml"),
        [at(".github/workflows/ci.yml")]
    );
    assert_eq!(
        writes("(cd .github && echo x > extra.yml)"),
        [at(".github/extra.yml")]
    );
    // A subshell's cd stays in it; a failed cd leaves the shell where it was.
    assert_eq!(writes("(cd .github); echo x > a"), [at("a")]);
    assert_eq!(writes("cd .github; echo x > a"), [at(".github/a"), at("a")]);
    assert_eq!(writes("cd .github || echo x > a"), [at("a")]);
    assert_eq!(writes("cd x > f"), [at("f")]);
    assert_eq!(writes("cd l/.. && echo x > a"), [at("a"), at("l/../a")]);
    assert_eq!(writes("pushd src && echo > a"), [at("src/a")]);
    assert_eq!(
        writes("{ cd .github; } && echo > a"),
        [at(".github/a"), at("a")]
    );
    assert_eq!(writes("echo x | cd .github; echo > a").len(), 2);
    assert_eq!(
        writes("sh -c 'cd .github && echo > a'; echo > b"),
        [at(".github/a"), at("b")]
    );
    assert_eq!(writes("$(cd .github); echo > b").last(), Some(&at("b")));
    for unplaced in [
        "cd \"$X\" && echo > a",
        "cd && echo > a",
        "cd - && echo > a",
        "popd && echo > a",
        "env -C .github tee a",
        "find . -execdir tee a \\;",
        "while true; do echo > a; cd .github; done",
    ] {
        assert!(
            writes(unplaced)
                .iter()
                .any(|w| matches!(w, Write::Unplaced(_))),
            "{unplaced}: {:?}",
            writes(unplaced)
        );
    }
    assert_eq!(writes("cd /etc && echo > a"), [at("/etc/a")]);
}
