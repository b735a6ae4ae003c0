//! Installing into a big `~/.claude.json` costs memory in proportion to the file, not to its
//! syntax tree: the heap is measured with a counting allocator (the binary's global allocator;
//! the test runs alone in a process of its own, `memtrail_testkit::alone`, so nothing else
//! allocates meanwhile).

use crate::common;

use common::{Sandbox, big_claude_json};
use memtrail_installer::{Action, Agent, apply, status_in};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak heap (above what was in use before) while `f` runs.
fn peak_of(f: impl FnOnce()) -> usize {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}

#[test]
fn a_big_claude_json_costs_a_few_copies_of_itself() {
    memtrail_testkit::alone!(a_big_claude_json_costs_a_few_copies_of_itself);
    let sb = Sandbox::new();
    let big = big_claude_json(5_600_000);
    let size = big.len();
    sb.put(&sb.global, Some(&big));
    drop(big);
    // The file, the parsed copy, the edited copy, the planned bytes, the bytes apply re-reads:
    // a handful of copies. A syntax tree of the whole file was about 90 times its size.
    let limit = 5 * size;
    let install = peak_of(|| {
        let plan = sb.plan(Action::Install);
        apply(&plan).unwrap();
    });
    let status = peak_of(|| {
        assert!(
            status_in(&sb.env, Agent::Claude, &sb.bin)
                .unwrap()
                .healthy()
        );
    });
    let uninstall = peak_of(|| {
        let plan = sb.plan(Action::Uninstall);
        apply(&plan).unwrap();
    });
    eprintln!("{size} bytes: install {install}, status {status}, uninstall {uninstall}");
    for (what, peak) in [
        ("install", install),
        ("status", status),
        ("uninstall", uninstall),
    ] {
        assert!(
            peak < limit,
            "{what}: peak heap {peak} bytes for a {size}-byte file"
        );
    }
}
