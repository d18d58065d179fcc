//! The analysis of one conversation, once: the folder read, its index, the
//! two views and the checks' context ([`Analysis`]), in the order every
//! consumer needs them (the report, the tree, the repair plan), and the
//! models built from them for the renderers ([`tree`]).
//!
//! Layers: store → view → checks → analysis (and `crate::report`) → fix →
//! render; nothing here imports `crate::render`.

pub mod tree;

use std::path::Path;

use crate::checks::Ctx;
use crate::store::conversation::Overlay;
use crate::store::{Conversation, Index};
use crate::version::Version;
use crate::view::Views;

/// One conversation read and viewed for one release: everything a [`Ctx`]
/// borrows, owned in one place.
///
/// ```no_run
/// # use convo_doctor::analysis::Analysis;
/// # use convo_doctor::store::conversation::Overlay;
/// # let dir = std::path::Path::new(".");
/// let a = Analysis::load(dir, convo_doctor::version::NEWEST, &Overlay::new());
/// let ctx = a.ctx(false); // `version_given`: `--server-version` was given
/// ```
#[derive(Debug)]
pub struct Analysis {
    pub conv: Conversation,
    pub index: Index,
    pub views: Views,
    pub version: Version,
}

impl Analysis {
    /// Read `dir` (with `overlay`'s planned contents in place of some
    /// files), index its events and compute both views for `version`.
    pub fn load(dir: &Path, version: Version, overlay: &Overlay) -> Analysis {
        Analysis::of(Conversation::load_with(dir, version, overlay), version)
    }

    /// Index and view a conversation already read.
    pub fn of(conv: Conversation, version: Version) -> Analysis {
        let index = Index::build(&conv.events);
        let views = Views::compute(&conv, &index, version);
        Analysis {
            conv,
            index,
            views,
            version,
        }
    }

    /// The checks' context over this analysis. `version_given`: the release
    /// was named (`--server-version`), not the default.
    pub fn ctx(&self, version_given: bool) -> Ctx<'_> {
        let mut ctx = Ctx::new(&self.conv, &self.index, &self.views, self.version);
        ctx.version_given = version_given;
        ctx
    }
}
