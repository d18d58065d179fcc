//! What can still be read from the start of an event file that no longer
//! parses (cut off by a crash mid-write): the top-level string members that
//! were written whole before the cut. The SDK writes `id`, `timestamp`,
//! `source` and `parent_id` first, and an observation's `tool_name` and
//! `tool_call_id` before its (long) output, so a truncated file usually
//! still names its place in the tree.
//!
//! Only complete members count: a string cut in the middle, or anything
//! after the first byte that does not fit JSON, ends the scan.

use std::collections::HashMap;

/// The top-level string members of the JSON object that `bytes` begins,
/// as far as they were written whole. Later duplicates of a key are
/// ignored (Python's `json` keeps the last, but a salvage never decides
/// between two spellings: a key seen twice is dropped).
pub fn top_level_strings(bytes: &[u8]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut twice = Vec::new();
    let mut s = Scan { b: bytes, i: 0 };
    s.ws();
    if !s.eat(b'{') {
        return out;
    }
    loop {
        s.ws();
        let Some(key) = s.string() else { break };
        s.ws();
        if !s.eat(b':') {
            break;
        }
        s.ws();
        if s.peek() == Some(b'"') {
            let Some(v) = s.string() else { break };
            if out.insert(key.clone(), v).is_some() {
                twice.push(key);
            }
        } else if !s.skip_value(0) {
            break;
        }
        s.ws();
        if !s.eat(b',') {
            break;
        }
    }
    for k in twice {
        out.remove(&k);
    }
    out
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A whole JSON string literal, decoded.
    fn string(&mut self) -> Option<String> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i;
        let mut j = self.i + 1;
        while j < self.b.len() {
            match self.b[j] {
                b'\\' => j += 2,
                b'"' => {
                    let lit = std::str::from_utf8(&self.b[start..=j]).ok()?;
                    let v: String = serde_json::from_str(lit).ok()?;
                    self.i = j + 1;
                    return Some(v);
                }
                _ => j += 1,
            }
        }
        None
    }

    /// Skip one whole value that is not a string; false if it is cut off.
    fn skip_value(&mut self, depth: usize) -> bool {
        if depth > 128 {
            return false;
        }
        match self.peek() {
            Some(b'"') => self.string().is_some(),
            Some(open @ (b'{' | b'[')) => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.i += 1;
                self.ws();
                if self.eat(close) {
                    return true;
                }
                loop {
                    self.ws();
                    if open == b'{' {
                        if self.string().is_none() {
                            return false;
                        }
                        self.ws();
                        if !self.eat(b':') {
                            return false;
                        }
                        self.ws();
                    }
                    if !self.skip_value(depth + 1) {
                        return false;
                    }
                    self.ws();
                    if self.eat(close) {
                        return true;
                    }
                    if !self.eat(b',') {
                        return false;
                    }
                }
            }
            Some(_) => {
                let start = self.i;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'))
                {
                    self.i += 1;
                }
                // a scalar cut at the end of the file is not whole
                self.i > start && self.i < self.b.len()
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_members_before_the_cut_are_kept() {
        let t = br#"{"id":"a-1","timestamp":"2026","n":5,"o":{"x":[1,"]"]},"parent_id":"p\"q","tool_call_id":"cal"#;
        let m = top_level_strings(t);
        assert_eq!(m.get("id").map(String::as_str), Some("a-1"));
        assert_eq!(m.get("parent_id").map(String::as_str), Some("p\"q"));
        assert!(!m.contains_key("tool_call_id"), "cut in the middle");
        assert!(!m.contains_key("n"));
    }

    #[test]
    fn garbage_and_empty_give_nothing() {
        assert!(top_level_strings(b"").is_empty());
        assert!(top_level_strings(b"[1,2]").is_empty());
        assert!(top_level_strings(b"{\"id\" \"x\"}").is_empty());
    }

    #[test]
    fn a_key_written_twice_is_not_trusted() {
        let m = top_level_strings(br#"{"id":"a","id":"b","kind":"K"}"#);
        assert!(!m.contains_key("id"));
        assert_eq!(m.get("kind").map(String::as_str), Some("K"));
    }

    #[test]
    fn a_number_cut_at_the_end_stops_the_scan() {
        let m = top_level_strings(br#"{"a":"x","n":12"#);
        assert_eq!(m.len(), 1);
    }
}
