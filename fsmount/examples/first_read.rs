//! Benchmark helper for `scripts/bench/first-read` (not a test): the cost of checking a
//! blob's BLAKE3 before its first read is served, measured in one run.
//!
//! `first_read LABEL ROUNDS FILE...`: per round, drop each file's cached pages
//! (`posix_fadvise(DONTNEED)`, no root needed), then time
//! - plain: open and read every file whole (what a first read serves), and
//! - checked: open, BLAKE3 the file and compare with its expected hash (computed once
//!   before timing), then read it whole (the served read, from the pages the hash loaded).
//!
//! Prints the median seconds of each and the ratio checked/plain.

use std::io::Read;
use std::time::Instant;

fn drop_cache(path: &str) {
    let f = std::fs::File::open(path).expect("open");
    nix::fcntl::posix_fadvise(
        &f,
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    )
    .expect("fadvise");
}

fn read_whole(path: &str, buf: &mut [u8]) -> u64 {
    let mut f = std::fs::File::open(path).expect("open");
    let mut n = 0u64;
    loop {
        let got = f.read(buf).expect("read");
        if got == 0 {
            return n;
        }
        n += got as u64;
    }
}

fn hash_whole(path: &str, buf: &mut [u8]) -> blake3::Hash {
    let mut f = std::fs::File::open(path).expect("open");
    let mut h = blake3::Hasher::new();
    loop {
        let got = f.read(buf).expect("read");
        if got == 0 {
            return h.finalize();
        }
        h.update(&buf[..got]);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let label = &args[1];
    let rounds: usize = args[2].parse().expect("rounds");
    let files = &args[3..];
    let mut buf = vec![0u8; 1 << 20];
    let expected: Vec<blake3::Hash> = files.iter().map(|f| hash_whole(f, &mut buf)).collect();
    let (mut plain, mut checked) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        files.iter().for_each(|f| drop_cache(f));
        let t = Instant::now();
        let mut bytes = 0;
        for f in files {
            bytes += read_whole(f, &mut buf);
        }
        plain.push(t.elapsed().as_secs_f64());
        std::hint::black_box(bytes);

        files.iter().for_each(|f| drop_cache(f));
        let t = Instant::now();
        for (f, want) in files.iter().zip(&expected) {
            assert_eq!(hash_whole(f, &mut buf), *want, "{f} changed");
            bytes += read_whole(f, &mut buf);
        }
        checked.push(t.elapsed().as_secs_f64());
        std::hint::black_box(bytes);
    }
    let (p, c) = (median(plain), median(checked));
    println!(
        "{label}: {} files, plain {p:.4} s, with BLAKE3 check {c:.4} s, ratio {:.2}",
        files.len(),
        c / p
    );
}
