//! Scanning many conversations: the parallel, order-keeping pipeline and the
//! filters that decide which conversations a run looks at.

pub mod ids;
pub mod ordered;
pub mod scan;
pub mod shard;
pub mod since;
