//! The JSON tree the validator walks: `serde_json::Value`'s shape, but
//! strings borrowed from the file's text where they hold no escape, and
//! objects kept as a vector of entries (no key hashing). A repeated key keeps
//! its first position and its last value, as Python's `json` and
//! `serde_json::Map` (`preserve_order`) do; `remove` is a `swap_remove`,
//! as `serde_json::Map::remove` is.
//!
//! Long because: the borrowed JSON tree and its parser are one type, tested
//! together.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
pub use serde_json::Number;

#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    Object(Map<'a>),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Map<'a> {
    entries: Vec<(Cow<'a, str>, Value<'a>)>,
}

type Entry<'a> = (Cow<'a, str>, Value<'a>);
type PairRef<'m, 'a> = (&'m Cow<'a, str>, &'m Value<'a>);

impl<'a> Map<'a> {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    pub fn get_key_value(&self, key: &str) -> Option<PairRef<'_, 'a>> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(k, v)| (k, v))
    }

    pub fn new() -> Map<'a> {
        Map::default()
    }

    /// `serde_json::Map::insert`: a present key keeps its position and takes
    /// the new value; a new key goes last.
    pub fn insert(&mut self, key: Cow<'a, str>, value: Value<'a>) -> Option<Value<'a>> {
        match self.get_mut(&key) {
            Some(v) => Some(std::mem::replace(v, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value<'a>> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    /// `serde_json::Map::remove` under `preserve_order`: a swap remove.
    pub fn remove(&mut self, key: &str) -> Option<Value<'a>> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.swap_remove(i).1)
    }

    /// `serde_json::Map::shift_remove`: the others keep their order.
    pub fn shift_remove(&mut self, key: &str) -> Option<Value<'a>> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(i).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = PairRef<'_, 'a>> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Build from entries in file order: a repeated key keeps its first
    /// position and its last value.
    fn from_entries(mut entries: Vec<Entry<'a>>) -> Map<'a> {
        let dup = if entries.len() <= 16 {
            entries
                .iter()
                .enumerate()
                .any(|(i, (k, _))| entries[..i].iter().any(|(o, _)| o == k))
        } else {
            let mut seen = std::collections::HashSet::with_capacity(entries.len());
            !entries.iter().all(|(k, _)| seen.insert(k.as_ref()))
        };
        if dup {
            let mut at: HashMap<Cow<'a, str>, usize> = HashMap::new();
            let mut out: Vec<Entry<'a>> = Vec::new();
            for (k, v) in entries.drain(..) {
                match at.get(k.as_ref()) {
                    Some(&i) => out[i].1 = v,
                    None => {
                        at.insert(k.clone(), out.len());
                        out.push((k, v));
                    }
                }
            }
            entries = out;
        }
        Map { entries }
    }

    pub fn into_entries(self) -> Vec<Entry<'a>> {
        self.entries
    }
}

impl<'m, 'a> IntoIterator for &'m Map<'a> {
    type Item = PairRef<'m, 'a>;
    type IntoIter =
        std::iter::Map<std::slice::Iter<'m, Entry<'a>>, fn(&'m Entry<'a>) -> PairRef<'m, 'a>>;
    fn into_iter(self) -> Self::IntoIter {
        fn pair<'m, 'a>(e: &'m Entry<'a>) -> PairRef<'m, 'a> {
            (&e.0, &e.1)
        }
        self.entries
            .iter()
            .map(pair as fn(&'m Entry<'a>) -> PairRef<'m, 'a>)
    }
}

impl From<i32> for Value<'_> {
    fn from(n: i32) -> Self {
        Value::Number(n.into())
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::String(Cow::Borrowed(s))
    }
}

impl<'a> Value<'a> {
    /// Python's `str()` of the value a JSON file gives (what a model's
    /// `__init__` passes on): `True`, `None`, numbers as written; a list or
    /// dict only by a placeholder (its text is never looked at again).
    pub fn py_str(&self) -> String {
        match self {
            Value::Null => "None".into(),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.to_string(),
            Value::Array(_) => "[…]".into(),
            Value::Object(_) => "{…}".into(),
        }
    }

    /// `serde_json::Value::pointer_mut`: the value at an RFC 6901 pointer
    /// (`~1` is `/`, `~0` is `~`; an array index without a sign or a
    /// leading zero).
    pub fn pointer_mut(&mut self, pointer: &str) -> Option<&mut Value<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut at = self;
        for token in pointer.strip_prefix('/')?.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            at = match at {
                Value::Object(m) => m.get_mut(&token)?,
                Value::Array(a) => {
                    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                        return None;
                    }
                    a.get_mut(token.parse::<usize>().ok()?)?
                }
                _ => return None,
            };
        }
        Some(at)
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }
    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }
    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A copy of a `serde_json::Value` (its strings borrowed).
    pub fn from_serde(v: &'a serde_json::Value) -> Value<'a> {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.clone()),
            serde_json::Value::String(s) => Value::String(Cow::Borrowed(s)),
            serde_json::Value::Array(a) => Value::Array(a.iter().map(Value::from_serde).collect()),
            serde_json::Value::Object(m) => Value::Object(Map {
                entries: m
                    .iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Value::from_serde(v)))
                    .collect(),
            }),
        }
    }

    /// An owned copy (for the schema's constants).
    pub fn owned(v: &serde_json::Value) -> Value<'static> {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.clone()),
            serde_json::Value::String(s) => Value::String(Cow::Owned(s.clone())),
            serde_json::Value::Array(a) => Value::Array(a.iter().map(Value::owned).collect()),
            serde_json::Value::Object(m) => Value::Object(Map {
                entries: m
                    .iter()
                    .map(|(k, v)| (Cow::Owned(k.clone()), Value::owned(v)))
                    .collect(),
            }),
        }
    }

    /// The `serde_json::Value` of this tree.
    pub fn to_serde(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::Value::Number(n.clone()),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::Array(a) => serde_json::Value::Array(a.iter().map(Value::to_serde).collect()),
            Value::Object(m) => serde_json::Value::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.to_serde()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Value<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Value<'de>, E> {
                Ok(Value::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Value<'de>, E> {
                Ok(Value::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Value<'de>, E> {
                Ok(Value::Number(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Value<'de>, E> {
                // as serde_json::Value: a non-finite float reads as null
                Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Value<'de>, E> {
                Ok(Value::String(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Value<'de>, E> {
                Ok(Value::String(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Value<'de>, E> {
                Ok(Value::String(Cow::Owned(s)))
            }
            fn visit_none<E>(self) -> Result<Value<'de>, E> {
                Ok(Value::Null)
            }
            fn visit_unit<E>(self) -> Result<Value<'de>, E> {
                Ok(Value::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value<'de>, D::Error> {
                Deserialize::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Value<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = s.next_element()? {
                    out.push(x);
                }
                Ok(Value::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Value<'de>, A::Error> {
                let mut entries = Vec::new();
                while let Some(k) = m.next_key::<Key<'de>>()? {
                    let v = m.next_value()?;
                    entries.push((k.0, v));
                }
                Ok(Value::Object(Map::from_entries(entries)))
            }
        }
        d.deserialize_any(V)
    }
}

/// An object key, borrowed when it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct K;
        impl<'de> Visitor<'de> for K {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(K)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same tree as serde_json's `Value` (preserve_order), repeated keys,
    /// escapes, big numbers and nesting included.
    #[test]
    fn reads_like_serde_json_value() {
        for text in [
            r#"{"a":1,"b":[true,null,-2,3.5,1e300,18446744073709551615,18446744073709551616],"a":{"x":"y\n","x":"z"},"c":"\u00e9"}"#,
            r#"{"k":"v","k2":{},"k3":[],"z":"a\"b"}"#,
            &format!(
                "{{{}}}",
                (0..40)
                    .map(|i| format!(r#""k{}":{}"#, i % 25, i))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ] {
            let serde: serde_json::Value = serde_json::from_str(text).unwrap();
            let ours: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ours.to_serde(), serde, "{text}");
            // key order too (to_serde compares maps as sets)
            let keys =
                |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(&ours.to_serde()), keys(&serde));
        }
        // borrowed where no escape
        let text = r#"{"a":"plain","b":"esc\n"}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        let Value::Object(m) = &v else { panic!() };
        assert!(matches!(m.get("a"), Some(Value::String(Cow::Borrowed(_)))));
        assert!(matches!(m.get("b"), Some(Value::String(Cow::Owned(_)))));
    }

    #[test]
    fn remove_is_a_swap_remove_like_serde_json() {
        let text = r#"{"a":1,"b":2,"c":3,"d":4}"#;
        let mut s: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).unwrap();
        let Value::Object(mut m) = serde_json::from_str::<Value>(text).unwrap() else {
            panic!()
        };
        s.remove("b");
        m.remove("b");
        let ours: Vec<String> = m.iter().map(|(k, _)| k.to_string()).collect();
        let theirs: Vec<String> = s.keys().cloned().collect();
        assert_eq!(ours, theirs);
    }
}
