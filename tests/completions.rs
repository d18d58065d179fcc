//! The completion scripts and man pages, exercised by the programs that use
//! them: bash (always present) runs the generated completion function the
//! way `complete -F` does; fish and zsh when installed (skipped with a
//! printed reason otherwise); man pages are rendered and, when `man` is
//! installed, formatted by `man -l` with warnings on.
#![allow(clippy::print_stderr)] // skip notes for the test log

use std::path::Path;
use std::process::Command;

fn bin(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn script(dir: &Path, shell: &str) -> std::path::PathBuf {
    let (code, out, err) = bin(&["completions", shell]);
    assert_eq!(code, 0, "{err}");
    let path = dir.join(format!("convo-doctor.{shell}"));
    std::fs::write(&path, out).unwrap();
    path
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// What bash's programmable completion offers for `line` (the last word is
/// the one being completed): the script is sourced, the function registered
/// for `convo-doctor` is looked up with `complete -p` and called with the
/// arguments and COMP_* variables bash gives it.
fn bash_complete(script: &Path, line: &[&str]) -> Vec<String> {
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let program = format!(
        r#"source '{}' || exit 3
spec=$(complete -p convo-doctor) || exit 4
fn=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
COMPREPLY=()
"$fn" convo-doctor "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        script.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommand_flags_and_check_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), "bash");
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "diagnose", "--fo"]),
        ["--format"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "diagnose", "--only", "fal"]),
        ["false-root"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "diagnose", "--skip", "meta-d"]),
        ["meta-divergence", "meta-duplicate"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "explain", "false-"]),
        ["false-root"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "repair", "--only", "stale-l"]),
        ["stale-leaf"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "undo", "--li"]),
        ["--list"]
    );
    // The subcommands themselves.
    assert_eq!(bash_complete(&s, &["convo-doctor", "dia"]), ["diagnose"]);
    // Every id of the registry is offered after --only.
    let all = bash_complete(&s, &["convo-doctor", "diagnose", "--only", ""]);
    for c in convo_doctor::checks::REGISTRY {
        assert!(all.iter().any(|w| w == c.id()), "{} not offered", c.id());
    }
}

#[test]
fn declared_ids_do_not_change_the_unknown_check_error() {
    for args in [
        &["diagnose", "--only", "nope", "fixtures"][..],
        &["diagnose", "--skip", "nope", "fixtures"][..],
        &["explain", "nope"][..],
    ] {
        let (code, out, err) = bin(args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(out, "");
        assert!(
            err.contains("unknown check `nope` (run `convo-doctor explain` for the list)"),
            "{args:?}: {err}"
        );
    }
    // And --help does not grow a list of thirty ids.
    let (_, help, _) = bin(&["diagnose", "--help"]);
    assert!(!help.contains("possible values: changed-during-read"));
}

#[test]
fn fish_completes_subcommand_flags_and_check_ids() {
    if !installed("fish") {
        eprintln!("skipped: fish is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), "fish");
    let ask = |line: &str| -> Vec<String> {
        let out = Command::new("fish")
            .args([
                "--no-config",
                "-c",
                &format!("source '{}'; complete -C '{line}'", s.display()),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            // fish prints "candidate<TAB>description".
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(ask("convo-doctor diagnose --fo"), ["--format"]);
    assert_eq!(ask("convo-doctor diagnose --only fal"), ["false-root"]);
    assert_eq!(ask("convo-doctor explain false-"), ["false-root"]);
}

#[test]
fn zsh_script_loads_and_declares_check_ids() {
    if !installed("zsh") {
        eprintln!("skipped: zsh is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), "zsh");
    // zsh parses it (-n: no execution) ...
    let out = Command::new("zsh")
        .args(["-f", "-n", s.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ... and compinit loads it from fpath as the `_convo-doctor` function.
    std::fs::rename(&s, tmp.path().join("_convo-doctor")).unwrap();
    let out = Command::new("zsh")
        .args([
            "-f",
            "-c",
            &format!(
                "fpath=('{}' $fpath); autoload -Uz compinit; compinit -u -D; \
                 print -r -- $_comps[convo-doctor]",
                tmp.path().display()
            ),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "_convo-doctor");
    let text = std::fs::read_to_string(tmp.path().join("_convo-doctor")).unwrap();
    assert!(text.contains("false-root") && text.contains("--only"));
}

/// The pages `convo-doctor man [COMMAND]` prints: the main one and one per
/// command.
const PAGES: &[&str] = &[
    "",
    "diagnose",
    "repair",
    "undo",
    "explain",
    "completions",
    "man",
];

fn page(name: &str) -> String {
    let args: Vec<&str> = std::iter::once("man")
        .chain((!name.is_empty()).then_some(name))
        .collect();
    let (code, out, err) = bin(&args);
    assert_eq!(code, 0, "man {name}: {err}");
    out
}

/// The text of section `title` (up to the next `.SH`), roff escapes kept.
fn section<'a>(roff: &'a str, title: &str) -> &'a str {
    let heads = [format!(".SH {title}\n"), format!(".SH \"{title}\"\n")];
    let start = heads
        .iter()
        .find_map(|h| roff.find(h.as_str()).map(|i| i + h.len()))
        .unwrap_or_else(|| panic!("no section {title}"));
    let rest = &roff[start..];
    &rest[..rest.find("\n.SH ").unwrap_or(rest.len())]
}

#[test]
fn man_pages_have_the_usual_sections() {
    for name in PAGES {
        let roff = page(name);
        for title in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "EXIT STATUS",
            "ENVIRONMENT",
            "FILES",
            "EXAMPLES",
            "SEE ALSO",
        ] {
            assert!(
                !section(&roff, title).trim().is_empty(),
                "man {name}: {title}"
            );
        }
        let env = section(&roff, "ENVIRONMENT");
        for var in [
            "NO_COLOR",
            "XDG_STATE_HOME",
            "HOME",
            "OH_SECRET_KEY",
            "OH_PREVIOUS_SECRET_KEYS",
        ] {
            assert!(env.contains(&format!("\\fB{var}\\fR")), "man {name}: {var}");
        }
        let files = section(&roff, "FILES");
        assert!(files.contains("manifest.json"), "man {name}");
        assert!(files.contains("convo\\-doctor/backups"), "man {name}");
        // Exit codes 0 and 2 are documented on every page.
        let exit = section(&roff, "EXIT STATUS");
        assert!(
            exit.contains('0') && exit.contains('2'),
            "man {name}: {exit}"
        );
    }
    // The exit status of diagnose is the one its --help prints.
    let diagnose = page("diagnose");
    let exit = section(&diagnose, "EXIT STATUS");
    assert!(
        exit.contains("findings at or above \\-\\-fail\\-on"),
        "{exit}"
    );
    assert!(section(&page("repair"), "REPAIRS").contains("false\\-root"));
}

/// Every example in the man pages is a command line the CLI accepts (a
/// renamed flag would fail here).
#[test]
fn man_page_examples_parse() {
    use clap::Parser;
    let mut seen = 0;
    for name in PAGES {
        let roff = page(name);
        for line in section(&roff, "EXAMPLES").lines() {
            let line = line.replace("\\-", "-");
            if !line.starts_with("convo-doctor ") {
                continue;
            }
            let line = line.split(['|', '>']).next().unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Err(e) = convo_doctor::cli::Cli::try_parse_from(&words) {
                panic!("man {name}: `{line}` does not parse: {e}");
            }
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} examples");
}

/// `man -l` (groff underneath) formats every page without a warning.
#[test]
fn man_renders_pages_without_warnings() {
    if !installed("man") || !installed("groff") {
        eprintln!("skipped: man or groff is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for name in PAGES {
        let path = tmp.path().join("page.1");
        std::fs::write(&path, page(name)).unwrap();
        let out = Command::new("man")
            .args(["--warnings", "-E", "UTF-8", "-l"])
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "man {name}: {err}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("EXIT STATUS") && text.contains("OH_SECRET_KEY"),
            "man {name}"
        );
    }
}
