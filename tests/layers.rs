//! The layers README.md's "Layout" names, as the imports have them: store →
//! view → edit → checks → analysis → report → fix → render → commands, each
//! importing only from the ones before it (and from the leaf modules: text,
//! clock, version, kinds, validate, secrets, runs, server, appserver,
//! batch's helpers where a layer needs them). A `crate::X` path to a layer
//! after its own fails here, naming the file and line. And the size of the
//! modules: a source file over 400 lines says why at its top
//! (`//! Long because: ...`), or is split where it holds two ideas.

use std::fs;
use std::path::Path;

const ORDER: &[&str] = &[
    "store", "view", "edit", "checks", "analysis", "report", "fix", "render", "commands",
];

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The modules a line names as `crate::X`.
fn crate_paths(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        out.push(&rest[..end]);
    }
    out
}

#[test]
fn no_layer_imports_a_later_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    for (rank, layer) in ORDER.iter().enumerate() {
        let dir = src.join(layer);
        let mut files = Vec::new();
        if dir.is_dir() {
            rs_files(&dir, &mut files);
        }
        let single = src.join(format!("{layer}.rs"));
        if single.is_file() {
            files.push(single);
        }
        assert!(!files.is_empty(), "no source for layer {layer}");
        for f in files {
            let text = fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for m in crate_paths(code) {
                    if let Some(r) = ORDER.iter().position(|l| *l == m) {
                        if r > rank {
                            bad.push(format!(
                                "{}:{}: {layer} imports {m}: {}",
                                f.strip_prefix(&src).unwrap().display(),
                                n + 1,
                                line.trim()
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports that run back up:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_finds_an_import_that_runs_back_up() {
    assert_eq!(
        crate_paths("let run = crate::fix::persist::valid_run_id(id) && crate::runs::x;"),
        ["fix", "runs"]
    );
}

/// The layers in the order `text` first names each (`src/X` in README.md,
/// a bare `X` in `src/lib.rs`'s doc comment), among those it names.
fn stated_order(text: &str, name: &dyn Fn(&str) -> String) -> Vec<&'static str> {
    let mut at: Vec<(usize, &'static str)> = ORDER
        .iter()
        .filter_map(|l| text.find(&name(l)).map(|i| (i, *l)))
        .collect();
    at.sort();
    at.into_iter().map(|(_, l)| l).collect()
}

/// README's Layout, lib.rs's doc comment and this file's own state the
/// layers in [`ORDER`], every one of them.
#[test]
fn readme_and_lib_state_the_same_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let layout = readme
        .split("## Layout")
        .nth(1)
        .expect("README.md has a Layout section");
    let layout = layout.split("\n## ").next().unwrap();
    assert_eq!(
        stated_order(layout, &|l| format!("`src/{l}`")),
        ORDER,
        "README.md's Layout"
    );
    let lib = fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let doc: String = lib
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join(" ");
    let words = doc
        .split("Layers")
        .nth(1)
        .expect("lib.rs states the layers");
    assert_eq!(
        stated_order(words, &|l| format!(" {l} ")),
        ORDER,
        "src/lib.rs's doc comment"
    );
    let this = fs::read_to_string(root.join("tests/layers.rs")).unwrap();
    let doc: String = this
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(
        stated_order(&doc, &|l| format!(" {l}")),
        ORDER,
        "tests/layers.rs's doc comment"
    );
}

/// An error that ends a command crosses one boundary: the command returns
/// it and `crate::run` (src/lib.rs) prints it, once (issue 25). No command
/// prints an error itself, except those of [`PRINT_THEIR_OWN`].
const PRINT_THEIR_OWN: &[&str] = &[];

#[test]
fn commands_return_their_errors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src.join("commands"), &mut files);
    let mut bad = Vec::new();
    for f in files {
        let name = f.strip_prefix(&src).unwrap().display().to_string();
        if PRINT_THEIR_OWN.contains(&name.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for printer in [
                "render::error(",
                "render::fail(",
                "eprintln!",
                "eprint!",
                "process::exit(",
            ] {
                if code.contains(printer) {
                    bad.push(format!("src/{name}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "return the error (crate::run prints it, once):\n{}",
        bad.join("\n")
    );
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    assert_eq!(
        lib.matches("render::fail(").count(),
        1,
        "src/lib.rs prints once"
    );
}

/// Lines a source file may have without saying why it is longer.
const MAX_LINES: usize = 400;

/// How a long file says why, as one line of its leading `//!` comment.
const LONG_BECAUSE: &str = "//! Long because: ";

/// Files over [`MAX_LINES`] that do not yet say why, in the areas being
/// split or annotated in parallel (src/fix, src/checks, src/store,
/// src/analysis, src/view, src/validate, src/claude, src/codex). This list
/// must only shrink: a file leaves it when it is split below the limit or
/// states its reason; no file is ever added (a new long file says why, or
/// is split). `long_files_say_why` fails on an entry that no longer needs
/// to be here.
const NOT_YET_SAID: &[&str] = &[];

/// Whether `text`, a source file, is short or says at its top why it is
/// not: a `//! Long because: <reason>` line in its leading `//!` comment.
fn says_why_if_long(text: &str) -> bool {
    text.lines().count() <= MAX_LINES
        || text.lines().take_while(|l| l.starts_with("//!")).any(|l| {
            l.strip_prefix(LONG_BECAUSE)
                .is_some_and(|r| !r.trim().is_empty())
        })
}

/// No source file is over ~400 lines without a reason stated at its top
/// (issue 25), except those of [`NOT_YET_SAID`].
#[test]
fn long_files_say_why() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut unsaid = Vec::new();
    for f in &files {
        let name = f.strip_prefix(&src).unwrap().display().to_string();
        let text = fs::read_to_string(f).unwrap();
        if !says_why_if_long(&text) {
            unsaid.push((name, text.lines().count()));
        }
    }
    let new: Vec<String> = unsaid
        .iter()
        .filter(|(n, _)| !NOT_YET_SAID.contains(&n.as_str()))
        .map(|(n, lines)| format!("src/{n}: {lines} lines"))
        .collect();
    assert!(
        new.is_empty(),
        "over {MAX_LINES} lines with no `{LONG_BECAUSE}...` line in the leading `//!` comment \
         (split the file where it holds two ideas, or say why it is one):\n{}",
        new.join("\n")
    );
    let done: Vec<&str> = NOT_YET_SAID
        .iter()
        .copied()
        .filter(|a| !unsaid.iter().any(|(n, _)| n == a))
        .collect();
    assert!(
        done.is_empty(),
        "short now, or saying why: remove from NOT_YET_SAID (it only shrinks): {done:?}"
    );
}

#[test]
fn the_allow_list_holds_only_the_areas_not_yet_done() {
    let areas = [
        "fix/",
        "checks/",
        "store/",
        "analysis/",
        "view/",
        "validate/",
        "claude/",
        "codex/",
    ];
    for f in NOT_YET_SAID {
        assert!(areas.iter().any(|a| f.starts_with(a)), "{f}");
    }
}

#[test]
fn a_long_file_says_why_in_its_leading_comment() {
    let body = "fn f() {}\n".repeat(MAX_LINES);
    assert!(says_why_if_long(&body));
    let long = format!("{body}fn g() {{}}\n");
    assert!(!says_why_if_long(&long));
    assert!(says_why_if_long(&format!(
        "//! A module.\n//!\n//! Long because: one idea, long.\n{long}"
    )));
    // not a reason: empty, or below the leading comment
    assert!(!says_why_if_long(&format!("//! Long because: \n{long}")));
    assert!(!says_why_if_long(&format!(
        "//! A module.\n\n//! Long because: late.\n{long}"
    )));
}
