//! The event kinds each SDK release can deserialize, extracted from the real
//! releases by `fixtures/gen/extract_kinds.py` and kept as data in `data/kinds/`
//! (which releases: [`crate::version::RELEASES`]). A kind outside these lists
//! makes the SDK raise `ValidationError`.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::version::{self, Version};

/// The event kinds the rules name, as an event's `kind` spells them (the
/// SDK's class names): each spelled here once.
pub const ACTION: &str = "ActionEvent";
pub const OBSERVATION: &str = "ObservationEvent";
pub const USER_REJECT: &str = "UserRejectObservation";
/// An error answering a tool call (by `tool_call_id`; it has no
/// `action_id`).
pub const AGENT_ERROR: &str = "AgentErrorEvent";
pub const MESSAGE: &str = "MessageEvent";
/// The state-sync artifact kind: never a tree node, never advances HEAD.
pub const STATE_UPDATE: &str = "ConversationStateUpdateEvent";
/// Treated as an artifact by the ≥1.35 leaf fallback (#4068), but it
/// advances HEAD.
pub const CONVERSATION_ERROR: &str = "ConversationErrorEvent";

/// The SDK's `ObservationBaseEvent` kinds (observation, rejection,
/// AgentErrorEvent): the results of a tool call, each carrying its
/// `tool_call_id`.
pub fn is_result(kind: &str) -> bool {
    matches!(kind, OBSERVATION | USER_REJECT | AGENT_ERROR)
}

#[derive(Deserialize)]
struct RawKinds {
    event_kinds: Vec<String>,
    action_kinds: Vec<String>,
    observation_kinds: Vec<String>,
    /// Top-level keys each kind accepts (kinds with `extra="forbid"`).
    #[serde(default)]
    event_fields: HashMap<String, Vec<String>>,
}

/// Every top-level event key any extracted release accepts, sorted: a key's
/// position is its bit in [`crate::store::EventRecord::keys`].
fn key_table() -> &'static Vec<String> {
    static TABLE: OnceLock<Vec<String>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut all: Vec<String> = version::extracted()
            .filter_map(|(_, _, data)| serde_json::from_str::<RawKinds>(data.kinds).ok())
            .flat_map(|k| k.event_fields.into_values().flatten())
            .collect();
        all.sort();
        all.dedup();
        all.truncate(128);
        all
    })
}

/// The bit of a top-level event key, if any release knows it.
pub fn key_bit(key: &str) -> Option<u32> {
    key_table()
        // byte by byte, inlined (the same order as `str::cmp`): cheaper
        // than a `memcmp` call for keys this short
        .binary_search_by(|k| k.as_bytes().iter().cmp(key.as_bytes().iter()))
        .ok()
        .map(|i| i as u32)
}

/// The name of a key bit.
pub fn key_name(bit: u32) -> &'static str {
    key_table().get(bit as usize).map_or("?", |s| s.as_str())
}

#[derive(Debug)]
pub struct Kinds {
    /// The release these lists were extracted from.
    pub source: Version,
    pub event: HashSet<String>,
    pub action: HashSet<String>,
    pub observation: HashSet<String>,
    /// Allowed top-level keys per event kind, as a mask over [`key_bit`].
    pub fields: HashMap<String, u128>,
}

fn all() -> &'static [Kinds] {
    static ALL: OnceLock<Vec<Kinds>> = OnceLock::new();
    ALL.get_or_init(|| {
        version::extracted()
            .map(|(source, v, data)| {
                let raw: RawKinds = serde_json::from_str(data.kinds).unwrap_or_else(|e| {
                    unreachable!("data/kinds/{v}.json is checked by tests: {e}")
                });
                let fields = raw
                    .event_fields
                    .into_iter()
                    .map(|(kind, keys)| {
                        let mask = keys
                            .iter()
                            .filter_map(|k| key_bit(k))
                            .fold(0u128, |m, b| m | 1u128 << b);
                        (kind, mask)
                    })
                    .collect();
                Kinds {
                    source,
                    event: raw.event_kinds.into_iter().collect(),
                    action: raw.action_kinds.into_iter().collect(),
                    observation: raw.observation_kinds.into_iter().collect(),
                    fields,
                }
            })
            .collect()
    })
}

/// Every event, action and observation kind any release knows.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    all()
        .iter()
        .flat_map(|k| k.event.iter().chain(&k.action).chain(&k.observation))
        .map(String::as_str)
}

/// `s` as the kind tables spell it (a `&'static str`), if any release
/// knows it as an event, action or observation kind: an event record holds
/// a long kind name without a copy of its own.
pub fn known_name(s: &str) -> Option<&'static str> {
    static NAMES: OnceLock<HashSet<&'static str>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            all()
                .iter()
                .flat_map(|k| k.event.iter().chain(&k.action).chain(&k.observation))
                .map(String::as_str)
                .collect()
        })
        .get(s)
        .copied()
}

impl Kinds {
    /// The lists of the newest extracted release not newer than `v` (the
    /// oldest one for versions before every extracted release).
    pub fn for_version(v: Version) -> &'static Kinds {
        &all()[version::extracted_for(v)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_data_file_parses_and_holds_the_stock_kinds() {
        for k in all() {
            assert!(k.event.contains("MessageEvent"), "{}", k.source);
            assert!(
                k.event.contains("ConversationStateUpdateEvent"),
                "{}",
                k.source
            );
            assert!(k.action.contains("FinishAction"), "{}", k.source);
            assert!(!k.event.contains("CanvasUIObservation"));
        }
    }

    #[test]
    fn picks_the_newest_release_not_after_the_version() {
        assert_eq!(
            Kinds::for_version(Version::new(1, 58, 2)).source,
            Version::new(1, 58, 2)
        );
        assert_eq!(
            Kinds::for_version(Version::new(1, 33, 9)).source,
            Version::new(1, 33, 0)
        );
        assert_eq!(
            Kinds::for_version(Version::new(1, 40, 0)).source,
            Version::new(1, 38, 0)
        );
        assert_eq!(
            Kinds::for_version(Version::new(1, 0, 0)).source,
            Version::new(1, 29, 3)
        );
        // exact between 1.43 and 1.58 too: AskOracle (1.47), ClassifyAndSwitchLLM
        // (1.52), SecurityAnalysisEvent (1.55), StartChildConversation (1.58)
        let k = Kinds::for_version(Version::new(1, 50, 0));
        assert_eq!(k.source, Version::new(1, 47, 0));
        assert!(k.action.contains("AskOracleAction"));
        assert!(!k.action.contains("ClassifyAndSwitchLLMAction"));
        let k = Kinds::for_version(Version::new(1, 56, 0));
        assert_eq!(k.source, Version::new(1, 55, 1));
        assert!(k.event.contains("SecurityAnalysisEvent"));
        assert!(!k.action.contains("StartChildConversationAction"));
        assert!(!Kinds::for_version(Version::new(1, 46, 0))
            .action
            .contains("AskOracleAction"));
    }
}
