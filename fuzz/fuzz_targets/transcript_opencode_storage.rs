#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    doc(
        Agent::Opencode,
        "/fuzz/storage/session/proj/ses_fuzz.json",
        data,
    );
});
