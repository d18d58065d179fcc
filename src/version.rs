//! Server/SDK versions and the on-disk rules that change between them.
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

/// The newest release whose rules this build knows (the default).
pub const NEWEST: Version = Version::new(1, 58, 2);
/// [`NEWEST`] spelled out (clap defaults take text).
pub const NEWEST_STR: &str = "1.58.2";

/// The version whose rules apply for a requested one: a release newer than
/// any this build knows gets the newest known rules (and the caller warns).
pub fn rules_for(requested: Version) -> Version {
    requested.min(NEWEST)
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// v1.30.0 widened the event-name regex from `\d{5}` to `\d{5,}` (#3927).
    pub fn wide_index(self) -> bool {
        self >= Version::new(1, 30, 0)
    }

    /// v1.31.0 introduced the event tree (`parent_id`, `leaf_event_id`, `__root__`).
    pub fn tree_era(self) -> bool {
        self >= Version::new(1, 31, 0)
    }

    /// Which rule `_resolve_active_leaf` uses when `leaf_event_id` is unset.
    pub fn leaf_rule(self) -> LeafRule {
        if self >= Version::new(1, 35, 0) {
            LeafRule::SkipArtifacts
        } else {
            LeafRule::LastUnlessParented
        }
    }

    /// Before v1.43.0 the agent-server stored (and on resume, used) a second
    /// copy of the agent in meta.json (#4440).
    pub fn meta_owns_agent(self) -> bool {
        self < Version::new(1, 43, 0)
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
        let mut parts = t.split('.');
        let mut next = |name: &str, required: bool| -> Result<u32, String> {
            match parts.next() {
                Some(p) => p
                    .parse::<u32>()
                    .map_err(|_| format!("`{s}` is not a version like 1.43.0 (bad {name})")),
                None if required => Err(format!("`{s}` is not a version like 1.43.0")),
                None => Ok(0),
            }
        };
        let v = Version::new(
            next("major", true)?,
            next("minor", true)?,
            next("patch", false)?,
        );
        if parts.next().is_some() {
            return Err(format!("`{s}` is not a version like 1.43.0"));
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
    fn newest_str_spells_newest() {
        assert_eq!(NEWEST_STR.parse::<Version>().unwrap(), NEWEST);
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
    }
}
