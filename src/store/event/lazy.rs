//! The lazy record parser: only the keys convo-doctor reads are
//! deserialized; every other key (often a large tool output) is skipped
//! unread, and noted by name for `extra="forbid"`.

use serde::Deserialize;
use serde_json::Value;

use crate::validate::jv::Value as Jv;

/// `action` / `observation`: an object whose `kind` is read and whose other
/// keys (often a large tool output) are skipped unread; any other JSON value
/// is only noted as not an object. (Deserializing it as a struct would make
/// serde quote a string value in its error message, and a file's content must
/// never reach the output.)
pub(super) enum KindOnly {
    Object { kind: Option<Value> },
    Other,
}

impl<'de> Deserialize<'de> for KindOnly {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KindOnly;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<KindOnly, A::Error> {
                let mut kind = None;
                while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    if k == "kind" {
                        kind = Some(m.next_value::<Value>()?);
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(KindOnly::Object { kind })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<KindOnly, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(KindOnly::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<KindOnly, E> {
                Ok(KindOnly::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<KindOnly, E> {
                Ok(KindOnly::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<KindOnly, E> {
                Ok(KindOnly::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<KindOnly, E> {
                Ok(KindOnly::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<KindOnly, E> {
                Ok(KindOnly::Other)
            }
            fn visit_unit<E>(self) -> Result<KindOnly, E> {
                Ok(KindOnly::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// The subset of an event's keys we deserialize; serde skips the rest
/// unread. Every top-level key name is noted (as a bit of the known-key
/// table, or by name when unknown) so a reader can apply the SDK's
/// `extra="forbid"`. A repeated key keeps its last value, as Python's json.
#[derive(Default)]
pub(super) struct RawEvent {
    pub(super) id: Option<Value>,
    pub(super) kind: Option<Value>,
    pub(super) source: Option<Value>,
    pub(super) parent_id: Option<Value>,
    pub(super) timestamp: Option<Value>,
    pub(super) action: Option<KindOnly>,
    pub(super) observation: Option<KindOnly>,
    pub(super) tool_call_id: Option<Value>,
    pub(super) action_id: Option<Value>,
    pub(super) key: Option<Value>,
    pub(super) error: Option<Value>,
    pub(super) code: Option<Value>,
    pub(super) keys: u128,
    pub(super) odd_keys: Vec<String>,
}

/// How many distinct unknown keys of one event are kept (in file order).
pub const MAX_ODD_KEYS: usize = 64;

impl<'de> Deserialize<'de> for RawEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawEvent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawEvent, A::Error> {
                let mut r = RawEvent::default();
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match crate::kinds::key_bit(&k) {
                        Some(bit) => r.keys |= 1u128 << bit,
                        None => {
                            // at most MAX_ODD_KEYS kept, so an event with
                            // 10^6 keys costs at most 64 comparisons per key
                            // and no allocation once the list is full (it
                            // was quadratic: 10^5 keys took 12 s)
                            if r.odd_keys.len() < MAX_ODD_KEYS
                                && !r.odd_keys.iter().any(|o| *o == k)
                            {
                                r.odd_keys.push(k.to_string());
                            }
                        }
                    }
                    match &*k {
                        "id" => r.id = map.next_value()?,
                        "kind" => r.kind = map.next_value()?,
                        "source" => r.source = map.next_value()?,
                        "parent_id" => r.parent_id = map.next_value()?,
                        "timestamp" => r.timestamp = map.next_value()?,
                        "action" => r.action = map.next_value()?,
                        "observation" => r.observation = map.next_value()?,
                        "tool_call_id" => r.tool_call_id = map.next_value()?,
                        "action_id" => r.action_id = map.next_value()?,
                        "key" => r.key = map.next_value()?,
                        "error" => r.error = map.next_value()?,
                        "code" => r.code = map.next_value()?,
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(r)
            }
        }
        d.deserialize_map(V)
    }
}

impl KindOnly {
    pub(super) fn from_value(v: &Jv) -> KindOnly {
        match v {
            Jv::Object(m) => KindOnly::Object {
                kind: m.get("kind").map(Jv::to_serde),
            },
            _ => KindOnly::Other,
        }
    }
}

impl RawEvent {
    /// The same fields as the lazy deserializer, from a parsed object (a
    /// repeated key already kept its last value, as in Python).
    pub(super) fn from_map(m: &crate::validate::jv::Map) -> RawEvent {
        let mut r = RawEvent::default();
        for (k, v) in m {
            let k: &str = k;
            match crate::kinds::key_bit(k) {
                Some(bit) => r.keys |= 1u128 << bit,
                None => {
                    // capped like the lazy path: linear in the key count
                    if r.odd_keys.len() < MAX_ODD_KEYS && !r.odd_keys.iter().any(|o| o == k) {
                        r.odd_keys.push(k.to_string());
                    }
                }
            }
            match k {
                "id" => r.id = Some(v.to_serde()),
                "kind" => r.kind = Some(v.to_serde()),
                "source" => r.source = Some(v.to_serde()),
                "parent_id" => r.parent_id = Some(v.to_serde()),
                "timestamp" => r.timestamp = Some(v.to_serde()),
                "action" => r.action = Some(KindOnly::from_value(v)),
                "observation" => r.observation = Some(KindOnly::from_value(v)),
                "tool_call_id" => r.tool_call_id = Some(v.to_serde()),
                "action_id" => r.action_id = Some(v.to_serde()),
                "key" => r.key = Some(v.to_serde()),
                "error" => r.error = Some(v.to_serde()),
                "code" => r.code = Some(v.to_serde()),
                _ => {}
            }
        }
        r
    }
}
