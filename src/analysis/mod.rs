//! The analysis of one conversation, once: the folder read, its index, the
//! two views and the checks' context ([`Analysis`]), in the order every
//! consumer needs them (the report, the tree, the repair plan), and the
//! models built from them for the renderers ([`tree`]).
//!
//! Layers: store → view → checks → analysis (and `crate::report`) → fix →
//! render; nothing here imports `crate::render`.

pub mod tree;

use crate::checks::Ctx;

/// One conversation read, indexed and viewed for one release
/// ([`crate::view::Loaded`]: `conv`, `index`, `views`, `version`), with the
/// checks' context on top.
///
/// ```no_run
/// # use convo_doctor::analysis::Analysis;
/// # use convo_doctor::store::conversation::Overlay;
/// # let dir = std::path::Path::new(".");
/// let a = Analysis::load(dir, convo_doctor::version::NEWEST, &Overlay::new());
/// let ctx = a.ctx(false); // `version_given`: `--server-version` was given
/// ```
pub use crate::view::Loaded as Analysis;

impl Analysis {
    /// The checks' context over this analysis. `version_given`: the release
    /// was named (`--server-version`), not the default.
    pub fn ctx(&self, version_given: bool) -> Ctx<'_> {
        let mut ctx = Ctx::new(&self.conv, &self.index, &self.views, self.version);
        ctx.version_given = version_given;
        ctx
    }
}
