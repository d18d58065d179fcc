//! Bytes → a tiny conversation folder on disk → `report::analyze` → every
//! renderer. See `convo_doctor_fuzz_layout` below for how the bytes become files.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../src/layout.rs"]
mod layout;

fuzz_target!(|data: &[u8]| {
    layout::analyze_bytes(data);
});
