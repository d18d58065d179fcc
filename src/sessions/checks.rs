//! What the JSONL session formats' checks share: each is declared like
//! every other check (id, text, repair; listed in
//! [`crate::checks::REGISTRY`] so `explain`, `--only`, the docs and `--help`
//! know it) and run on a session by its format's `checks::run`, not on an
//! OpenHands folder (its [`Check::run`](crate::checks::Check::run) finds
//! nothing there).

/// Declare a JSONL session check and its id: `session_check! { Name, ID =
/// "format-check", summary: "…", explain: "…", repair: Repair }`.
macro_rules! session_check {
    ($name:ident, $const:ident = $id:literal, summary: $summary:expr, explain: $explain:expr, repair: $repair:expr $(,)?) => {
        pub const $const: &str = $id;

        pub struct $name;

        impl $crate::checks::Check for $name {
            fn id(&self) -> &'static str {
                $const
            }
            fn summary(&self) -> &'static str {
                $summary
            }
            fn explain(&self) -> &'static str {
                $explain
            }
            fn repair(&self) -> $crate::checks::Repair {
                $repair
            }
            fn run(&self, _ctx: &$crate::checks::Ctx, _out: &mut Vec<$crate::checks::Finding>) {}
        }
    };
}

pub(crate) use session_check;
