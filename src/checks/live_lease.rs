//! `live-lease` (info): an agent-server owns the conversation right now, or
//! its lease says so although the owner is gone (a reused pid). The lease
//! model is `crate::server::lease` (the releases' own takeover rule).

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::edit::{Refusal, Refused};
use crate::server::{self, lease as model, Era};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "live-lease";

pub struct LiveLease;

fn owner_short(p: &model::Payload) -> String {
    match (&p.host, p.pid) {
        (Some(h), Some(pid)) => format!("{h} pid {pid}"),
        (Some(h), None) => h.clone(),
        _ => p.owner.clone(),
    }
}

/// The full model of this conversation's lease, judged here and now.
pub fn model_state(ctx: &Ctx) -> model::Lease {
    model::judge(&ctx.conv.lease, &model::Env::here(ctx.now))
}

impl Check for LiveLease {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An agent-server holds an unexpired lease: the conversation is in use (or looks so)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  owner_lease.json (agent-server 1.19.1+; owner id, generation, expires_at,
  and from 1.22 owner_host and owner_pid), read as every release to 1.58.2
  reads it (conversation_lease.py, unchanged since). The server's `claim`
  refuses the folder while `expires_at` is in the future, unless the owner
  is on this host and its pid is gone. So the lease is:
  - live, owner on another host: its pid is never checked. A host name of 12
    hex digits is a Docker container's: its pid means nothing outside it;
  - live, owner on this host with its pid running. When that pid now runs
    something that is not an agent-server, the pid was reused (SDK #4893)
    and the dead owner's lease still looks alive;
  - live, no host or pid recorded (written before 1.22): the TTL alone;
  - expired, or owner pid gone on this host: the next claim takes it over
    (no finding; `stale-running` says it when the run was cut).
  Servers renew every 15 s with a 45 s lifetime and delete the file on a
  clean shutdown.

Why it matters
  A live server owns the folder and caches it in memory: what diagnose reads
  may change under it, and `repair` refuses to touch it. Servers before 1.37
  skip a conversation held by another live server at startup, so it is not
  listed until they restart after the lease expires (`not-listed`); 1.37+
  list it, but cannot open it (nor recover a `running` one) until then.

Repair
  None. The message says when the server will take the folder over and what
  to do: stop the owner (or wait until it evicts the idle conversation); if
  the owner is gone (a removed container, a reused pid), wait until the time
  given, or, with every server sharing this store stopped, delete
  owner_lease.json."
    }

    fn repair(&self) -> Repair {
        Repair::manual("stop the server (or wait until it evicts the idle conversation) first")
    }

    /// A live lease blocks every repair: the server's `claim` would refuse
    /// the folder, and its owner caches it in memory.
    fn gate(&self, ctx: &Ctx) -> Option<Refused> {
        let model::Lease::Live(p, _) = model_state(ctx) else {
            return None;
        };
        Some(Refused::new(
            Refusal::InUse,
            format!(
                "in use by {} (owner_lease.json is live); stop the server or wait for the lease to expire",
                ctx.quote(&owner_short(&p))
            ),
        ))
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let model::Lease::Live(p, held) = model_state(ctx) else {
            return;
        };
        let q = |s: &str| ctx.quote(s);
        let who = server::owner_text(&p, &held, &q);
        let until = model::when(p.expires_at);
        let rel = model::from_now(p.expires_at, ctx.now);
        let effect = match server::era(ctx.version) {
            Era::Eager => format!(
                "agent-server {} skips it at startup, so it is not listed until a restart after that",
                ctx.version
            ),
            _ => format!(
                "agent-server {} lists it but cannot open it{} until then",
                ctx.version,
                if ctx.running() {
                    " (it stays `running`: crash recovery waits for the lease)"
                } else {
                    ""
                }
            ),
        };
        let todo = match &held {
            model::Held::OtherHost { container: true } => {
                "if that container is gone, wait for the expiry (or, with every server on this store stopped, delete owner_lease.json)"
            }
            model::Held::OtherHost { container: false } => {
                "stop the server on that host, or wait for the expiry if it is gone"
            }
            model::Held::ThisHostAlive { reused: true, .. } => {
                "the owner is dead and its pid reused (SDK #4893): wait for the expiry, or, with every server on this store stopped, delete owner_lease.json"
            }
            _ => "stop that server (or wait until it evicts the idle conversation)",
        };
        out.push(Finding::new(
            self.id(),
            Severity::Info,
            "owner_lease.json",
            format!(
                "in use by {who}, generation {}, lease until {until} ({rel}); a server takes it over after that if the owner stops renewing; {effect}; {todo}; repair will refuse to touch it",
                p.generation
            ),
        ));
    }
}
