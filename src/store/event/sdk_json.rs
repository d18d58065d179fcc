//! JSON text as the SDK's parser (pydantic's jiter) reads it, where it
//! differs from serde_json's: nesting, surrogates, huge integers, NaN.

use super::Unreadable;

/// The nesting depth pydantic's JSON parser (jiter) accepts: 201 nested
/// arrays/objects parse, 202 do not (checked with SDK 1.58.2's
/// pydantic_core.from_json; fixtures/gen/jiter_rules.py).
pub const MAX_DEPTH: usize = 201;

/// The longest integer (in digits) jiter reads; longer is "number out of
/// range" (Python's int max_str_digits, 4300).
pub const MAX_INT_DIGITS: usize = 4300;

/// JSON text judged by the rules of pydantic's parser (jiter), which the SDK
/// reads every file with, where they differ from serde_json's:
/// - nesting deeper than [`MAX_DEPTH`] is invalid;
/// - a lone surrogate escape (`"\ud800"`, `"\udc00"`) is invalid;
/// - an integer of more than [`MAX_INT_DIGITS`] digits is invalid;
/// - `NaN`, `Infinity` and `-Infinity` are valid numbers, and so is any
///   float however large (`1e400` reads as inf).
///
/// Returns the text serde can parse for the same verdict: the same bytes, or
/// with each `NaN`/`Infinity` and each float serde might find out of range
/// replaced by `0` padded with spaces to the same length (so positions stay
/// true; an id or parent that is a number is refused whatever it is). One
/// linear pass, no recursion.
pub fn sdk_json(text: &str) -> Result<std::borrow::Cow<'_, str>, Unreadable> {
    let b = text.as_bytes();
    let bad = |what: &str, at: usize| {
        Err(Unreadable::InvalidJson(format!(
            "{what} at byte {at}, which the SDK's parser refuses"
        )))
    };
    let hex4 = |at: usize| -> Option<u32> {
        let h = b.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    let (mut depth, mut i) = (0usize, 0usize);
    let mut numbers: Vec<(usize, usize)> = Vec::new();
    let mut special = false;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        if b.get(i + 1) == Some(&b'u') {
                            if let Some(u) = hex4(i + 2) {
                                if (0xDC00..0xE000).contains(&u) {
                                    return bad("a lone low surrogate escape", i);
                                }
                                if (0xD800..0xDC00).contains(&u) {
                                    let low = (b.get(i + 6) == Some(&b'\\')
                                        && b.get(i + 7) == Some(&b'u'))
                                    .then(|| hex4(i + 8))
                                    .flatten();
                                    if !low.is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
                                        return bad("a lone high surrogate escape", i);
                                    }
                                    i += 12;
                                    continue;
                                }
                                i += 6;
                                continue;
                            }
                        }
                        i += 2;
                        continue;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Unreadable::InvalidJson(format!(
                        "nested more than {MAX_DEPTH} levels deep at byte {i}, beyond the SDK's parser limit"
                    )));
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'-' | b'0'..=b'9' | b'N' | b'I' => {
                let start = i;
                if b[i] == b'-' {
                    i += 1;
                }
                let word = |w: &[u8]| b.get(i..i + w.len()) == Some(w);
                if word(b"NaN") || word(b"Infinity") {
                    i += if word(b"NaN") { 3 } else { 8 };
                    special = true;
                    numbers.push((start, i));
                    continue;
                }
                let digits_from = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let int_digits = i - digits_from;
                let (mut float, mut exp_digits, mut in_exp) = (false, 0usize, false);
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    float = true;
                    in_exp |= matches!(b[i], b'e' | b'E');
                    if in_exp && b[i].is_ascii_digit() {
                        exp_digits += 1;
                    }
                    i += 1;
                }
                if !float && int_digits > MAX_INT_DIGITS {
                    return bad("an integer of more than 4300 digits", start);
                }
                if i == start {
                    i += 1; // a stray N or I: serde reports it
                } else if float && (i - start > 24 || exp_digits >= 3) {
                    // may overflow f64 (serde refuses, jiter reads inf)
                    special = true;
                    numbers.push((start, i));
                }
            }
            _ => i += 1,
        }
    }
    if !special {
        return Ok(std::borrow::Cow::Borrowed(text));
    }
    let mut out = Vec::with_capacity(b.len());
    let mut last = 0;
    for (s, e) in numbers {
        out.extend_from_slice(&b[last..s]);
        out.push(b'0');
        out.extend(std::iter::repeat_n(b' ', e - s - 1));
        last = e;
    }
    out.extend_from_slice(&b[last..]);
    // only ASCII number tokens were replaced by ASCII
    Ok(std::borrow::Cow::Owned(
        String::from_utf8(out).unwrap_or_else(|_| text.to_string()),
    ))
}

/// The byte offset where JSON text first nests deeper than `max` arrays and
/// objects (brackets inside strings do not count). Linear, no recursion.
pub fn too_deep(bytes: &[u8], max: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A parse error as a message that never quotes the file's content: syntax
/// errors name a position only; a data error (serde's "invalid type: string
/// \"...\"" quotes the value, which may be a secret or 50 MB long) is replaced
/// by its position.
pub fn invalid(e: &serde_json::Error) -> Unreadable {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Eof => "it ends early: truncated".to_string(),
        Category::Syntax => e.to_string(),
        Category::Data | Category::Io => format!(
            "a value has an unexpected type at line {} column {}",
            e.line(),
            e.column()
        ),
    };
    Unreadable::InvalidJson(what)
}

#[cfg(test)]
mod tests {
    use super::super::{parse_event, Unreadable};

    /// Each verdict checked with SDK 1.58.2's own parser
    /// (`pydantic_core.from_json`, what `Event.model_validate_json` uses):
    /// fixtures/gen/jiter_rules.py prints the same table.
    #[test]
    fn numbers_surrogates_and_depth_are_judged_like_the_sdk() {
        let ev = |v: &str| format!(r#"{{"id":"a","kind":"K","x":{v}}}"#);
        for ok in [
            "NaN".to_string(),
            "Infinity".into(),
            "-Infinity".into(),
            "[NaN,1e400,-1e400]".into(),
            "9".repeat(4300),
            format!("-{}", "9".repeat(4300)),
            format!("1.{}", "9".repeat(5000)),
            r#""\ud800\udc00""#.into(),
            r#""\u00e9""#.into(),
        ] {
            let r = parse_event(ev(&ok).as_bytes());
            assert!(r.is_ok(), "{}: {r:?}", &ok[..ok.len().min(20)]);
            assert_eq!(r.unwrap().id.as_deref(), Some("a"));
        }
        for bad in [
            "9".repeat(4301),
            "9".repeat(5000),
            format!("-{}", "9".repeat(4301)),
            r#""\ud800""#.into(),
            r#""\udc00""#.into(),
            r#""a\ud800b""#.into(),
            r#""\ud800\u0041""#.into(),
        ] {
            assert!(
                matches!(
                    parse_event(ev(&bad).as_bytes()),
                    Err(Unreadable::InvalidJson(_))
                ),
                "{}",
                &bad[..bad.len().min(20)]
            );
        }
        // a number where a string is needed stays refused, NaN included
        assert!(parse_event(br#"{"id":NaN,"kind":"K"}"#).is_err());
    }
}
