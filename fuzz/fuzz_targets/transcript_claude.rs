#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Claude,
        "/fuzz/p/4c2ddfdc-0000-4000-8000-000000000000.jsonl",
        data,
    );
});
