//! The extension's allocator: mimalloc, set up for reads that allocate and
//! free hundreds of MB of buffers.
//!
//! - Why not glibc: it hands large blocks back to the kernel on free, so
//!   every read paid to fault in and zero fresh pages (half the CPU time of a
//!   local read, measured with perf). mimalloc keeps and reuses them.
//! - Freed memory is kept (see [`configure`]).
//! - No transparent huge pages for its memory (see [`set_up_at_load`]).
//! - Fresh pages of decoded output are faulted in a block at a time
//!   ([`Prefaulting`]).
//!
//! The first two are mimalloc's own options, so `MIMALLOC_PURGE_DELAY` and
//! `MIMALLOC_ALLOW_THP` in the environment still decide when set;
//! `FASTINGEST_PREFAULT=0` turns the third off.

use std::alloc::{GlobalAlloc, Layout};

use fastingest::memory;
use mimalloc::MiMalloc;
use pyo3::prelude::*;

#[global_allocator]
static ALLOCATOR: Prefaulting = Prefaulting;

/// mimalloc, with the fresh pages of mid-sized blocks allocated on the
/// decode threads faulted in at once (see [`fastingest::memory`]). Turned
/// off by `FASTINGEST_PREFAULT=0`.
struct Prefaulting;

// SAFETY: every call is mimalloc's; `prefault` only faults in pages of the
// block mimalloc just returned, leaving their bytes as they were.
unsafe impl GlobalAlloc for Prefaulting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let block = unsafe { MiMalloc.alloc(layout) };
        if memory::should_prefault(layout.size()) {
            unsafe { memory::prefault(block, layout.size()) };
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let block = unsafe { MiMalloc.alloc_zeroed(layout) };
        if memory::should_prefault(layout.size()) {
            unsafe { memory::prefault(block, layout.size()) };
        }
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let block = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        // The bytes kept were written; only the new tail may be fresh.
        if !block.is_null() && new_size > layout.size() && memory::should_prefault(new_size) {
            let old = layout.size();
            unsafe { memory::prefault(block.add(old), new_size - old) };
        }
        block
    }
}

// Options that `libmimalloc-sys` names no constant for: their values in the
// `mi_option_t` enum of mimalloc 3.x, which it builds. (The tests check that
// each reads what its environment variable set.)
/// `mi_option_purge_delay`.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// `mi_option_allow_thp`.
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// With mimalloc's default 10 ms purge delay, buffers freed while a read is
/// still going are returned to the kernel and faulted in again (a cold read
/// measured 3x slower). Keep freed memory for reuse unless the user set
/// `MIMALLOC_PURGE_DELAY` (milliseconds; -1 never returns memory).
pub(crate) fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide allocator option; no memory is touched.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}

/// Runs when the extension is loaded, before it allocates anything.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static SET_UP_AT_LOAD: extern "C" fn() = set_up_at_load;

/// Keeps mimalloc from asking for transparent huge pages (`MADV_HUGEPAGE`)
/// for the memory it maps, unless `MIMALLOC_ALLOW_THP` is set (`=1` asks
/// for them again).
///
/// Why: a read in a fresh process touches a few hundred MB of new memory.
/// On a VM that hands free memory back to its host (free page reporting),
/// a new 2 MiB page is most often carved from memory the host took back and
/// must back again, in one fault, so the same read had two modes. Fresh
/// process per read, 128 MB files, medians (min-max) in ms, polars alongside:
/// from MinIO 122 (121-138) with 4 KiB pages against 206 (142-229) with
/// huge pages (polars 121); after another process freed 600 MB, 132
/// (115-151) against 281 (231-451) (polars 124); local and cold, 109
/// (96-119) against 103 (96-236) (polars 129). Steady reads in one process
/// take the same time either way, with 10-17 % less memory resident. The
/// cost: a fresh read of a ~20 MB local file takes more, small, faults:
/// 26-37 ms against 12-23 ms with huge pages (polars 14-21).
///
/// It must run before the first allocation: mimalloc maps its first arena
/// then, and advises huge pages for all of it. Setting the option before
/// mimalloc's own set-up would make that set-up turn huge pages off for the
/// whole process (`PR_SET_THP_DISABLE`), which is not ours to decide; so its
/// set-up is run first.
#[cfg(target_os = "linux")]
extern "C" fn set_up_at_load() {
    // SAFETY: mimalloc's set-up is idempotent and meant to be called early;
    // `getenv` reads the environment without allocating; setting an option
    // touches no memory.
    unsafe {
        libmimalloc_sys::mi_process_init();
        if libc::getenv(c"MIMALLOC_ALLOW_THP".as_ptr()).is_null() {
            libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
        }
        let prefault = libc::getenv(c"FASTINGEST_PREFAULT".as_ptr());
        if !prefault.is_null() && *prefault == b'0' as libc::c_char {
            memory::set_prefault(false);
        }
    }
}

/// The allocator's purge delay, for tests.
#[pyfunction]
pub(crate) fn _allocator_purge_delay() -> i64 {
    // SAFETY: reads a process-wide allocator option.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) as i64 }
}

/// Whether the allocator asks for transparent huge pages, for tests.
#[pyfunction]
pub(crate) fn _allocator_huge_pages() -> bool {
    // SAFETY: reads a process-wide allocator option.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP) != 0 }
}

/// Whether the allocator faults in the fresh pages of decoded output ahead,
/// for tests.
#[pyfunction]
pub(crate) fn _allocator_prefaults() -> bool {
    memory::prefault_enabled()
}
