#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Pi,
        "/fuzz/.pi/agent/sessions/--home-user-demo--/2026-11-30T09-12-03-481Z_019ad0c2-7e41-7a3b-9c5d-2f8e6a1b4c07.jsonl",
        data,
    );
});
