#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Gemini,
        "/fuzz/tmp/proj/chats/session-2026-01-01T00-00-abcd1234.jsonl",
        data,
    );
});
