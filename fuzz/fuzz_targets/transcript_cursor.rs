#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Cursor,
        "/fuzz/projects/p/agent-transcripts/0199a000-0000-7000-8000-000000000000.jsonl",
        data,
    );
});
