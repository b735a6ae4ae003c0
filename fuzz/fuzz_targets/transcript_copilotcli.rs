#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Copilotcli,
        "/fuzz/.copilot/session-state/5b0c3e7a-91d4-4f2e-b8a6-2c7d9e1f4a30/events.jsonl",
        data,
    );
});
