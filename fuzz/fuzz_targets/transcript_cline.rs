#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    doc(
        Agent::Cline,
        "/fuzz/home/.cline/data/tasks/1764661500123/api_conversation_history.json",
        data,
    );
});
