#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Codex,
        "/fuzz/sessions/2026/01/01/rollout-2026-01-01T00-00-00-0199a000-0000-7000-8000-000000000000.jsonl",
        data,
    );
});
