#![no_main]
use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use memtrail_fuzz::*;

fuzz_target!(|data: &[u8]| {
    doc(
        Agent::Roo,
        "/fuzz/home/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/0b6f2c1e/api_conversation_history.json",
        data,
    );
});
