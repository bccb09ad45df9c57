//! `memory::retain_freed_host_memory`: freed blocks, small and far above glibc's 32 MiB
//! mapping threshold, are reused without page faults. Its own test binary: the setting is process-wide.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

extern crate gemma_vision_tensor as tensor;

use tensor::memory::retain_freed_host_memory;

/// The blocks [`churn`] allocates, in MiB: below and above glibc's 32 MiB mapping threshold,
/// below the 64 MiB a test thread's arena can hold.
const BLOCKS_MIB: [usize; 8] = [24, 3, 12, 48, 7, 30, 56, 12];

/// Minor page faults of this process so far (`/proc/self/stat`, field 10).
fn minor_faults() -> i64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the parenthesised command name start at field 3.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(10 - 3).unwrap().parse().unwrap()
}

/// Allocates, writes and frees blocks of several sizes (as a forward pass's intermediates
/// are); returns the page faults taken.
fn churn() -> i64 {
    let before = minor_faults();
    for mib in BLOCKS_MIB {
        let block = vec![1u8; mib << 20];
        std::hint::black_box(&block);
    }
    minor_faults() - before
}

#[test]
fn freed_blocks_are_reused_without_faults() {
    let pages_touched = BLOCKS_MIB.iter().sum::<usize>() as i64 * 256;
    let default_policy = churn();
    assert!(retain_freed_host_memory(), "glibc accepts the setting");
    churn(); // the heap grows to its working size once
    let retained = churn();
    assert!(retained < pages_touched / 100, "{retained} faults for {pages_touched} pages touched");
    assert!(default_policy > pages_touched / 4, "the default policy refaults: {default_policy}");
}
