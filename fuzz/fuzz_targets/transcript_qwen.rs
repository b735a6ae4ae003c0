#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Qwen,
        "/fuzz/.qwen/projects/-home-user-demo/chats/7c1e4b2a-5d3f-4e8a-9b6c-0a1d2e3f4a5b.jsonl",
        data,
    );
});
