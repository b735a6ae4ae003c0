//! What the integration tests of every crate share (a dev-dependency, never shipped).
//!
//! Each crate has one integration-test binary (`tests/it/main.rs`, one module per area), so its
//! tests run as threads of one process. The few tests that need the process to themselves (they
//! change the process environment, count the heap with a global allocator, or read the process's
//! peak memory) run through [`alone`] in a child process of their own.

use std::process::Command;

/// The variable that tells a child test process which test it runs alone.
const ALONE_VAR: &str = "MEMTRAIL_TEST_ALONE";

/// Runs the test `name` of the module `module` (pass `module_path!()`) alone in a child process.
///
/// Returns `true` in that child: the caller then runs its body, the only test of the process
/// (no other thread reads the environment or allocates). Returns `false` in the parent, after the
/// child (this test binary, `<module>::<name> --exact --test-threads=1`) ran exactly that one test
/// and it passed; the child's output is printed (captured by the harness as the test's). Panics
/// when the child fails, cannot start, or did not run exactly one test.
///
/// ```ignore
/// #[test]
/// fn paths_follow_home() {
///     if !memtrail_testkit::alone(module_path!(), "paths_follow_home") {
///         return;
///     }
///     // ... std::env::set_var, as the only thread of the process ...
/// }
/// ```
pub fn alone(module: &str, name: &str) -> bool {
    // The harness names a test by its path inside the test crate: drop the crate's own name.
    let test = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    };
    if std::env::var_os(ALONE_VAR).is_some_and(|v| v == test.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(&exe)
        .args([test.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE_VAR, &test)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {test}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test} (alone): {}", out.status);
    assert!(
        stdout.contains("test result: ok. 1 passed;"),
        "{test} (alone): the child did not run exactly this one test"
    );
    false
}
