//! Bytes → the event reader: `parse_event` on the content, and the name rule
//! on the same bytes taken as a file name. Neither may panic, and a parse
//! error's message must never quote the input.
#![no_main]

use convo_doctor::store::event::{parse_event, parse_event_name};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_event(data);
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = parse_event_name(name, true);
        let _ = parse_event_name(name, false);
    }
});
