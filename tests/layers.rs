//! The layers README.md's "Layout" names, as the imports have them: store →
//! view → edit → checks → analysis → report → fix → render → commands, each
//! importing only from the ones before it (and from the leaf modules: text,
//! clock, version, kinds, validate, secrets, runs, server, appserver,
//! batch's helpers where a layer needs them). A `crate::X` path to a layer
//! after its own fails here, naming the file and line.

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

/// README's Layout and lib.rs's doc comment state the layers in this
/// file's order, every one of them.
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
}
