//! `--shard K/N`: split a store across machines by a stable hash of the
//! conversation id (the folder name), so every run everywhere agrees.

use std::path::Path;
use std::str::FromStr;

/// Shard `index` of `count`, `index` from 0 to `count - 1` (the numbering of
/// a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}` is not K/N (e.g. 0/4: K from 0 to N-1)");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!("`{s}`: N must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "`{s}`: K is counted from 0, so it must be below N (0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// 64-bit FNV-1a: tiny, stable across runs, machines and Rust releases
/// (unlike the standard library's randomly keyed SipHash).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Shard {
    /// The shard a conversation folder belongs to: FNV-1a of its name's
    /// bytes, modulo N.
    pub fn of(dir: &Path, count: u32) -> u32 {
        let name = dir.file_name().unwrap_or(dir.as_os_str());
        (fnv1a(name.as_encoded_bytes()) % u64::from(count)) as u32
    }

    pub fn contains(&self, dir: &Path) -> bool {
        Shard::of(dir, self.count) == self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_zero_based_k_of_n() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        assert!("4/4".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert!("1".parse::<Shard>().is_err());
        assert!("a/2".parse::<Shard>().is_err());
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // Test vectors of the reference implementation.
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn every_conversation_lands_in_exactly_one_shard() {
        for n in 1..6 {
            for i in 0..200 {
                let p = std::path::PathBuf::from(format!("store/{i:032x}"));
                let hits = (0..n)
                    .filter(|&k| Shard { index: k, count: n }.contains(&p))
                    .count();
                assert_eq!(hits, 1);
            }
        }
    }
}
