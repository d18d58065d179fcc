//! `owner_lease.json`, read as every agent-server release from 1.19.1 to 1.58.2
//! reads it (`conversation_lease.py`, identical in 1.33.0, 1.37.0, 1.43.1, 1.47.0,
//! 1.52.0, 1.55.1 and 1.58.2): `ConversationLease._read_payload`, then the
//! takeover rule of `ConversationLease.claim` / `_owner_is_dead`.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::store::Doc;

/// `DEFAULT_LEASE_TTL_SECONDS`: a live owner renews every 15 s for 45 s.
pub const DEFAULT_TTL: f64 = 45.0;

/// Where and when the lease is judged: the host name the server compares
/// `owner_host` with (`socket.gethostname()`), the clock, and whether a pid
/// runs on this host (`os.kill(pid, 0)`).
#[derive(Clone, Debug)]
pub struct Env {
    pub now: SystemTime,
    pub host: Option<String>,
    /// Overrides the `/proc` probe (tests); `None` probes this machine.
    pub pid_alive: Option<fn(i64) -> bool>,
}

impl Env {
    pub fn here(now: SystemTime) -> Env {
        Env {
            now,
            host: this_host(),
            pid_alive: None,
        }
    }
    fn alive(&self, pid: i64) -> bool {
        match self.pid_alive {
            Some(f) => f(pid),
            None => pid_alive(pid),
        }
    }
}

/// The parsed payload (`LeasePayload`). Strings are raw text from the file:
/// quote them through `Ctx::quote` before they reach a message.
#[derive(Clone, Debug, PartialEq)]
pub struct Payload {
    pub owner: String,
    pub generation: i64,
    pub expires_at: f64,
    /// Kept only when a non-empty string, as `_read_payload` does.
    pub host: Option<String>,
    /// Kept only when an integer.
    pub pid: Option<i64>,
}

/// Why an unexpired lease counts as held.
#[derive(Clone, Debug, PartialEq)]
pub enum Held {
    /// `owner_host` is another machine: the server never probes its pid.
    OtherHost { container: bool },
    /// No host or pid (a lease written before 1.22.0): the TTL alone decides.
    NoHostPid,
    /// This host, and a process with `owner_pid` runs. `command` is the name
    /// of what runs under that pid now (`/proc/<pid>/comm`, never its
    /// arguments, which may hold secrets), when it can be read; `reused` when
    /// its command line is plainly not an agent-server's (SDK #4893: a reused
    /// pid keeps a dead owner's lease looking alive).
    ThisHostAlive {
        command: Option<String>,
        reused: bool,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Lease {
    /// No `owner_lease.json` (a clean shutdown deletes it).
    None,
    /// Present but not a valid payload: `_read_payload` logs and returns
    /// `None`, so the next claim simply takes the folder.
    Unparsable(String),
    /// `expires_at <= now`: the owner stopped renewing; taken over at the next claim.
    Expired(Payload),
    /// Unexpired, but the owner is on this host and its pid is gone:
    /// `_owner_is_dead`, taken over at the next claim.
    DeadOwner(Payload),
    /// Unexpired and the owner may be alive: `claim` raises
    /// `ConversationLeaseHeldError` until `expires_at`.
    Live(Payload, Held),
}

impl Lease {
    pub fn is_live(&self) -> bool {
        matches!(self, Lease::Live(..))
    }
}

pub fn this_host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// `_is_pid_alive`: `pid <= 0` is dead; otherwise whether the process exists.
pub fn pid_alive(pid: i64) -> bool {
    pid > 0 && Path::new(&format!("/proc/{pid}")).exists()
}

/// Python's `isinstance(x, int)`: JSON integers, and `true`/`false` (bool is an int).
fn py_int(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// `_read_payload`: the checks and their order, as written.
pub fn payload(v: &Value) -> Result<Payload, String> {
    let Value::Object(o) = v else {
        return Err("lease payload must be an object".into());
    };
    let owner = match o.get("owner_instance_id") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("lease owner_instance_id must be a string".into()),
    };
    let generation = o
        .get("generation")
        .and_then(py_int)
        .ok_or("lease generation must be an integer")?;
    let expires_at = match o.get("expires_at") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::INFINITY),
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        _ => return Err("lease expires_at must be numeric".into()),
    };
    let host = match o.get("owner_host") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    let pid = o.get("owner_pid").and_then(py_int);
    Ok(Payload {
        owner,
        generation,
        expires_at,
        host,
        pid,
    })
}

fn secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A Docker container's default host name: the first 12 hex digits of its id.
pub fn looks_like_container(host: &str) -> bool {
    host.len() == 12
        && host
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// What runs under `pid` now, from `/proc/<pid>/cmdline` (argv joined by spaces).
fn command_of(pid: i64) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let s: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    (!s.is_empty()).then(|| s.join(" "))
}

/// An agent-server is a Python process (`python -m openhands.agent_server`,
/// `uvicorn`, a PyInstaller `openhands-agent-server` binary).
fn plausible_server(cmd: &str) -> bool {
    let c = cmd.to_ascii_lowercase();
    [
        "python",
        "openhands",
        "uvicorn",
        "agent-server",
        "agent_server",
    ]
    .iter()
    .any(|k| c.contains(k))
}

/// The lease as the server's `claim` judges it.
pub fn judge(doc: &Doc, env: &Env) -> Lease {
    let v = match doc {
        Doc::Missing => return Lease::None,
        Doc::Unreadable(u) => return Lease::Unparsable(u.to_string()),
        Doc::Present(v) => v,
    };
    let p = match payload(v) {
        Ok(p) => p,
        Err(e) => return Lease::Unparsable(e),
    };
    if p.expires_at <= secs(env.now) {
        return Lease::Expired(p);
    }
    let (Some(host), Some(pid)) = (p.host.clone(), p.pid) else {
        return Lease::Live(p, Held::NoHostPid);
    };
    if env.host.as_deref() != Some(host.as_str()) {
        let container = looks_like_container(&host);
        return Lease::Live(p, Held::OtherHost { container });
    }
    if !env.alive(pid) {
        return Lease::DeadOwner(p);
    }
    let (command, reused) = if env.pid_alive.is_none() {
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .ok()
            .map(|s| s.trim().to_string());
        let reused = command_of(pid).is_some_and(|c| !plausible_server(&c));
        (name, reused)
    } else {
        (None, false)
    };
    Lease::Live(p, Held::ThisHostAlive { command, reused })
}

/// Read `owner_lease.json` of `dir` fresh from disk (for the moment before a write).
pub fn read(dir: &Path) -> Doc {
    let path = dir.join("owner_lease.json");
    match crate::store::fsread::read_regular(&path) {
        Err(_) if std::fs::symlink_metadata(&path).is_err() => Doc::Missing,
        Err(e) => Doc::Unreadable(e),
        Ok((b, _)) => match serde_json::from_slice(&b) {
            Ok(v) => Doc::Present(v),
            Err(e) => Doc::Unreadable(crate::store::Unreadable::InvalidJson(e.to_string())),
        },
    }
}

/// `2026-11-30T05:48:16Z` for an epoch float (clamped to something printable).
pub fn when(expires_at: f64) -> String {
    crate::clock::utc(UNIX_EPOCH + Duration::from_secs_f64(expires_at.clamp(0.0, 1e11))).0
}

/// "in 40 s", "in 3 h 5 min", "in 27 years".
pub fn from_now(expires_at: f64, now: SystemTime) -> String {
    let d = (expires_at - secs(now)).max(0.0);
    if d < 120.0 {
        format!("in {} s", d.round() as u64)
    } else if d < 2.0 * 3600.0 {
        format!("in {} min", (d / 60.0).round() as u64)
    } else if d < 3.0 * 86_400.0 {
        format!("in {} h", (d / 3600.0).round() as u64)
    } else if d < 730.0 * 86_400.0 {
        format!("in {} days", (d / 86_400.0).round() as u64)
    } else {
        format!("in {} years", (d / (365.25 * 86_400.0)).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(host: &str, alive: fn(i64) -> bool) -> Env {
        Env {
            now: UNIX_EPOCH + Duration::from_secs(2_000_000_000),
            host: Some(host.into()),
            pid_alive: Some(alive),
        }
    }
    fn lease(v: Value, e: &Env) -> Lease {
        judge(&Doc::Present(v), e)
    }

    #[test]
    fn read_payload_rules() {
        // bool is an int in Python: accepted as generation and pid
        let p = payload(&json!({"owner_instance_id": "a", "generation": true, "expires_at": 1}))
            .unwrap();
        assert_eq!((p.generation, p.expires_at), (1, 1.0));
        assert!(
            payload(&json!({"owner_instance_id": 1, "generation": 1, "expires_at": 1})).is_err()
        );
        assert!(
            payload(&json!({"owner_instance_id": "a", "generation": 1.5, "expires_at": 1}))
                .is_err()
        );
        assert!(
            payload(&json!({"owner_instance_id": "a", "generation": 1, "expires_at": "1"}))
                .is_err()
        );
        assert!(payload(&json!([1])).is_err());
        // an empty host and a float pid are dropped, not errors
        let p = payload(
            &json!({"owner_instance_id": "a", "generation": 1, "expires_at": 1,
                                "owner_host": "", "owner_pid": 3.0}),
        )
        .unwrap();
        assert_eq!((p.host, p.pid), (None, None));
    }

    #[test]
    fn takeover_rule() {
        let base = json!({"owner_instance_id": "x", "generation": 2, "expires_at": 2_000_000_045.0,
                          "owner_host": "h1", "owner_pid": 77});
        let alive = |_| true;
        let dead = |_| false;
        assert!(matches!(
            lease(base.clone(), &env("h1", dead)),
            Lease::DeadOwner(_)
        ));
        assert!(matches!(
            lease(base.clone(), &env("h1", alive)),
            Lease::Live(_, Held::ThisHostAlive { .. })
        ));
        assert!(matches!(
            lease(base.clone(), &env("h2", dead)),
            Lease::Live(_, Held::OtherHost { container: false })
        ));
        let mut old = base.clone();
        old["expires_at"] = json!(2_000_000_000.0); // == now: expired (`expires_at > now` fails)
        assert!(matches!(lease(old, &env("h1", alive)), Lease::Expired(_)));
        let legacy =
            json!({"owner_instance_id": "x", "generation": 1, "expires_at": 2_000_000_045u64});
        assert!(matches!(
            lease(legacy, &env("h1", dead)),
            Lease::Live(_, Held::NoHostPid)
        ));
        let mut zero = base;
        zero["owner_pid"] = json!(0);
        zero["owner_host"] = json!("0123456789ab");
        assert!(matches!(
            lease(zero.clone(), &env("0123456789ab", |p| p > 0)),
            Lease::DeadOwner(_)
        ));
        assert!(matches!(
            lease(zero, &env("h1", alive)),
            Lease::Live(_, Held::OtherHost { container: true })
        ));
        assert!(matches!(
            judge(&Doc::Missing, &env("h", alive)),
            Lease::None
        ));
    }

    #[test]
    fn reused_pid_is_told_apart() {
        assert!(plausible_server(
            "/usr/bin/python3 -m openhands.agent_server"
        ));
        assert!(!plausible_server("/usr/sbin/sshd -D"));
    }
}
