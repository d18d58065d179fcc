//! The lazy record parser: only the keys convo-doctor reads are
//! deserialized; every other key (often a large tool output) is skipped
//! unread, and noted by name for `extra="forbid"`.

use std::borrow::Cow;

use serde::Deserialize;

use crate::validate::jv::Value as Jv;

/// One scalar field as the record needs it: a string borrowed from the
/// file's text where it has no escape, null, or only the name of the JSON
/// type it has (for an error that names the type, never the value). No
/// tree is built and nothing is copied for a field the record does not keep.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Field<'a> {
    Null,
    Str(Cow<'a, str>),
    /// Any other JSON value, by the name of its type (`a number`, ...).
    Other(&'static str),
}

impl<'de> Deserialize<'de> for Field<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Field<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Field<'de>, E> {
                Ok(Field::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Field<'de>, E> {
                Ok(Field::Str(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Field<'de>, E> {
                Ok(Field::Str(Cow::Owned(s)))
            }
            fn visit_unit<E>(self) -> Result<Field<'de>, E> {
                Ok(Field::Null)
            }
            fn visit_none<E>(self) -> Result<Field<'de>, E> {
                Ok(Field::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Field<'de>, E> {
                Ok(Field::Other("a boolean"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Field<'de>, E> {
                Ok(Field::Other("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Field<'de>, E> {
                Ok(Field::Other("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Field<'de>, E> {
                Ok(Field::Other("a number"))
            }
            // the elements as a tree, as before the record was compact:
            // serde_json's nesting limit applies to them alike (an
            // `IgnoredAny` skips any depth), so every verdict stays
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Field<'de>, A::Error> {
                while s.next_element::<serde_json::Value>()?.is_some() {}
                Ok(Field::Other("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Field<'de>, A::Error> {
                while m
                    .next_entry::<Cow<'de, str>, serde_json::Value>()?
                    .is_some()
                {}
                Ok(Field::Other("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'a> Field<'a> {
    /// The same field from the borrowed tree of the validating parse.
    pub(super) fn of(v: &Jv<'a>) -> Field<'a> {
        match v {
            Jv::Null => Field::Null,
            Jv::Bool(_) => Field::Other("a boolean"),
            Jv::Number(_) => Field::Other("a number"),
            Jv::String(s) => Field::Str(s.clone()),
            Jv::Array(_) => Field::Other("an array"),
            Jv::Object(_) => Field::Other("an object"),
        }
    }
}

/// `action` / `observation`: an object whose `kind` is read and whose other
/// keys (often a large tool output) are skipped unread; any other JSON value
/// is only noted as not an object. (Deserializing it as a struct would make
/// serde quote a string value in its error message, and a file's content must
/// never reach the output.)
pub(super) enum KindOnly<'a> {
    Object { kind: Option<Field<'a>> },
    Other,
}

impl<'de> Deserialize<'de> for KindOnly<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KindOnly<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<KindOnly<'de>, A::Error> {
                let mut kind = None;
                while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    if k == "kind" {
                        kind = Some(m.next_value::<Field<'de>>()?);
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(KindOnly::Object { kind })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<KindOnly<'de>, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(KindOnly::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<KindOnly<'de>, E> {
                Ok(KindOnly::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<KindOnly<'de>, E> {
                Ok(KindOnly::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<KindOnly<'de>, E> {
                Ok(KindOnly::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<KindOnly<'de>, E> {
                Ok(KindOnly::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<KindOnly<'de>, E> {
                Ok(KindOnly::Other)
            }
            fn visit_unit<E>(self) -> Result<KindOnly<'de>, E> {
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
pub(super) struct RawEvent<'a> {
    pub(super) id: Option<Field<'a>>,
    pub(super) kind: Option<Field<'a>>,
    pub(super) source: Option<Field<'a>>,
    pub(super) parent_id: Option<Field<'a>>,
    pub(super) timestamp: Option<Field<'a>>,
    pub(super) action: Option<KindOnly<'a>>,
    pub(super) observation: Option<KindOnly<'a>>,
    pub(super) tool_call_id: Option<Field<'a>>,
    pub(super) action_id: Option<Field<'a>>,
    pub(super) key: Option<Field<'a>>,
    pub(super) error: Option<Field<'a>>,
    pub(super) code: Option<Field<'a>>,
    pub(super) keys: u128,
    pub(super) odd_keys: Vec<String>,
}

/// How many distinct unknown keys of one event are kept (in file order).
pub const MAX_ODD_KEYS: usize = 64;

impl<'de> Deserialize<'de> for RawEvent<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawEvent<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawEvent<'de>, A::Error> {
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

impl<'a> KindOnly<'a> {
    pub(super) fn from_value(v: &Jv<'a>) -> KindOnly<'a> {
        match v {
            Jv::Object(m) => KindOnly::Object {
                kind: m.get("kind").map(Field::of),
            },
            _ => KindOnly::Other,
        }
    }
}

impl<'a> RawEvent<'a> {
    /// The same fields as the lazy deserializer, from a parsed object (a
    /// repeated key already kept its last value, as in Python).
    pub(super) fn from_map(m: &crate::validate::jv::Map<'a>) -> RawEvent<'a> {
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
                "id" => r.id = Some(Field::of(v)),
                "kind" => r.kind = Some(Field::of(v)),
                "source" => r.source = Some(Field::of(v)),
                "parent_id" => r.parent_id = Some(Field::of(v)),
                "timestamp" => r.timestamp = Some(Field::of(v)),
                "action" => r.action = Some(KindOnly::from_value(v)),
                "observation" => r.observation = Some(KindOnly::from_value(v)),
                "tool_call_id" => r.tool_call_id = Some(Field::of(v)),
                "action_id" => r.action_id = Some(Field::of(v)),
                "key" => r.key = Some(Field::of(v)),
                "error" => r.error = Some(Field::of(v)),
                "code" => r.code = Some(Field::of(v)),
                _ => {}
            }
        }
        r
    }
}
