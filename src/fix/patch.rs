//! A byte-preserving JSON patcher: change one value (or drop one key) of a
//! JSON document and leave every other byte exactly as it was: key order,
//! spacing, number spelling, escapes.
//!
//! Every patch is verified: the result is parsed again and must equal the
//! original value with exactly the intended change applied.
//!
//! Long because: a byte-preserving JSON scanner and patcher, with the tests
//! that pin every byte it keeps.

use std::ops::Range;

use serde_json::Value;

const MAX_DEPTH: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError(pub String);

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, PatchError> {
    Err(PatchError(msg.into()))
}

/// One member of an object: the byte spans of its key (with quotes) and value.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    key_span: Range<usize>,
    value_span: Range<usize>,
}

struct Scanner<'a> {
    b: &'a [u8],
}

impl Scanner<'_> {
    fn ws(&self, mut i: usize) -> usize {
        while i < self.b.len() && matches!(self.b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    }

    fn string_end(&self, i: usize) -> Result<usize, PatchError> {
        if self.b.get(i) != Some(&b'"') {
            return err("expected a string");
        }
        let mut j = i + 1;
        while j < self.b.len() {
            match self.b[j] {
                b'\\' => j += 2,
                b'"' => return Ok(j + 1),
                _ => j += 1,
            }
        }
        err("unterminated string")
    }

    fn value_end(&self, i: usize, depth: usize) -> Result<usize, PatchError> {
        if depth > MAX_DEPTH {
            return err("nested too deeply");
        }
        match self.b.get(i) {
            Some(b'"') => self.string_end(i),
            Some(b'{') | Some(b'[') => {
                let close = if self.b[i] == b'{' { b'}' } else { b']' };
                let is_obj = self.b[i] == b'{';
                let mut j = self.ws(i + 1);
                if self.b.get(j) == Some(&close) {
                    return Ok(j + 1);
                }
                loop {
                    if is_obj {
                        j = self.string_end(j)?;
                        j = self.ws(j);
                        if self.b.get(j) != Some(&b':') {
                            return err("expected `:`");
                        }
                        j = self.ws(j + 1);
                    }
                    j = self.value_end(j, depth + 1)?;
                    j = self.ws(j);
                    match self.b.get(j) {
                        Some(b',') => j = self.ws(j + 1),
                        Some(c) if *c == close => return Ok(j + 1),
                        _ => return err("expected `,` or a closing bracket"),
                    }
                }
            }
            Some(_) => {
                let mut j = i;
                while j < self.b.len()
                    && !matches!(self.b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    j += 1;
                }
                if j == i {
                    return err("expected a value");
                }
                Ok(j)
            }
            None => err("unexpected end"),
        }
    }

    /// Members of the object starting at `i` (which must be `{`).
    fn members(&self, i: usize) -> Result<(Vec<Member>, usize), PatchError> {
        if self.b.get(i) != Some(&b'{') {
            return err("not an object");
        }
        let mut out = Vec::new();
        let mut j = self.ws(i + 1);
        if self.b.get(j) == Some(&b'}') {
            return Ok((out, j));
        }
        loop {
            let ks = j;
            let ke = self.string_end(j)?;
            let raw = &self.b[ks + 1..ke - 1];
            let key: String = if raw.contains(&b'\\') {
                serde_json::from_slice(&self.b[ks..ke])
                    .map_err(|e| PatchError(format!("bad key: {e}")))?
            } else {
                // no escape: the bytes between the quotes are the key
                String::from_utf8(raw.to_vec()).map_err(|_| PatchError("bad key".into()))?
            };
            j = self.ws(ke);
            if self.b.get(j) != Some(&b':') {
                return err("expected `:`");
            }
            let vs = self.ws(j + 1);
            let ve = self.value_end(vs, 1)?;
            out.push(Member {
                key,
                key_span: ks..ke,
                value_span: vs..ve,
            });
            j = self.ws(ve);
            match self.b.get(j) {
                Some(b',') => j = self.ws(j + 1),
                Some(b'}') => return Ok((out, j)),
                _ => return err("expected `,` or `}`"),
            }
        }
    }
}

fn unescape_pointer(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Locate the object holding the last segment of `pointer`:
/// (its members, the position of its closing brace, the last key).
fn locate(text: &str, pointer: &str) -> Result<(Vec<Member>, usize, String), PatchError> {
    let segs: Vec<String> = pointer
        .strip_prefix('/')
        .ok_or_else(|| PatchError(format!("`{pointer}` is not a JSON pointer")))?
        .split('/')
        .map(unescape_pointer)
        .collect();
    let sc = Scanner { b: text.as_bytes() };
    let mut start = sc.ws(0);
    let (last, parents) = segs
        .split_last()
        .ok_or_else(|| PatchError("empty pointer".into()))?;
    for seg in parents {
        let (members, _) = sc.members(start)?;
        let m = unique(&members, seg)?.ok_or_else(|| PatchError(format!("no key `{seg}`")))?;
        start = m.value_span.start;
    }
    let (members, close) = sc.members(start)?;
    Ok((members, close, last.clone()))
}

#[cfg(test)]
thread_local! {
    /// Key comparisons made by [`unique`] (tests prove it is linear).
    static COMPARISONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The member named `key`, refusing a key that appears twice: one pass over
/// the members (linear; nothing here compares members with each other).
fn unique<'m>(members: &'m [Member], key: &str) -> Result<Option<&'m Member>, PatchError> {
    let mut found = members.iter().filter(|m| {
        #[cfg(test)]
        COMPARISONS.with(|c| c.set(c.get() + 1));
        m.key == key
    });
    let first = found.next();
    if found.next().is_some() {
        return err(format!(
            "key `{key}` appears twice; refusing to guess which one counts"
        ));
    }
    Ok(first)
}

/// Set the value at `pointer` (an object member) to `new` (compact JSON),
/// adding the key at the end of its object when it is missing.
pub fn set(text: &str, pointer: &str, new: &Value) -> Result<String, PatchError> {
    let (members, close, key) = locate(text, pointer)?;
    let new_json = serde_json::to_string(new).map_err(|e| PatchError(e.to_string()))?;
    let out = match unique(&members, &key)? {
        Some(m) => {
            let mut s = String::with_capacity(text.len() + new_json.len());
            s.push_str(&text[..m.value_span.start]);
            s.push_str(&new_json);
            s.push_str(&text[m.value_span.end..]);
            s
        }
        None => {
            // Follow the object's own spacing after `:` and `,`.
            let (colon, comma) = match members.first() {
                Some(m) => {
                    let between = &text[m.key_span.end..m.value_span.start];
                    let colon = if between.contains(": ") { ": " } else { ":" };
                    let comma = match members.get(1) {
                        Some(m2) => &text[m.value_span.end..m2.key_span.start],
                        None => ",",
                    };
                    (colon, comma.to_string())
                }
                None => (":", String::new()),
            };
            let key_json = serde_json::to_string(&key).map_err(|e| PatchError(e.to_string()))?;
            let insert_at = members.last().map_or(close, |m| m.value_span.end);
            let mut s = String::with_capacity(text.len() + key_json.len() + new_json.len() + 4);
            s.push_str(&text[..insert_at]);
            if !members.is_empty() {
                s.push_str(&comma);
            }
            s.push_str(&key_json);
            s.push_str(colon);
            s.push_str(&new_json);
            s.push_str(&text[insert_at..]);
            s
        }
    };
    verify(text, &out, pointer, Some(new))?;
    Ok(out)
}

/// Remove the member at `pointer`, with one separating comma.
pub fn remove(text: &str, pointer: &str) -> Result<String, PatchError> {
    let (members, close, key) = locate(text, pointer)?;
    let Some(pos) = members.iter().position(|m| m.key == key) else {
        return Ok(text.to_string());
    };
    unique(&members, &key)?;
    let m = &members[pos];
    let cut = if let Some(next) = members.get(pos + 1) {
        m.key_span.start..next.key_span.start
    } else if pos > 0 {
        members[pos - 1].value_span.end..m.value_span.end
    } else {
        let sc = Scanner { b: text.as_bytes() };
        m.key_span.start..sc.ws(m.value_span.end).min(close)
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..cut.start]);
    out.push_str(&text[cut.end..]);
    verify(text, &out, pointer, None)?;
    Ok(out)
}

/// The patched text must parse to the original value with exactly this
/// change (set to `new`, or the key removed). Both are parsed by serde_json
/// into the validator's tree (`validate::jv`: strings borrowed, objects as
/// vectors of entries, a repeated key at its first place with its last
/// value, as `serde_json::Map` has it), and compared member by member in
/// order: stricter than `serde_json::Value`'s comparison, which ignores
/// the order of an object's keys.
fn verify(before: &str, after: &str, pointer: &str, new: Option<&Value>) -> Result<(), PatchError> {
    use crate::validate::jv;
    let mut want: jv::Value = serde_json::from_str(before)
        .map_err(|e| PatchError(format!("original is not JSON: {e}")))?;
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let key = unescape_pointer(key);
    let Some(jv::Value::Object(obj)) = want.pointer_mut(parent) else {
        return err(format!("no object at `{parent}`"));
    };
    match new {
        Some(v) => {
            obj.insert(key.into(), jv::Value::from_serde(v));
        }
        None => {
            obj.shift_remove(&key);
        }
    }
    let got: jv::Value = serde_json::from_str(after)
        .map_err(|e| PatchError(format!("patched text is not JSON: {e}")))?;
    if got != want {
        return err("the patched document is not the intended value");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EV: &str = r#"{"id":"b94c","timestamp":"2026-11-30T04:34:59.684754","source":"user","parent_id":"__root__","llm_message":{"role":"user","content":[{"type":"text","text":"a \"quoted\" } brace"}]},"kind":"MessageEvent"}"#;

    #[test]
    fn set_changes_only_the_value_bytes() {
        let out = set(EV, "/parent_id", &json!("abc-123")).unwrap();
        assert_eq!(
            out,
            EV.replace(r#""parent_id":"__root__""#, r#""parent_id":"abc-123""#)
        );
    }

    #[test]
    fn set_adds_a_missing_key_in_the_files_style() {
        let out = set(r#"{"a": 1, "b": 2}"#, "/c", &json!("x")).unwrap();
        assert_eq!(out, r#"{"a": 1, "b": 2, "c": "x"}"#);
        let out = set(r#"{"a":1}"#, "/c", &json!(null)).unwrap();
        assert_eq!(out, r#"{"a":1,"c":null}"#);
        let out = set(r#"{}"#, "/c", &json!(1)).unwrap();
        assert_eq!(out, r#"{"c":1}"#);
    }

    #[test]
    fn set_reaches_nested_objects() {
        let t = r#"{"agent":{"llm":{"model":"a","timeout":600},"tools":[]},"x":1.50}"#;
        let out = set(t, "/agent/llm/timeout", &json!(30)).unwrap();
        assert_eq!(
            out,
            r#"{"agent":{"llm":{"model":"a","timeout":30},"tools":[]},"x":1.50}"#
        );
    }

    #[test]
    fn remove_takes_one_comma() {
        let t = r#"{"id":"x","agent":{"a":[1,{"b":"}"}]},"workspace":{}}"#;
        assert_eq!(remove(t, "/agent").unwrap(), r#"{"id":"x","workspace":{}}"#);
        assert_eq!(
            remove(t, "/workspace").unwrap(),
            r#"{"id":"x","agent":{"a":[1,{"b":"}"}]}}"#
        );
        assert_eq!(remove(r#"{"agent": 1}"#, "/agent").unwrap(), r#"{}"#);
        assert_eq!(remove(r#"{"a": 1}"#, "/zz").unwrap(), r#"{"a": 1}"#);
    }

    #[test]
    fn refuses_duplicate_keys_and_garbage() {
        assert!(set(r#"{"a":1,"a":2}"#, "/a", &json!(3)).is_err());
        assert!(set(r#"{"a":1"#, "/a", &json!(3)).is_err());
        assert!(set(r#"[1]"#, "/a", &json!(3)).is_err());
        assert!(set(r#"{"a":{"b":1}}"#, "/a/b/c", &json!(3)).is_err());
        let deep = format!(r#"{{"a":{}1{}}}"#, "[".repeat(500), "]".repeat(500));
        assert!(set(&deep, "/b", &json!(1)).is_err());
    }

    /// Duplicate keys are found in linear time: in an object of 10^6
    /// members (with a duplicate of the wanted key at the very end) finding
    /// the key and its duplicate costs exactly one comparison per member.
    /// Counted, not timed.
    #[test]
    fn a_million_members_cost_a_million_comparisons() {
        let n = 1_000_000u64;
        let mut t = String::with_capacity(14_000_000);
        t.push_str(r#"{"a":1"#);
        for i in 0..n {
            t.push_str(",\"k");
            t.push_str(&i.to_string());
            t.push_str("\":0");
        }
        t.push_str(r#","a":3}"#);
        let sc = Scanner { b: t.as_bytes() };
        let (members, _) = sc.members(0).unwrap();
        assert_eq!(members.len() as u64, n + 2);
        COMPARISONS.with(|c| c.set(0));
        assert!(unique(&members, "a").unwrap_err().0.contains("twice"));
        let made = COMPARISONS.with(|c| c.get());
        assert!(made <= n + 2, "{made} comparisons for {} members", n + 2);
        // and a whole patch of a 10^4-member object stays linear
        COMPARISONS.with(|c| c.set(0));
        let small: String = format!(
            "{{{}\"z\":1}}",
            (0..10_000)
                .map(|i| format!("\"k{i}\":0,"))
                .collect::<String>()
        );
        set(&small, "/z", &json!(2)).unwrap();
        assert!(COMPARISONS.with(|c| c.get()) <= 10_001);
    }

    /// The proof of a patch: the text must be the original with exactly
    /// the change, every other member where it was.
    #[test]
    fn verify_refuses_any_other_difference() {
        let before = r#"{"id":"x","a":{"b":[1,2.50,"s\u00e9"]},"c":null,"d":true}"#;
        let set_c = r#"{"id":"x","a":{"b":[1,2.50,"s\u00e9"]},"c":"y","d":true}"#;
        assert_eq!(verify(before, set_c, "/c", Some(&json!("y"))), Ok(()));
        // the change, and another
        let also = r#"{"id":"x","a":{"b":[1,2.5,"s"]},"c":"y","d":true}"#;
        assert!(verify(before, also, "/c", Some(&json!("y"))).is_err());
        // the change, the members in another order
        let moved = r#"{"a":{"b":[1,2.50,"s\u00e9"]},"id":"x","c":"y","d":true}"#;
        assert!(verify(before, moved, "/c", Some(&json!("y"))).is_err());
        // a key removed from the middle: the others keep their order
        let without = r#"{"id":"x","c":null,"d":true}"#;
        assert_eq!(verify(before, without, "/a", None), Ok(()));
        assert!(verify(before, r#"{"id":"x","d":true,"c":null}"#, "/a", None).is_err());
        // a nested member, a new key at the end of its object
        let nested = r#"{"id":"x","a":{"b":[1,2.50,"s\u00e9"],"n":{"k":1}},"c":null,"d":true}"#;
        assert_eq!(
            verify(before, nested, "/a/n", Some(&json!({"k": 1}))),
            Ok(())
        );
        assert!(verify(before, nested, "/a/n", Some(&json!({"k": 2}))).is_err());
        // a repeated key elsewhere counts once, at its first place, as
        // serde_json reads it
        let twice = r#"{"a":1,"b":2,"a":3}"#;
        assert_eq!(
            verify(twice, r#"{"a":1,"b":9,"a":3}"#, "/b", Some(&json!(9))),
            Ok(())
        );
        assert!(verify(before, "{", "/c", Some(&json!("y"))).is_err());
        assert!(verify(before, set_c, "/zz/c", Some(&json!("y"))).is_err());
    }

    #[test]
    fn keeps_escapes_and_unicode_elsewhere() {
        let t = "{\"t\":\"caf\\u00e9 \u{1F600}\",\"p\":\"x\"}";
        let out = set(t, "/p", &json!("y")).unwrap();
        assert_eq!(out, "{\"t\":\"caf\\u00e9 \u{1F600}\",\"p\":\"y\"}");
    }
}
