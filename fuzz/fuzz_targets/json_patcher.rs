//! Bytes → the byte-preserving JSON patcher used by `repair`. The first byte
//! picks the operation and which existing key (or a new one) to target; the
//! rest is the document. Whenever a patch succeeds:
//! - the result parses, and equals the original value with exactly the
//!   intended change (set to the new value, or the key removed);
//! - every other byte is untouched: the original and the result differ in
//!   one contiguous run, no longer than the new value's JSON (for a set) and
//!   empty on the result's side (for a removal).
#![no_main]

use convo_doctor::fix::patch;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &[u8], b: &[u8], limit: usize) -> usize {
    a.iter().rev().zip(b.iter().rev()).take(limit).take_while(|(x, y)| x == y).count()
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) else { return };
    let keys: Vec<String> = obj.keys().cloned().collect();
    let key = if keys.is_empty() || sel & 0x80 != 0 {
        "convo_doctor_new".to_string()
    } else {
        keys[(sel as usize & 0x3f) % keys.len()].clone()
    };
    let pointer = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
    let existed = obj.contains_key(&key);
    let key_name = key.clone();
    let remove = sel & 0x40 != 0;
    let new = json!({"parent_id": "41b0ae64-d3d6-4c2f-ae74-7efe7b6d75c5", "n": [1, 2.5, null]});
    let result = if remove {
        patch::remove(text, &pointer)
    } else {
        patch::set(text, &pointer, &new)
    };
    let Ok(out) = result else { return };
    let got: Value = serde_json::from_str(&out).expect("a patched document parses");
    let mut want = Value::Object(obj);
    if remove {
        want.as_object_mut().unwrap().shift_remove(&key);
    } else {
        want.as_object_mut().unwrap().insert(key, new.clone());
    }
    assert_eq!(got, want, "the patch changed more than the one value");
    let (a, b) = (text.as_bytes(), out.as_bytes());
    let p = common_prefix(a, b);
    let s = common_suffix(a, b, a.len().min(b.len()) - p);
    let inserted = b.len() - p - s;
    if remove {
        assert_eq!(inserted, 0, "a removal inserted bytes");
    } else {
        let new_json = serde_json::to_string(&new).unwrap();
        if existed {
            assert!(inserted <= new_json.len(), "bytes outside the value changed");
        } else {
            // a new member: the object's own separator (white space and a
            // comma), the key, a colon, the value; nothing else. The minimal
            // differing run may be a rotation of the insertion, so look for
            // the insertion itself near it.
            let key_json = serde_json::to_string(&key_name).unwrap();
            let member = format!("{key_json}:{new_json}");
            let ok = (p.saturating_sub(inserted)..=p).any(|q| {
                let Some(ins) = out.get(q..q + inserted) else { return false };
                let rest = format!("{}{}", &out[..q], &out[q + inserted..]);
                let squeezed: String = ins.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                rest == text
                    && (squeezed == member
                        || squeezed == format!(",{member}")
                        || squeezed == format!("{member},"))
            });
            assert!(ok, "a new member brought more than itself");
        }
    }
});
