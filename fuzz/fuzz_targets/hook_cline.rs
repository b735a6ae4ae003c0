#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    hook(Agent::Cline, data);
});
