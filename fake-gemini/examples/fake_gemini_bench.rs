//! fake-gemini's figures for BENCHMARKS.md, each next to a baseline measured the same way in the
//! same run: start → first stdout byte against `/bin/true`'s start → exit, and stdout flood
//! throughput into a pipe against `head -c N /dev/zero`.
//!
//! `cargo build -p fake-gemini && cargo run -p fake-gemini --example fake_gemini_bench`

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 40;
const FLOOD: u64 = 256 << 20;

fn fake() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/examples/<this> → target/<profile>/fake-gemini
    let bin = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .join("fake-gemini");
    assert!(
        bin.exists(),
        "build fake-gemini first: cargo build -p fake-gemini"
    );
    bin
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Spawn → first stdout byte (or EOF when the command prints nothing).
fn first_byte(cmd: &mut Command) -> Duration {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut b = [0u8; 1];
    let _ = child.stdout.take().expect("stdout").read(&mut b);
    let d = t.elapsed();
    let _ = child.wait();
    d
}

/// Bytes per second read from the command's stdout to EOF.
fn throughput(cmd: &mut Command) -> (u64, f64) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        match out.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k as u64,
        }
    }
    let _ = child.wait();
    (n, n as f64 / t.elapsed().as_secs_f64())
}

fn main() {
    let fake = fake();
    let dir = std::env::temp_dir().join(format!("fake-gemini-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let run = |args: &[&str], relaunch: bool| {
        let mut c = Command::new(&fake);
        c.args(args)
            .current_dir(&dir)
            .env("HOME", &dir)
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true");
        if !relaunch {
            c.env("GEMINI_CLI_NO_RELAUNCH", "1");
        }
        c
    };
    let mut t_true = Vec::new();
    let mut t_fake = Vec::new();
    let mut t_single = Vec::new();
    for _ in 0..RUNS {
        t_true.push(first_byte(&mut Command::new("/bin/true")));
        t_fake.push(first_byte(&mut run(&["-p", "hi"], true)));
        t_single.push(first_byte(&mut run(&["-p", "hi"], false)));
    }
    let (bt, bf, bs) = (median(t_true), median(t_fake), median(t_single));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| measure | fake-gemini | baseline | result |");
    println!("|---|---:|---:|---:|");
    println!(
        "| spawn → first stdout byte (launcher + worker) vs spawning `/bin/true` (median of {RUNS}) | {:.2} ms | {:.2} ms | +{:.2} ms (goal ≤ 3 ms) |",
        ms(bf), ms(bt), ms(bf) - ms(bt)
    );
    println!(
        "| same with `GEMINI_CLI_NO_RELAUNCH` (one process) | {:.2} ms | {:.2} ms | +{:.2} ms |",
        ms(bs),
        ms(bt),
        ms(bs) - ms(bt)
    );
    let flood_arg = format!("[[fake-gemini:flood-stdout bytes={FLOOD}]]");
    let (nf, rf) = throughput(&mut run(&["-p", &flood_arg], true));
    let (nh, rh) = throughput(Command::new("head").args(["-c", &FLOOD.to_string(), "/dev/zero"]));
    println!(
        "| stdout flood into a pipe, {} MiB, text mode vs `head -c N /dev/zero` | {:.0} MiB/s | {:.0} MiB/s | ×{:.2} (goal ≥ 0.5) |",
        FLOOD >> 20,
        rf / 1048576.0,
        rh / 1048576.0,
        rf / rh
    );
    assert_eq!(nh, FLOOD);
    assert_eq!(nf, FLOOD + 1, "the flood plus the trailing newline");
    let _ = std::fs::remove_dir_all(&dir);
}
