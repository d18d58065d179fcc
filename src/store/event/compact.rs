//! The compact fields of an event record (issue 27): a kind or a source
//! as an interned symbol ([`Sym`], 4 bytes), an id as its 128 bits when it
//! is spelled as the SDK writes one ([`Cid`], 24 bytes), a timestamp as
//! its packed fields when it is spelled as the SDK writes one ([`Stamp`],
//! 16 bytes). Each spells its text back exactly (a spelling that would not
//! come back byte for byte is kept as text), so every comparison and every
//! output stays what it was with the text.
//!
//! Long because: the three types share one contract (each spells back
//! exactly the text it was made from), and the tests of that contract.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::num::NonZeroU32;
use std::ops::Deref;
use std::sync::{Mutex, OnceLock, RwLock};

use super::text::Id;

// ---------------------------------------------------------------- Sym

/// A kind or a source, interned: 4 bytes (`Option<Sym>` too). The names
/// the kind tables and the SDK's sources know are a static table read
/// without a lock; any other name is interned once per process (kept until
/// the process ends: one copy of each distinct spelling) and read under a
/// shared lock. Two symbols are equal exactly when their texts are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Sym(NonZeroU32);

/// Symbols at or above this are in the interned table.
const INTERNED: u32 = 1 << 31;

/// The SDK's `SourceType` values.
const SOURCES: [&str; 4] = ["agent", "user", "environment", "hook"];

struct Known {
    names: Vec<&'static str>,
    by_name: HashMap<&'static str, u32>,
}

fn known() -> &'static Known {
    static KNOWN: OnceLock<Known> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let mut names: Vec<&'static str> = vec![""];
        names.extend(SOURCES);
        names.extend(crate::kinds::all_names());
        names.sort_unstable();
        names.dedup();
        let by_name = names
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i as u32 + 1))
            .collect();
        Known { names, by_name }
    })
}

#[derive(Default)]
struct Interned {
    names: Vec<&'static str>,
    by_name: HashMap<&'static str, u32>,
}

fn interned() -> &'static RwLock<Interned> {
    static INTERNED_NAMES: OnceLock<RwLock<Interned>> = OnceLock::new();
    INTERNED_NAMES.get_or_init(RwLock::default)
}

/// Serialises the interning of new names (readers take the shared lock).
static INTERNING: Mutex<()> = Mutex::new(());

impl Sym {
    pub fn new(s: &str) -> Sym {
        if let Some(&i) = known().by_name.get(s) {
            return Sym(NonZeroU32::MIN.saturating_add(i - 1));
        }
        let read = |t: &Interned| t.by_name.get(s).copied();
        if let Some(i) = read(&interned().read().unwrap_or_else(|e| e.into_inner())) {
            return Sym::interned_at(i);
        }
        let _one = INTERNING.lock().unwrap_or_else(|e| e.into_inner());
        let mut t = interned().write().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = read(&t) {
            return Sym::interned_at(i);
        }
        let name: &'static str = Box::leak(s.to_owned().into_boxed_str());
        let i = t.names.len() as u32;
        t.names.push(name);
        t.by_name.insert(name, i);
        Sym::interned_at(i)
    }

    fn interned_at(i: u32) -> Sym {
        Sym(NonZeroU32::MIN.saturating_add(INTERNED - 1 + i))
    }

    pub fn as_str(&self) -> &'static str {
        let v = self.0.get();
        if v < INTERNED {
            return known().names.get(v as usize - 1).copied().unwrap_or("");
        }
        let t = interned().read().unwrap_or_else(|e| e.into_inner());
        t.names.get((v - INTERNED) as usize).copied().unwrap_or("")
    }
}

impl Deref for Sym {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Sym {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Hash for Sym {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl PartialOrd for Sym {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Sym {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(o.as_str())
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for Sym {
    fn eq(&self, o: &str) -> bool {
        self.as_str() == o
    }
}

impl PartialEq<&str> for Sym {
    fn eq(&self, o: &&str) -> bool {
        self.as_str() == *o
    }
}

impl PartialEq<String> for Sym {
    fn eq(&self, o: &String) -> bool {
        self.as_str() == o
    }
}

impl PartialEq<Sym> for str {
    fn eq(&self, o: &Sym) -> bool {
        self == o.as_str()
    }
}

impl PartialEq<Sym> for &str {
    fn eq(&self, o: &Sym) -> bool {
        *self == o.as_str()
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Self {
        Sym::new(s)
    }
}

impl From<Sym> for String {
    fn from(s: Sym) -> String {
        s.as_str().to_string()
    }
}

impl serde::Serialize for Sym {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

// ---------------------------------------------------------------- Cid

/// An id (an event's, a parent's, a tool call's): its 128 bits when it is
/// spelled exactly as the SDK writes one (a lower-case UUID with dashes,
/// which the bits spell back), any other spelling as its text. 24 bytes
/// (`Option<Cid>` too), where the text took 40. Two ids are equal exactly
/// when their texts are.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Cid(CidRepr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum CidRepr {
    Uuid([u64; 2]),
    Text(Box<str>),
}

impl Cid {
    pub fn new(s: &str) -> Cid {
        match uuid_bits(s) {
            Some(b) => Cid(CidRepr::Uuid(b)),
            None => Cid(CidRepr::Text(s.into())),
        }
    }

    /// The id's 128 bits, when it is spelled as the SDK writes one.
    pub fn bits(&self) -> Option<[u64; 2]> {
        match &self.0 {
            CidRepr::Uuid(b) => Some(*b),
            CidRepr::Text(_) => None,
        }
    }

    /// The id's text when it is not UUID-shaped (no copy).
    pub fn text(&self) -> Option<&str> {
        match &self.0 {
            CidRepr::Uuid(_) => None,
            CidRepr::Text(s) => Some(s),
        }
    }

    /// The id as spelled in the file (inline: no heap block for a UUID).
    pub fn spell(&self) -> Id {
        match &self.0 {
            CidRepr::Uuid(b) => {
                let mut buf = [0u8; 36];
                spell_uuid(*b, &mut buf);
                // SAFETY-free: the bytes are ASCII hex digits and dashes
                Id::new(std::str::from_utf8(&buf).unwrap_or_default())
            }
            CidRepr::Text(s) => Id::new(s),
        }
    }

    /// Whether this id spells `s`.
    pub fn is(&self, s: &str) -> bool {
        match &self.0 {
            CidRepr::Uuid(b) => uuid_bits(s) == Some(*b),
            CidRepr::Text(t) => &**t == s,
        }
    }
}

/// Lower-case hex with dashes, as `str(uuid.UUID)` spells it.
fn spell_uuid(b: [u64; 2], out: &mut [u8; 36]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let v = (u128::from(b[0]) << 64) | u128::from(b[1]);
    let mut nib = 0;
    for (i, o) in out.iter_mut().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            *o = b'-';
            continue;
        }
        *o = HEX[((v >> (124 - 4 * nib)) & 0xf) as usize];
        nib += 1;
    }
}

impl fmt::Display for Cid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.spell().as_str(), f)
    }
}

impl fmt::Debug for Cid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.spell().as_str(), f)
    }
}

impl PartialEq<str> for Cid {
    fn eq(&self, o: &str) -> bool {
        self.is(o)
    }
}

impl PartialEq<&str> for Cid {
    fn eq(&self, o: &&str) -> bool {
        self.is(o)
    }
}

impl From<&str> for Cid {
    fn from(s: &str) -> Self {
        Cid::new(s)
    }
}

impl serde::Serialize for Cid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.spell().as_str())
    }
}

// ---------------------------------------------------------------- Stamp

/// A timestamp: its fields packed in 64 bits when it is spelled as
/// `YYYY-MM-DD[T ]HH:MM:SS[.f{1,6}][Z|+00:00]` with fields that fit and
/// spell it back exactly (checked when it is made), any other spelling as
/// its text. 16 bytes (`Option<Stamp>` too), where the text took 40.
#[derive(Clone, PartialEq, Eq)]
pub struct Stamp(StampRepr);

#[derive(Clone, PartialEq, Eq)]
enum StampRepr {
    /// `tail`: the fraction's digits (0–6, bits 0–2), the suffix (bits 3–4:
    /// none, `Z`, `+00:00`), a space for the `T` (bit 5).
    Packed { tail: u8, bits: u64 },
    /// A thin pointer (a `Box<str>` would make the stamp 24 bytes).
    #[allow(clippy::box_collection)]
    Text(Box<String>),
}

/// (width in bits, shift) of year, month, day, hour, minute, second, fraction.
const FIELDS: [(u32, u32); 7] = [
    (14, 46),
    (4, 42),
    (5, 37),
    (5, 32),
    (6, 26),
    (6, 20),
    (20, 0),
];

impl Stamp {
    pub fn new(s: &str) -> Stamp {
        match Stamp::pack(s) {
            Some(p) if p.spell().as_str() == s => p,
            _ => Stamp(StampRepr::Text(Box::new(s.to_owned()))),
        }
    }

    fn pack(s: &str) -> Option<Stamp> {
        let b = s.as_bytes();
        if b.len() < 19 || b.len() > 32 {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<u64> {
            let d = b.get(r)?;
            if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
                return None;
            }
            Some(d.iter().fold(0, |v, &c| v * 10 + u64::from(c - b'0')))
        };
        let (sep, dash) = (b[10], [b[4], b[7], b[13], b[16]]);
        if dash != [b'-', b'-', b':', b':'] || !matches!(sep, b'T' | b' ') {
            return None;
        }
        let mut vals = [
            num(0..4)?,
            num(5..7)?,
            num(8..10)?,
            num(11..13)?,
            num(14..16)?,
            num(17..19)?,
            0,
        ];
        let mut rest = &s[19..];
        let mut digits = 0u8;
        if let Some(r) = rest.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 || n > 6 {
                return None;
            }
            vals[6] = num(20..20 + n)?;
            digits = n as u8;
            rest = &r[n..];
        }
        let suffix = match rest {
            "" => 0,
            "Z" => 1,
            "+00:00" => 2,
            _ => return None,
        };
        let mut bits = 0u64;
        for (v, (w, sh)) in vals.iter().zip(FIELDS) {
            if *v >= 1 << w {
                return None;
            }
            bits |= v << sh;
        }
        let tail = digits | suffix << 3 | u8::from(sep == b' ') << 5;
        Some(Stamp(StampRepr::Packed { tail, bits }))
    }

    /// The timestamp as spelled in the file.
    pub fn spell(&self) -> Id {
        match &self.0 {
            StampRepr::Packed { tail, bits } => {
                let f = |k: usize| (bits >> FIELDS[k].1) & ((1 << FIELDS[k].0) - 1);
                let sep = if tail & 32 != 0 { ' ' } else { 'T' };
                let mut s = format!(
                    "{:04}-{:02}-{:02}{sep}{:02}:{:02}:{:02}",
                    f(0),
                    f(1),
                    f(2),
                    f(3),
                    f(4),
                    f(5)
                );
                let digits = usize::from(tail & 7);
                if digits > 0 {
                    s.push_str(&format!(".{:0digits$}", f(6)));
                }
                s.push_str(match (tail >> 3) & 3 {
                    1 => "Z",
                    2 => "+00:00",
                    _ => "",
                });
                Id::new(&s)
            }
            StampRepr::Text(s) => Id::new(s),
        }
    }
}

impl fmt::Debug for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.spell().as_str(), f)
    }
}

/// The 128 bits of `s` if it is exactly `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`
/// in lower-case hex (so the bits spell `s` back, and no other text).
pub fn uuid_bits(s: &str) -> Option<[u64; 2]> {
    let b = s.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut v: u128 = 0;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = v << 4 | u128::from(d);
    }
    Some([(v >> 64) as u64, v as u64])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<Option<Sym>>(), 4);
        assert_eq!(std::mem::size_of::<Option<Cid>>(), 24);
        assert_eq!(std::mem::size_of::<Option<Stamp>>(), 16);
    }

    #[test]
    fn symbols_spell_back_and_compare_as_their_text() {
        let names = [
            "MessageEvent",
            "ConversationStateUpdateEvent",
            "agent",
            "",
            "NoReleaseKnowsThisKind",
            "é",
            "NoReleaseKnowsThisKind",
        ];
        let syms: Vec<Sym> = names.iter().map(|n| Sym::new(n)).collect();
        for (a, sa) in names.iter().zip(&syms) {
            assert_eq!(sa.as_str(), *a);
            for (b, sb) in names.iter().zip(&syms) {
                assert_eq!(a == b, sa == sb, "{a} {b}");
            }
        }
        assert!(syms[4].0.get() >= INTERNED && syms[0].0.get() < INTERNED);
    }

    #[test]
    fn ids_spell_back_exactly() {
        for s in [
            "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D",
            "0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d",
            "{0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d}",
            "call_ls_1",
            "",
            "é",
        ] {
            let c = Cid::new(s);
            assert_eq!(c.spell().as_str(), s);
            assert!(c.is(s) && c == s);
            assert_eq!(c.bits().is_some(), s.len() == 36 && s == s.to_lowercase());
        }
        assert_ne!(
            Cid::new("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
            Cid::new("0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D")
        );
        assert!(!Cid::new("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
            .is("0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D"));
    }

    #[test]
    fn timestamps_spell_back_exactly() {
        for (s, packed) in [
            ("2026-11-30T05:59:02.060754", true),
            ("2026-11-30T05:59:02", true),
            ("2026-11-30 05:59:02", true),
            ("2026-11-30T05:59:02.060Z", true),
            ("2026-11-30T05:59:02.000000+00:00", true),
            ("2026-11-30T05:59:02.0", true),
            ("0000-00-00T00:00:00", true),
            ("2026-11-30T05:59:02.0607541", false),
            ("2026-11-30T05:59:02.060754+01:00", false),
            ("2026-13-30T05:59:02", true),
            ("2026-16-30T05:59:02", false),
            ("2026-11-30T25:99:02", false),
            ("2026-11-30T05:59:02.", false),
            ("t", false),
            ("", false),
            ("2026-11-30T05:59:0é", false),
            ("٢٠٢٦-11-30T05:59:02", false),
        ] {
            let t = Stamp::new(s);
            assert_eq!(t.spell().as_str(), s);
            assert_eq!(matches!(t.0, StampRepr::Packed { .. }), packed, "{s}");
        }
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod record_size {
    /// What a readable event costs in the files vector (issue 27: 208 and
    /// 304 bytes before these fields were compacted).
    #[test]
    fn the_record_and_the_file() {
        assert_eq!(std::mem::size_of::<super::super::EventRecord>(), 128);
        assert_eq!(std::mem::size_of::<super::super::ParentRef>(), 24);
        assert_eq!(std::mem::size_of::<crate::store::EventFile>(), 224);
    }
}
