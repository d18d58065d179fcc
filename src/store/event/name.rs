//! Event file names: the SDK's `EVENT_NAME_RE` and `EVENT_FILE_PATTERN`.

/// A name matched by `^event-(\d{5,})-([0-9a-fA-F-]{8,})\.json$` (`\d{5}` before 1.30).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventName {
    pub idx: u64,
    pub id: String,
}

/// Apply the SDK's `EVENT_NAME_RE` to a file name.
pub fn parse_event_name(name: &str, wide_index: bool) -> Option<EventName> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (digits, id) = rest.split_once('-')?;
    let ok_digits = digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit());
    if !ok_digits || (!wide_index && digits.len() != 5) {
        return None;
    }
    if id.len() < 8 || !id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return None;
    }
    // Parse the index from the digits; absurdly long indices do not fit and
    // are treated as unmatched rather than wrapping.
    let idx = digits.parse::<u64>().ok()?;
    Some(EventName {
        idx,
        id: id.to_string(),
    })
}

/// A name like the SDK's but with its index spelled short
/// (`event-0006-<id>.json`: 1 to 4 digits), which the SDK's pattern does
/// not match, so it never reads the file. `bad-event-filename` may rename
/// one to its canonical name, so `undo` accepts it as a name to restore.
pub fn parse_short_index_name(name: &str) -> Option<EventName> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (digits, id) = rest.split_once('-')?;
    if digits.is_empty() || digits.len() >= 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // the id as the SDK's pattern has it: the canonical name must match
    parse_event_name(&format!("event-00000-{id}.json"), false)?;
    Some(EventName {
        idx: digits.parse().ok()?,
        id: id.to_string(),
    })
}

/// The name the SDK's `_path(idx)` rebuilds when it reads event `idx`
/// (`EVENT_FILE_PATTERN = "event-{idx:05d}-{event_id}.json"`).
pub fn canonical_name(idx: u64, id: &str) -> String {
    format!("event-{idx:05}-{id}.json")
}

/// Whether `name` is exactly [`canonical_name`]`(idx, id)`, without building
/// it (the reader asks this of every event it reads).
pub fn is_canonical_name(name: &str, idx: u64, id: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("event-")
        .and_then(|r| r.strip_suffix(".json"))
    else {
        return false;
    };
    let Some((digits, rest_id)) = rest.split_once('-') else {
        return false;
    };
    let width = idx.checked_ilog10().map_or(1, |l| l as usize + 1).max(5);
    rest_id == id
        && digits.len() == width
        && digits.bytes().all(|b| b.is_ascii_digit())
        && digits.parse::<u64>() == Ok(idx)
}

/// What `_count_events_on_disk` counts (and what `on_disk` reports).
pub fn counts_as_event_file(name: &str) -> bool {
    name.starts_with("event-") && name.ends_with(".json")
}

/// The SDK's count marker, `.eventlog-len-N.marker` (1.47+).
pub fn is_count_marker(name: &str) -> bool {
    name.strip_prefix(".eventlog-len-")
        .and_then(|r| r.strip_suffix(".marker"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rule_matches_the_sdk_regex() {
        let n = parse_event_name("event-00007-ae760ea7-1234.json", true).unwrap();
        assert_eq!(n.idx, 7);
        assert_eq!(n.id, "ae760ea7-1234");
        assert_eq!(
            parse_event_name("event-123456-abcdef12.json", true)
                .unwrap()
                .idx,
            123456
        );
        // 1.29.x read exactly five digits
        assert!(parse_event_name("event-123456-abcdef12.json", false).is_none());
        assert!(parse_event_name("event-7-abcdef12.json", true).is_none());
        assert!(parse_event_name("event-00007-abc.json", true).is_none());
        assert!(parse_event_name("event-00007-nothex99.json", true).is_none());
        assert!(parse_event_name(".eventlog.lock", true).is_none());
        assert!(parse_event_name("event-00007-abcdef12.json.tmp", true).is_none());
        assert!(counts_as_event_file("event-7-x.json"));
        assert!(!counts_as_event_file(".eventlog.lock"));
    }

    #[test]
    fn is_canonical_name_agrees_with_canonical_name() {
        let ids = ["ab", "abcdef12", "a-b", ""];
        let idxs = [0u64, 7, 99_999, 100_000, 123_456, u64::MAX];
        let names = [
            "event-00007-ab.json",
            "event-000007-ab.json",
            "event-7-ab.json",
            "event-00000-.json",
            "event-99999-abcdef12.json",
            "event-100000-abcdef12.json",
            "event-0100000-abcdef12.json",
            "event-123456-a-b.json",
            "event-+0007-ab.json",
            "event-00007-ab.json.tmp",
            "event-18446744073709551615-ab.json",
            "x",
        ];
        for id in ids {
            for idx in idxs {
                let canon = canonical_name(idx, id);
                assert!(is_canonical_name(&canon, idx, id), "{canon}");
                for n in names {
                    assert_eq!(is_canonical_name(n, idx, id), n == canon, "{n} {idx} {id}");
                }
            }
        }
    }

    #[test]
    fn short_index_names_are_what_the_sdk_pattern_misses() {
        let n = parse_short_index_name("event-13-6e4830b9-9a20.json").unwrap();
        assert_eq!((n.idx, n.id.as_str()), (13, "6e4830b9-9a20"));
        assert!(parse_event_name("event-13-6e4830b9-9a20.json", true).is_none());
        for not_short in [
            "event-00013-6e4830b9-9a20.json",
            "event--6e4830b9.json",
            "event-1x-6e4830b9.json",
            "event-13-short.json",
            "event-13-../../etc.json",
            "event-13-6e4830b9/x.json",
        ] {
            assert!(parse_short_index_name(not_short).is_none(), "{not_short}");
        }
    }

    #[test]
    fn canonical_name_pads_to_five() {
        assert_eq!(canonical_name(7, "ab"), "event-00007-ab.json");
        assert_eq!(canonical_name(123456, "ab"), "event-123456-ab.json");
    }
}
