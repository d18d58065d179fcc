//! Compact text for an event record's fields (issue 27): up to `N` bytes
//! held inline (every id, tool call id and timestamp the SDK writes fits in
//! [`Id`]; most kind names in [`Name`]), a longer known kind name as a
//! `&'static str` of the kind tables, anything else boxed. A record holds
//! no heap block for a field the SDK wrote, where a `String` cost its
//! 24 bytes and a heap block of 32–64.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Immutable text, inline up to `N` bytes.
#[derive(Clone)]
pub struct Text<const N: usize>(Repr<N>);

#[derive(Clone)]
enum Repr<const N: usize> {
    Inline { len: u8, buf: [u8; N] },
    Static(&'static str),
    Heap(Box<str>),
}

/// An id, a tool call id or a timestamp: 40 bytes, inline up to 38.
pub type Id = Text<38>;
/// A kind or a source: 24 bytes, inline up to 22 (a longer kind name the
/// tables know is a static).
pub type Name = Text<22>;

impl<const N: usize> Text<N> {
    pub fn new(s: &str) -> Self {
        if s.len() <= N && N < 256 {
            let mut buf = [0u8; N];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            return Text(Repr::Inline {
                len: s.len() as u8,
                buf,
            });
        }
        match crate::kinds::known_name(s) {
            Some(k) => Text(Repr::Static(k)),
            None => Text(Repr::Heap(s.into())),
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, buf } => {
                // SAFETY: `buf[..len]` is only ever filled, in `new`, with
                // the bytes of a whole `&str` (and the fields are private),
                // so it is UTF-8; the reader asks this of every event.
                unsafe { std::str::from_utf8_unchecked(&buf[..*len as usize]) }
            }
            Repr::Static(s) => s,
            Repr::Heap(s) => s,
        }
    }
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Text::new("")
    }
}

impl<const N: usize> Deref for Text<N> {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> AsRef<str> for Text<N> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> AsRef<std::path::Path> for Text<N> {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(self.as_str())
    }
}

impl<const N: usize> Borrow<str> for Text<N> {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> From<&str> for Text<N> {
    fn from(s: &str) -> Self {
        Text::new(s)
    }
}

impl<const N: usize> From<String> for Text<N> {
    fn from(s: String) -> Self {
        Text::new(&s)
    }
}

impl<const N: usize> From<&Text<N>> for String {
    fn from(t: &Text<N>) -> String {
        t.as_str().to_string()
    }
}

impl<const N: usize> From<Text<N>> for String {
    fn from(t: Text<N>) -> String {
        t.as_str().to_string()
    }
}

impl<const N: usize> fmt::Display for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl<const N: usize> fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> Hash for Text<N> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl<const N: usize, const M: usize> PartialEq<Text<M>> for Text<N> {
    fn eq(&self, o: &Text<M>) -> bool {
        self.as_str() == o.as_str()
    }
}

impl<const N: usize> Eq for Text<N> {}

impl<const N: usize> PartialOrd for Text<N> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl<const N: usize> Ord for Text<N> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(o.as_str())
    }
}

impl<const N: usize> PartialEq<str> for Text<N> {
    fn eq(&self, o: &str) -> bool {
        self.as_str() == o
    }
}

impl<const N: usize> PartialEq<&str> for Text<N> {
    fn eq(&self, o: &&str) -> bool {
        self.as_str() == *o
    }
}

impl<const N: usize> PartialEq<String> for Text<N> {
    fn eq(&self, o: &String) -> bool {
        self.as_str() == o
    }
}

impl<const N: usize> PartialEq<Text<N>> for str {
    fn eq(&self, o: &Text<N>) -> bool {
        self == o.as_str()
    }
}

impl<const N: usize> PartialEq<Text<N>> for &str {
    fn eq(&self, o: &Text<N>) -> bool {
        *self == o.as_str()
    }
}

impl<const N: usize> PartialEq<Text<N>> for String {
    fn eq(&self, o: &Text<N>) -> bool {
        self == o.as_str()
    }
}

impl<const N: usize> serde::Serialize for Text<N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_spellings() {
        assert_eq!(std::mem::size_of::<Id>(), 40);
        assert_eq!(std::mem::size_of::<Option<Id>>(), 40);
        assert_eq!(std::mem::size_of::<Name>(), 24);
        assert_eq!(std::mem::size_of::<Option<Name>>(), 24);
        for s in [
            "",
            "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            "ConversationStateUpdateEvent",
            "é".repeat(30).as_str(),
            "x".repeat(39).as_str(),
        ] {
            assert_eq!(Id::new(s).as_str(), s);
            assert_eq!(Name::new(s).as_str(), s);
            assert_eq!(format!("{:?}", Id::new(s)), format!("{s:?}"));
        }
        assert!(matches!(
            Name::new("ConversationStateUpdateEvent").0,
            Repr::Static(_)
        ));
    }
}
