//! `--id ID`: restrict a run to the named conversations (the folders, the
//! app server's rows and event copies). An id is written as the UI's URL
//! shows it (32 hex digits), dashed as the database keeps it, or as the
//! start of either; a start that names no conversation or several is an
//! error naming it.

use std::collections::{BTreeSet, HashMap, HashSet};

/// One `--id` as given, and its hex digits (lower case, no dashes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdArg {
    pub given: String,
    pub hex: String,
}

/// Parse one `--id`: hex digits with optional dashes (braces and
/// `urn:uuid:` accepted, as Python's `uuid.UUID` does), at most 32 digits.
pub fn parse(s: &str) -> Result<IdArg, String> {
    let t = s.trim();
    let t = t.strip_prefix("urn:uuid:").unwrap_or(t);
    let t = t.trim_start_matches('{').trim_end_matches('}');
    let hex: String = t.chars().filter(|&c| c != '-').collect();
    if hex.is_empty() || hex.len() > 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "`{}` is not a conversation id or the start of one (hex digits, dashes optional, as in the UI's URL)",
            crate::text::sanitize(s)
        ));
    }
    Ok(IdArg {
        given: s.to_string(),
        hex: hex.to_ascii_lowercase(),
    })
}

/// The conversations a run is restricted to, by id (32 hex digits).
#[derive(Debug, Default)]
pub struct Wanted {
    /// Each selected id, with the `--id` it came from.
    ids: HashMap<String, String>,
    /// The ids a report was made for.
    seen: HashSet<String>,
}

/// How many ids an ambiguity error names.
const NAMED: usize = 5;

impl Wanted {
    /// Resolve `args` against the ids known before the scan (the folders'
    /// names, the rows, the copies): a start of an id must name exactly
    /// one; a whole id is kept even when unknown yet (a folder not named by
    /// its id may carry it), and [`Wanted::unmatched`] says so at the end.
    /// Errors name the `--id`.
    pub fn resolve(args: &[IdArg], known: &BTreeSet<String>) -> (Wanted, Vec<String>) {
        let mut w = Wanted::default();
        let mut errors = Vec::new();
        for a in args {
            let shown = crate::text::sanitize(&a.given);
            if a.hex.len() == 32 {
                w.ids.insert(a.hex.clone(), a.given.clone());
                continue;
            }
            let hits: Vec<&String> = known
                .range(a.hex.clone()..)
                .take_while(|k| k.starts_with(&a.hex))
                .collect();
            match hits.as_slice() {
                [] => errors.push(format!("--id `{shown}`: no conversation's id starts so")),
                [one] => {
                    w.ids.insert((*one).clone(), a.given.clone());
                }
                many => errors.push(format!(
                    "--id `{shown}` is ambiguous: {} conversations' ids start so ({}{}); give more of it",
                    many.len(),
                    many.iter()
                        .take(NAMED)
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    if many.len() > NAMED { ", …" } else { "" }
                )),
            }
        }
        (w, errors)
    }

    /// Whether `id` (any spelling) is selected; remembered as seen.
    pub fn take(&mut self, id: &str) -> bool {
        match crate::appserver::uuid_hex(id) {
            Some(hex) if self.ids.contains_key(&hex) => {
                self.seen.insert(hex);
                true
            }
            _ => false,
        }
    }

    /// Whether `id` (32 hex digits) is selected.
    pub fn contains(&self, hex: &str) -> bool {
        self.ids.contains_key(hex)
    }

    /// One error per whole `--id` no report was made for.
    pub fn unmatched(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .ids
            .iter()
            .filter(|(hex, _)| !self.seen.contains(*hex))
            .map(|(_, given)| {
                format!(
                    "--id `{}`: no conversation has this id among those looked at",
                    crate::text::sanitize(given)
                )
            })
            .collect();
        out.sort();
        out
    }
}

/// A folder's conversation id, by its name (the agent-server names each
/// `<conversations>/<id hex>`).
pub fn folder_hex(dir: &std::path::Path) -> Option<String> {
    dir.file_name()?
        .to_str()
        .and_then(crate::appserver::uuid_hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> BTreeSet<String> {
        [
            "9ee5f8b754b05705a4b58a7d4557b224",
            "9ee5f8b7aaaa5705a4b58a7d4557b224",
            "06673cd287ee5544a7de183d547b6b62",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn every_spelling_and_prefix() {
        let args: Vec<IdArg> = [
            "06673CD2-87EE-5544-A7DE-183D547B6B62",
            "9ee5f8b7-54b0",
            "urn:uuid:{ffffffff-0000-0000-0000-000000000000}",
        ]
        .iter()
        .map(|s| parse(s).unwrap())
        .collect();
        let (mut w, errors) = Wanted::resolve(&args, &known());
        assert!(errors.is_empty(), "{errors:?}");
        assert!(w.contains("06673cd287ee5544a7de183d547b6b62"));
        assert!(w.take("9ee5f8b7-54b0-5705-a4b5-8a7d4557b224"));
        assert!(!w.take("9ee5f8b7aaaa5705a4b58a7d4557b224"));
        assert!(w.take("06673cd287ee5544a7de183d547b6b62"));
        // the whole id nobody has is said at the end
        assert_eq!(w.unmatched().len(), 1);
        assert!(w.unmatched()[0].contains("ffffffff-0000"));
    }

    #[test]
    fn ambiguous_unmatched_and_bad() {
        let args = vec![parse("9EE5").unwrap(), parse("abc").unwrap()];
        let (_, errors) = Wanted::resolve(&args, &known());
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("`9EE5` is ambiguous: 2 conversations"));
        assert!(errors[1].contains("`abc`: no conversation"));
        assert!(parse("xyz").is_err());
        assert!(parse("").is_err());
        assert!(parse(&"a".repeat(33)).is_err());
    }
}
