//! The releases this build knows, and what each one changes: the one table
//! ([`RELEASES`]) that every version rule reads. The event kinds
//! (`crate::kinds`), the pydantic models (`crate::validate`), the listing
//! eras (`crate::server`), the `--server-version` default and the rules a
//! requested version gets all come from it.
//!
//! The agent-server and the SDK are released together with the same version
//! number, so one `--server-version` selects every rule below.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

/// A change of the on-disk rules, at the release that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The event-name regex widened from `\d{5}` to `\d{5,}` (#3927).
    WideIndex,
    /// The event tree: `parent_id`, `leaf_event_id`, `__root__`.
    TreeEra,
    /// `_resolve_active_leaf` skips state-sync artifacts when `leaf_event_id`
    /// is unset (#4068); before, the last event unless it carries a parent.
    LeafSkipsArtifacts,
    /// The agent-server lists from a catalog of meta.json records (lazy
    /// hydration, #4100) instead of starting every conversation at startup.
    Catalog,
    /// meta.json no longer carries (nor, on resume, supplies) the agent
    /// (#4440): base_state.json's is the only one.
    MetaDropsAgent,
    /// The catalog scan parses each folder name as a UUID
    /// (`self._cipher_for(UUID(conversation_dir.name))`).
    CatalogUuidName,
}

/// The models extracted from one real release (fixtures/gen/extract_kinds.py,
/// fixtures/gen/extract_schemas.py), as JSON text.
#[derive(Clone, Copy, Debug)]
pub struct Extracted {
    /// `data/kinds/<v>.json`: the event, action and observation kinds.
    pub kinds: &'static str,
    /// `data/schemas/<v>.json`: the pydantic models of events,
    /// base_state.json and meta.json.
    pub schema: &'static str,
}

/// One release: a rule change, extracted models, or both.
#[derive(Clone, Copy, Debug)]
pub struct Release {
    pub name: &'static str,
    pub version: Version,
    pub changes: &'static [Change],
    pub extracted: Option<Extracted>,
}

macro_rules! release {
    ($v:literal, [$($c:ident),*], extracted) => {
        Release {
            name: $v,
            version: Version::parse_const($v),
            changes: &[$(Change::$c),*],
            extracted: Some(Extracted {
                kinds: include_str!(concat!("../data/kinds/", $v, ".json")),
                schema: include_str!(concat!("../data/schemas/", $v, ".json")),
            }),
        }
    };
    ($v:literal, [$($c:ident),*]) => {
        Release {
            name: $v,
            version: Version::parse_const($v),
            changes: &[$(Change::$c),*],
            extracted: None,
        }
    };
}

/// Every release whose rules or models this build knows, oldest first; the
/// last is the newest (the default).
pub const RELEASES: &[Release] = &[
    release!("1.29.3", [], extracted),
    release!("1.30.0", [WideIndex]),
    release!("1.31.0", [TreeEra]),
    release!("1.33.0", [], extracted),
    release!("1.34.0", [], extracted),
    release!("1.35.0", [LeafSkipsArtifacts]),
    release!("1.37.0", [Catalog]),
    release!("1.38.0", [], extracted),
    release!("1.43.0", [MetaDropsAgent]),
    release!("1.43.1", [], extracted),
    release!("1.47.0", [], extracted),
    release!("1.49.0", [CatalogUuidName]),
    release!("1.52.0", [], extracted),
    release!("1.55.1", [], extracted),
    release!("1.58.2", [], extracted),
];

/// The newest release whose rules this build knows (the default).
pub const NEWEST: Version = RELEASES[RELEASES.len() - 1].version;
/// [`NEWEST`] spelled out (clap defaults take text).
pub const NEWEST_STR: &str = RELEASES[RELEASES.len() - 1].name;

/// The version whose rules apply for a requested one: a release newer than
/// any this build knows gets the newest known rules (and the caller warns).
pub fn rules_for(requested: Version) -> Version {
    requested.min(NEWEST)
}

/// The releases with extracted models, oldest first.
pub fn extracted() -> impl Iterator<Item = (Version, &'static str, Extracted)> {
    RELEASES
        .iter()
        .filter_map(|r| r.extracted.map(|e| (r.version, r.name, e)))
}

/// The position in [`extracted`] of the newest extracted release not newer
/// than `v` (the oldest for versions before every extracted release).
pub fn extracted_for(v: Version) -> usize {
    extracted().filter(|(sv, _, _)| *sv <= v).count().max(1) - 1
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// `"1.43.0"` at compile time (the table's spelling; a typo fails the build).
    const fn parse_const(s: &str) -> Version {
        let b = s.as_bytes();
        let mut parts = [0u32; 3];
        let (mut i, mut p) = (0, 0);
        while i < b.len() {
            match b[i] {
                b'.' => p += 1,
                d @ b'0'..=b'9' => parts[p] = parts[p] * 10 + (d - b'0') as u32,
                _ => panic!("a release in RELEASES is not spelled X.Y.Z"),
            }
            i += 1;
        }
        assert!(p == 2, "a release in RELEASES is not spelled X.Y.Z");
        Version::new(parts[0], parts[1], parts[2])
    }

    /// The release that made `change`.
    pub fn of(change: Change) -> Version {
        RELEASES
            .iter()
            .find(|r| r.changes.contains(&change))
            .map(|r| r.version)
            .unwrap_or_else(|| unreachable!("every Change has its release in RELEASES"))
    }

    /// Whether this version has `change` (is that release or newer).
    pub fn has(self, change: Change) -> bool {
        self >= Version::of(change)
    }

    /// The event-name regex takes more than five digits.
    pub fn wide_index(self) -> bool {
        self.has(Change::WideIndex)
    }

    /// The event tree (`parent_id`, `leaf_event_id`, `__root__`).
    pub fn tree_era(self) -> bool {
        self.has(Change::TreeEra)
    }

    /// Which rule `_resolve_active_leaf` uses when `leaf_event_id` is unset.
    pub fn leaf_rule(self) -> LeafRule {
        if self.has(Change::LeafSkipsArtifacts) {
            LeafRule::SkipArtifacts
        } else {
            LeafRule::LastUnlessParented
        }
    }

    /// The agent-server stores (and on resume, uses) a second copy of the
    /// agent in meta.json: every release before [`Change::MetaDropsAgent`].
    pub fn meta_owns_agent(self) -> bool {
        !self.has(Change::MetaDropsAgent)
    }
}

/// The two rules `_resolve_active_leaf` has had for an unset `leaf_event_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafRule {
    /// v1.31–v1.34: the last event, unless it carries a `parent_id` (then no leaf).
    LastUnlessParented,
    /// v1.35+ (#4068): the last event that is not a state-sync artifact.
    SkipArtifacts,
}

impl FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_start_matches('v');
        let bad = |what: &str| {
            format!(
                "`{s}` is not a version like {NEWEST_STR}{what} (releases known: {} to {NEWEST_STR})",
                RELEASES[0].name
            )
        };
        let mut parts = t.split('.');
        let mut next = |name: &str, required: bool| -> Result<u32, String> {
            match parts.next() {
                Some(p) => p.parse::<u32>().map_err(|_| bad(&format!(" (bad {name})"))),
                None if required => Err(bad("")),
                None => Ok(0),
            }
        };
        let v = Version::new(
            next("major", true)?,
            next("minor", true)?,
            next("patch", false)?,
        );
        if parts.next().is_some() {
            return Err(bad(""));
        }
        Ok(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        let v: Version = "1.33.0".parse().unwrap();
        assert_eq!(v, Version::new(1, 33, 0));
        assert_eq!("v1.43".parse::<Version>().unwrap(), Version::new(1, 43, 0));
        assert!("1.x".parse::<Version>().is_err());
        assert!("1.2.3.4".parse::<Version>().is_err());
        assert!(Version::new(1, 29, 3) < Version::new(1, 30, 0));
    }

    #[test]
    fn the_table_is_ordered_and_names_its_versions() {
        for w in RELEASES.windows(2) {
            assert!(w[0].version < w[1].version, "{} {}", w[0].name, w[1].name);
        }
        for r in RELEASES {
            assert_eq!(r.name.parse::<Version>().unwrap(), r.version);
        }
        assert_eq!(NEWEST_STR.parse::<Version>().unwrap(), NEWEST);
        assert!(RELEASES.last().unwrap().extracted.is_some());
        assert_eq!(rules_for(Version::new(2, 0, 0)), NEWEST);
        assert_eq!(rules_for(Version::new(1, 33, 0)), Version::new(1, 33, 0));
    }

    #[test]
    fn rules_switch_at_the_documented_releases() {
        assert!(!Version::new(1, 29, 3).wide_index());
        assert!(Version::new(1, 30, 0).wide_index());
        assert!(!Version::new(1, 30, 9).tree_era());
        assert!(Version::new(1, 31, 0).tree_era());
        assert_eq!(
            Version::new(1, 34, 9).leaf_rule(),
            LeafRule::LastUnlessParented
        );
        assert_eq!(Version::new(1, 35, 0).leaf_rule(), LeafRule::SkipArtifacts);
        assert!(Version::new(1, 42, 1).meta_owns_agent());
        assert!(!Version::new(1, 43, 0).meta_owns_agent());
        assert!(!Version::new(1, 36, 1).has(Change::Catalog));
        assert!(Version::new(1, 37, 0).has(Change::Catalog));
        assert!(!Version::new(1, 48, 0).has(Change::CatalogUuidName));
        assert!(Version::new(1, 49, 0).has(Change::CatalogUuidName));
    }

    #[test]
    fn extracted_releases_pick_the_newest_not_after() {
        let name = |v: Version| extracted().nth(extracted_for(v)).unwrap().1;
        assert_eq!(name(Version::new(1, 58, 2)), "1.58.2");
        assert_eq!(name(Version::new(1, 33, 9)), "1.33.0");
        assert_eq!(name(Version::new(1, 40, 0)), "1.38.0");
        assert_eq!(name(Version::new(1, 0, 0)), "1.29.3");
    }
}
