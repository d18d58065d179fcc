//! What a validation says: pydantic's errors, and the places it cannot judge.

/// One validation error, as pydantic reports it (`loc: msg [type=...]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VError {
    /// pydantic's `loc`, joined with `.`.
    pub loc: String,
    /// pydantic's error type (`missing`, `extra_forbidden`, ...), or a Python
    /// exception name when the SDK's validator crashes instead.
    pub kind: &'static str,
    pub msg: String,
    /// An unknown `ClientAction_*` kind (registered from meta.json's
    /// `client_tools` at run time, so not in the extracted schema).
    pub client_kind: Option<String>,
}

impl VError {
    /// The Python exception the SDK raises for it: `ValidationError`, or the
    /// exception an SDK validator crashes with (old `_validate_subtype`).
    pub fn exception(&self) -> &'static str {
        match self.kind {
            k @ ("AttributeError" | "TypeError" | "KeyError") => k,
            _ => "ValidationError",
        }
    }
}

impl std::fmt::Display for VError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.loc.is_empty() {
            write!(f, "{} [type={}]", self.msg, self.kind)
        } else {
            // a loc holds the file's own keys: clipped like any quoted name
            let loc = crate::text::clip(&self.loc, crate::text::QUOTE_MAX);
            write!(f, "{loc}: {} [type={}]", self.msg, self.kind)
        }
    }
}

/// The verdict on one document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub errors: Vec<VError>,
    /// Places (loc and validator) whose function validator is not encoded:
    /// accepted here, but convo-doctor cannot judge them.
    pub unjudged: Vec<(String, String)>,
}

impl Outcome {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}
