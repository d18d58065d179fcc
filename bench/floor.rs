//! The in-process read floor: list every conversation's `events/` folder (and
//! its state files), open and read every file to its end, parse nothing, on
//! `-j N` threads (default: the number of cores), the files shared out in
//! one queue as convo-doctor's pool shares them. What convo-doctor cannot
//! beat without reading less.
//!
//!     rustc -O --edition 2021 bench/floor.rs -o read-floor
//!     read-floor [-j N] DIR
//!
//! DIR is a conversation folder or a store of them (one level of folders).
//! Prints the files and bytes read to stderr.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn conversation_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for name in ["base_state.json", "meta.json"] {
        let p = dir.join(name);
        if p.is_file() {
            out.push(p);
        }
    }
    if let Ok(rd) = fs::read_dir(dir.join("events")) {
        for e in rd.flatten() {
            out.push(e.path());
        }
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    if args.len() == 3 && args[0] == "-j" {
        jobs = args[1].parse().expect("-j N");
        args.drain(..2);
    }
    let [root] = &args[..] else {
        eprintln!("usage: read-floor [-j N] DIR");
        std::process::exit(2);
    };
    let root = Path::new(root);
    let mut files = Vec::new();
    if root.join("events").is_dir() || root.join("base_state.json").is_file() {
        conversation_files(root, &mut files);
    } else {
        let mut convs: Vec<PathBuf> = fs::read_dir(root)
            .expect("DIR")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        convs.sort();
        for c in convs {
            conversation_files(&c, &mut files);
        }
    }
    let next = AtomicUsize::new(0);
    let bytes = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut buf = Vec::new();
                let mut total = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = files.get(i) else { break };
                    buf.clear();
                    if let Ok(mut f) = fs::File::open(p) {
                        let _ = f.read_to_end(&mut buf);
                        total += buf.len();
                    }
                }
                bytes.fetch_add(total, Ordering::Relaxed);
            });
        }
    });
    eprintln!(
        "{} files, {} bytes, {jobs} threads",
        files.len(),
        bytes.load(Ordering::Relaxed)
    );
}
