//! pydantic v2's lax scalars, on parsed JSON values: the one implementation
//! of these rules. The validator's walker uses them for every scalar node of
//! an event, a base_state.json or a meta.json, and the listing model
//! (`crate::server`) for the ids and dates it reads; each one is checked
//! against real pydantic by fixtures/coercions.json (fixtures/gen/coercions.py).
//!
//! Python mode and JSON mode agree on every rule here for the values
//! `json.loads` can produce (the SDK validates its files in Python mode).
//!
//! Long because: pydantic's lax scalar rules, each once, with the cases that
//! pin them.

use super::jv::Value;

/// pydantic's error (type, message) for a refused scalar.
pub type E = (&'static str, &'static str);

pub fn bool(v: &Value) -> Result<bool, E> {
    const BAD: E = (
        "bool_parsing",
        "Input should be a valid boolean, unable to interpret input",
    );
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(0), _) => Ok(false),
            (Some(1), _) => Ok(true),
            (Some(_), _) => Err(BAD),
            (None, Some(0.0)) => Ok(false),
            (None, Some(1.0)) => Ok(true),
            _ => Err(BAD),
        },
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Ok(false),
            "1" | "on" | "t" | "true" | "y" | "yes" => Ok(true),
            _ => Err(BAD),
        },
        _ => Err(("bool_type", "Input should be a valid boolean")),
    }
}

pub fn int(v: &Value) -> Result<f64, E> {
    const FRACT: E = (
        "int_from_float",
        "Input should be a valid integer, got a number with a fractional part",
    );
    const PARSE: E = (
        "int_parsing",
        "Input should be a valid integer, unable to parse string as an integer",
    );
    match v {
        Value::Bool(b) => Ok(*b as i64 as f64),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i as f64)
            } else if let Some(u) = n.as_u64() {
                Ok(u as f64)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if !f.is_finite() {
                    Err(("finite_number", "Input should be a finite number"))
                } else if f.fract() != 0.0 {
                    Err(FRACT)
                } else {
                    Ok(f)
                }
            }
        }
        Value::String(s) => parse_int_str(s).ok_or(PARSE),
        _ => Err(("int_type", "Input should be a valid integer")),
    }
}

/// pydantic-core's `str -> int`: optional sign, ASCII digits (with single
/// underscores between digits), surrounding white space, and an optional
/// fractional part of zeros.
fn parse_int_str(s: &str) -> Option<f64> {
    let t = s.trim();
    let t = match t.split_once('.') {
        Some((a, b)) if !b.is_empty() && b.chars().all(|c| c == '0') => a,
        Some(_) => return None,
        None => t,
    };
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    let n: f64 = clean.parse().ok()?;
    Some(if neg { -n } else { n })
}

pub fn float(v: &Value) -> Result<f64, E> {
    match v {
        Value::Bool(b) => Ok(*b as i64 as f64),
        Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => parse_float_str(s).ok_or((
            "float_parsing",
            "Input should be a valid number, unable to parse string as a number",
        )),
        _ => Err(("float_type", "Input should be a valid number")),
    }
}

/// Python's `float(str)`: white space around, `_` only between digits,
/// `inf`/`infinity`/`nan` in any case.
fn parse_float_str(s: &str) -> Option<f64> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return Some(if lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE_".contains(&b))
    {
        return None;
    }
    let b = t.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let prev = i.checked_sub(1).map(|j| b[j]);
            let next = b.get(i + 1).copied();
            if !(prev.is_some_and(|p| p.is_ascii_digit())
                && next.is_some_and(|n| n.is_ascii_digit()))
            {
                return None;
            }
        }
    }
    t.replace('_', "").parse::<f64>().ok()
}

/// `Literal[...]`: Python equality with pydantic's type discipline (a
/// bool never matches an int literal, an int never a str one).
pub fn literal_eq(expected: &Value, v: &Value) -> bool {
    let num = |x: &Value| match x {
        Value::Bool(b) => Some(*b as i64 as f64),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (expected, v) {
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
            num(expected) == num(v)
        }
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

/// An enum member by value (lax Python mode): an int or float enum
/// coerces the input first (`"1"` is member 1), a str enum does not.
pub fn enum_eq(expected: &Value, v: &Value, sub: &str) -> bool {
    let coerced = match sub {
        "int" => int(v).ok(),
        "float" => float(v).ok(),
        _ => None,
    };
    match coerced {
        Some(n) => expected.as_f64() == Some(n),
        None => literal_eq(expected, v),
    }
}

/// Whether a datetime pydantic made carries a timezone: a Unix time is
/// UTC (aware); an ISO string is aware only with `Z` or an offset, and a
/// bare date is naive midnight. Python cannot order an aware datetime
/// against a naive one (`TypeError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tz {
    Aware,
    Naive,
}

/// speedate's Unix time: seconds up to 2e10 in magnitude, milliseconds
/// beyond, between the years 1 and 9999.
fn timestamp_ok(f: f64) -> bool {
    if !f.is_finite() {
        return false;
    }
    if f.abs() <= 2e10 {
        return true;
    }
    (-62_135_596_800_000.0..253_402_300_800_000.0).contains(&f)
}

/// speedate's number in a string: an optional sign, then digits with at
/// most one `.` (`"5."` and `".5"` too), nothing else (no exponent, no `_`,
/// no white space).
fn numeric_str(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    let n: f64 = format!("0{int}.{frac}0").parse().ok()?;
    Some(if s.starts_with('-') { -n } else { n })
}

/// A `datetime` field: an ISO 8601 datetime or date string, a Unix time
/// (a number, or a number in a string).
pub fn datetime(v: &Value) -> Result<Tz, E> {
    const PARSE: E = (
        "datetime_from_date_parsing",
        "Input should be a valid datetime or date",
    );
    match v {
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if timestamp_ok(f) {
                Ok(Tz::Aware)
            } else {
                Err(("datetime_parsing", "Input should be a valid datetime"))
            }
        }
        Value::String(s) => {
            if let Some(tz) = iso_datetime(s) {
                Ok(tz)
            } else if iso_date(s) || numeric_str(s).is_some_and(timestamp_ok) {
                Ok(if iso_date(s) { Tz::Naive } else { Tz::Aware })
            } else {
                Err(PARSE)
            }
        }
        _ => Err(("datetime_type", "Input should be a valid datetime")),
    }
}

fn digits(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(u8::is_ascii_digit)
}

fn num2(b: &[u8]) -> u32 {
    b.iter().fold(0, |a, d| a * 10 + (d - b'0') as u32)
}

fn iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    if !(digits(&b[0..4]) && digits(&b[5..7]) && digits(&b[8..10])) {
        return false;
    }
    let (y, m, d) = (num2(&b[0..4]), num2(&b[5..7]), num2(&b[8..10]));
    // Python's `date` starts at year 1
    y >= 1 && crate::clock::valid_date(y, m, d)
}

/// speedate's RFC 3339 / ISO 8601 datetime: `YYYY-MM-DD[Tt _]HH:MM[:SS[.f{1,}]]`
/// then an optional `Z`/`z` or `±HH[:]MM`.
fn iso_datetime(s: &str) -> Option<Tz> {
    let b = s.as_bytes();
    if b.len() < 16 || !s.is_char_boundary(10) || !iso_date(&s[..10]) {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ' | b'_') {
        return None;
    }
    let r = &b[11..];
    if r.len() < 5 || !digits(&r[0..2]) || r[2] != b':' || !digits(&r[3..5]) {
        return None;
    }
    if num2(&r[0..2]) > 23 || num2(&r[3..5]) > 59 {
        return None;
    }
    let mut i = 5;
    if r.len() > i && r[i] == b':' {
        if r.len() < i + 3 || !digits(&r[i + 1..i + 3]) || num2(&r[i + 1..i + 3]) > 59 {
            return None;
        }
        i += 3;
        if r.len() > i && (r[i] == b'.' || r[i] == b',') {
            let start = i + 1;
            let mut j = start;
            while j < r.len() && r[j].is_ascii_digit() {
                j += 1;
            }
            if j == start {
                return None;
            }
            i = j;
        }
    }
    match &r[i..] {
        [] => Some(Tz::Naive),
        [b'Z'] | [b'z'] => Some(Tz::Aware),
        [s, h1, h2, b':', m1, m2] | [s, h1, h2, m1, m2] if *s == b'+' || *s == b'-' => {
            let ok =
                digits(&[*h1, *h2, *m1, *m2]) && num2(&[*h1, *h2]) < 24 && num2(&[*m1, *m2]) < 60;
            ok.then_some(Tz::Aware)
        }
        _ => None,
    }
}

/// A `UUID` field from a string, as the `uuid` crate's `Uuid::parse_str`
/// (which pydantic-core calls): 32 hex digits, or the 8-4-4-4-12 spelling
/// alone, in `{}` or after a lower-case `urn:uuid:`; any case of hex. The
/// canonical 32 lower-case hex digits.
pub fn uuid(v: &Value) -> Result<String, E> {
    let Value::String(s) = v else {
        return Err((
            "uuid_type",
            "UUID input should be a string, bytes or UUID object",
        ));
    };
    uuid_str(s).ok_or((
        "uuid_parsing",
        "Input should be a valid UUID, invalid character",
    ))
}

/// [`uuid`] of a string.
pub fn uuid_str(s: &str) -> Option<String> {
    let hex = |t: &[u8]| t.iter().all(u8::is_ascii_hexdigit);
    let hyphenated = |t: &[u8]| {
        t.len() == 36
            && t.iter().enumerate().all(|(i, b)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    *b == b'-'
                } else {
                    b.is_ascii_hexdigit()
                }
            })
    };
    let b = s.as_bytes();
    let inner: &[u8] = match b {
        t if t.len() == 32 && hex(t) => t,
        [b'{', t @ .., b'}'] if hyphenated(t) => t,
        t if t.len() == 45 && t.starts_with(b"urn:uuid:") && hyphenated(&t[9..]) => &t[9..],
        t if hyphenated(t) => t,
        _ => return None,
    };
    Some(
        inner
            .iter()
            .filter(|b| **b != b'-')
            .map(|b| b.to_ascii_lowercase() as char)
            .collect(),
    )
}

/// Python's `uuid.UUID(name)` on a folder name (the 1.49+ catalog scan's
/// `UUID(conversation_dir.name)`), which is not pydantic's rule: drop every
/// `urn:` and `uuid:`, strip `{}` from both ends, drop every `-`, require
/// 32 characters, then `int(hex, 16)` (surrounding whitespace, a sign, a
/// `0x` prefix and single underscores between digits are accepted) in
/// `[0, 2**128)`. The canonical 32-hex spelling, or `None` where Python
/// raises. Non-ASCII digits, which `int()` also accepts, are rejected here.
pub fn py_uuid(name: &str) -> Option<String> {
    let s = name.replace("urn:", "").replace("uuid:", "");
    let s = s.trim_matches(|c| c == '{' || c == '}').replace('-', "");
    if s.chars().count() != 32 {
        return None;
    }
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .map(|r| r.strip_prefix('_').unwrap_or(r))
        .unwrap_or(t);
    if t.is_empty() || t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return None;
    }
    let digits: String = t.chars().filter(|&c| c != '_').collect();
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let v = u128::from_str_radix(&digits, 16).ok()?;
    if neg && v != 0 {
        return None;
    }
    Some(format!("{v:032x}"))
}

/// The same rules on a `serde_json::Value` (what the store model holds).
pub mod serde {
    use super::{Tz, E};
    use crate::validate::jv::Value as Jv;
    use serde_json::Value;

    pub fn bool(v: &Value) -> Result<bool, E> {
        super::bool(&Jv::from_serde(v))
    }
    pub fn datetime(v: &Value) -> Result<Tz, E> {
        super::datetime(&Jv::from_serde(v))
    }
    pub fn uuid(v: &Value) -> Result<String, E> {
        super::uuid(&Jv::from_serde(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_uuid_of_folder_names() {
        let h = "0f8b0186d86c5dbb8239dd60a36a9ec5";
        assert_eq!(py_uuid(h).as_deref(), Some(h));
        assert_eq!(
            py_uuid("0f8b0186-d86c-5dbb-8239-dd60a36a9ec5").as_deref(),
            Some(h)
        );
        assert_eq!(
            py_uuid("{0F8B0186D86C5DBB8239DD60A36A9EC5}").as_deref(),
            Some(h)
        );
        assert_eq!(
            py_uuid("urn:uuid:0f8b0186d86c5dbb8239dd60a36a9ec5").as_deref(),
            Some(h)
        );
        assert_eq!(py_uuid("my-conversation"), None);
        assert_eq!(py_uuid("0f8b0186d86c5dbb8239dd60a36a9ecz"), None);
        // int(x, 16) quirks: 0x prefix and underscores (still 32 characters)
        assert_eq!(
            py_uuid("0x0000000000000000000000000000ff").as_deref(),
            Some("000000000000000000000000000000ff")
        );
        assert_eq!(
            py_uuid("0000_00000000000000000000000000f").as_deref(),
            Some("0000000000000000000000000000000f")
        );
        assert_eq!(py_uuid("-0000000000000000000000000000001"), None);
    }

    /// pydantic's UUID (1.58.2's pydantic-core): the spellings it takes and
    /// the near misses it refuses.
    #[test]
    fn pydantic_uuid_spellings() {
        let h = "0f8b0186d86c5dbb8239dd60a36a9ec5";
        let d = "0f8b0186-d86c-5dbb-8239-dd60a36a9ec5";
        for ok in [
            h.to_string(),
            d.to_uppercase(),
            format!("{{{d}}}"),
            format!("urn:uuid:{d}"),
        ] {
            assert_eq!(uuid_str(&ok).as_deref(), Some(h), "{ok}");
        }
        for bad in [
            format!("{{{h}}}"),
            format!("urn:uuid:{h}"),
            format!("URN:UUID:{d}"),
            format!("urn:uuid:{{{d}}}"),
            "0f8b0186-d86c5dbb-8239-dd60a36a9ec5-".to_string(),
            "not-a-uuid".to_string(),
        ] {
            assert_eq!(uuid_str(&bad), None, "{bad}");
        }
    }

    /// pydantic's verdict on a `datetime` from JSON, with the timezone, as
    /// 1.58.2's and 1.43.1's `StoredConversation` gave it (`Some(true)`
    /// aware, `Some(false)` naive, `None` refused).
    #[test]
    fn pydantic_datetimes() {
        let table: &[(&str, Option<bool>)] = &[
            (r#""yesterday""#, None),
            (r#""2024-01-01""#, Some(false)),
            (r#""2024-01-01T00:00:00""#, Some(false)),
            (r#""2024-01-01t00:00:00z""#, Some(true)),
            (r#""2024-01-01 00:00""#, Some(false)),
            (r#""2024-01-01_00:00:00Z""#, Some(true)),
            (r#""2024-01-01T00:00:00.123456Z""#, Some(true)),
            (r#""2024-01-01T00:00:00+0200""#, Some(true)),
            (r#""2024-01-01T00:00:00+02""#, None),
            (r#""2024-02-30""#, None),
            (r#""2023-02-29""#, None),
            (r#""2024-02-29""#, Some(false)),
            (r#""2024-01-01T24:00:00""#, None),
            (r#""2024-01-01T00:00:60""#, None),
            (r#""2024-01-01T00:00:00.Z""#, None),
            (r#""2024-01-01T00:00:00 Z""#, None),
            (r#""1700000000""#, Some(true)),
            (r#""1700000000.5""#, Some(true)),
            (r#""-5""#, Some(true)),
            (r#""+5""#, Some(true)),
            (r#""5.""#, Some(true)),
            (r#"".5""#, Some(true)),
            (r#"".""#, None),
            (r#""1e3""#, None),
            (r#""1_000""#, None),
            (r#"" 5""#, None),
            (r#""253402300799999""#, Some(true)),
            (r#""253402300800000""#, None),
            (r#""-62135596800000""#, Some(true)),
            (r#""-62135596801000""#, None),
            (r#""""#, None),
            (r#"" 2024-01-01""#, None),
            (r#""2024-1-01""#, None),
            (r#""2024-01-01T00""#, None),
            (r#""2024-01-01T00:00:00,5Z""#, Some(true)),
            (r#"1700000000"#, Some(true)),
            (r#"1700000000.5"#, Some(true)),
            (r#"0"#, Some(true)),
            (r#"-1"#, Some(true)),
            (r#"10000000000000.0"#, Some(true)),
            (r#"190000000000000.0"#, Some(true)),
            (r#"210000000000000.0"#, Some(true)),
            (r#"1e+20"#, None),
            (r#"null"#, None),
            (r#"true"#, None),
            (r#"[]"#, None),
            (r#"{}"#, None),
            (r#""2024-01-01T00:00:00-00:00""#, Some(true)),
        ];
        for (json, want) in table {
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            let got = serde::datetime(&v).ok().map(|tz| tz == Tz::Aware);
            assert_eq!(got, *want, "{json}");
        }
    }
}
