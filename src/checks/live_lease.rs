//! `live-lease` (info): an agent-server owns the conversation right now.

use std::time::UNIX_EPOCH;

use serde_json::Value;

use super::{Check, Ctx, Finding, Repair, Severity};

pub struct LiveLease;

/// The lease's state, as the agent-server's own takeover rule sees it.
#[derive(Debug, PartialEq)]
pub enum Lease {
    None,
    /// Unexpired, and the owner may be alive. `owner` is raw text from the
    /// file: quote it with `Ctx::quote` (redacted, then clipped).
    Live {
        owner: String,
        expires_at: f64,
    },
    /// Expired, or the owner process is gone: left by a crash.
    Stale {
        owner: String,
    },
    /// Present but unparsable: the server treats it as stale.
    Unparsable,
}

fn this_host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn pid_alive(pid: u64) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Evaluate owner_lease.json: live if `expires_at > now` and (another host,
/// or this host with `owner_pid` alive).
pub fn lease_state(ctx: &Ctx) -> Lease {
    lease_of(&ctx.conv.lease, ctx.now)
}

/// Whether a live lease holds the conversation folder `dir` right now (read
/// fresh from disk, for the moment before a write).
pub fn is_live(dir: &std::path::Path) -> bool {
    let path = dir.join("owner_lease.json");
    let doc = match crate::store::fsread::read_regular(&path) {
        Err(_) if std::fs::symlink_metadata(&path).is_err() => crate::store::Doc::Missing,
        Err(e) => crate::store::Doc::Unreadable(e),
        Ok((b, _)) => match serde_json::from_slice(&b) {
            Ok(v) => crate::store::Doc::Present(v),
            Err(_) => {
                crate::store::Doc::Unreadable(crate::store::Unreadable::InvalidJson(String::new()))
            }
        },
    };
    matches!(
        lease_of(&doc, std::time::SystemTime::now()),
        Lease::Live { .. }
    )
}

fn lease_of(doc: &crate::store::Doc, now: std::time::SystemTime) -> Lease {
    let v = match doc {
        crate::store::Doc::Missing => return Lease::None,
        crate::store::Doc::Unreadable(_) => return Lease::Unparsable,
        crate::store::Doc::Present(v) => v,
    };
    let Some(expires) = v.get("expires_at").and_then(Value::as_f64) else {
        return Lease::Unparsable;
    };
    let now = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let host = v.get("owner_host").and_then(Value::as_str);
    let pid = v.get("owner_pid").and_then(Value::as_u64);
    let owner = match (host, pid) {
        (Some(h), Some(p)) => format!("{h} pid {p}"),
        (Some(h), None) => h.to_string(),
        _ => v
            .get("owner_instance_id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| "an unknown owner".into()),
    };
    let same_host = host.is_some() && host.map(str::to_string) == this_host();
    let owner_gone = same_host && pid.is_some_and(|p| !pid_alive(p));
    if expires > now && !owner_gone {
        Lease::Live {
            owner,
            expires_at: expires,
        }
    } else {
        Lease::Stale { owner }
    }
}

impl Check for LiveLease {
    fn id(&self) -> &'static str {
        "live-lease"
    }

    fn summary(&self) -> &'static str {
        "An agent-server holds an unexpired lease: the conversation is in use"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  owner_lease.json (agent-server 1.19.1+) whose `expires_at` is in the future
  and whose owner may be alive (another host, or this host with `owner_pid`
  running). Servers renew it every 15 s with a 45 s lifetime and delete it on
  a clean shutdown.

Why it matters
  A live server owns the folder and caches it in memory: what diagnose reads
  may change under it, and `repair` refuses to touch it. A lease that expired
  or whose process is gone only means the last shutdown was not clean; the
  next server takes it over.

Repair
  None: stop the server (or wait until it evicts the idle conversation) first."
    }

    fn repair(&self) -> Repair {
        Repair::manual("stop the server (or wait until it evicts the idle conversation) first")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        if let Lease::Live { owner, expires_at } = lease_state(ctx) {
            let until =
                UNIX_EPOCH + std::time::Duration::from_secs_f64(expires_at.clamp(0.0, 1e11));
            out.push(Finding::new(
                self.id(),
                Severity::Info,
                "owner_lease.json",
                format!(
                    "in use by {} (lease until {}); repair will refuse to touch it",
                    ctx.quote(&owner),
                    crate::clock::utc(until).0
                ),
            ));
        }
    }
}
