#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    lines(
        Agent::Droid,
        "/fuzz/.factory/sessions/-home-user-demo/4d7e2a91-6c3b-4f58-9e1a-b2c4d6e8f013.jsonl",
        data,
    );
});
