//! Soak test: many calls to one server with a seeded random mix of scenarios, then checks that
//! nothing leaked. Not part of `cargo nextest run` (an example, run by hand; BENCHMARKS.md has
//! the outcome of the last run).
//!
//! ```sh
//! cargo build --workspace && cargo run --example soak                 # 10,000 calls, seed 1
//! SOAK_CALLS=500 SOAK_SEED=7 cargo run --example soak                 # a shorter run
//! SOAK_BACKEND=acp cargo run --example soak                           # the warm backend
//! ```
//!
//! The server runs on its one-shot backend, or with `SOAK_BACKEND=acp` on the warm one (the
//! default of a user's server). Scenarios, one-shot: `success`, a small `flood-stdout` (16 KiB,
//! or 2 MiB past a 1 MiB cap, ending as `output_limit`), `hang` cancelled after a few
//! milliseconds, `crash`, `non-utf8`, and `relaunch` (the worker prints a chunk and hangs)
//! cancelled too. Warm (a 64 KiB cap): `success`, an answer of 2,000 small messages and one of
//! 20,000 that passes the cap (`trickle`), `crash`, a stream stalled after its first chunk
//! (`hang-after-output after=1`) and an agent frozen whole (`hang`), both cancelled, and a daily
//! quota run out; a call that crashes or freezes the agent runs alone (the calls beside it
//! would end with the agent they share). Every call that was not cancelled must end as its
//! scenario says (a success, `output_limit`, …).
//! Afterwards, with the server idle: the open file descriptors are those of the warm-up, RSS grew
//! by less than 5 MiB, no fake-gemini the log names is alive but the warm backend's one agent
//! (and none once the server exited), every call that was not cancelled was answered and no
//! cancelled one was. Exits 1 when a check fails.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gemini_mcp_conformance::client::{is_response, Client};
use gemini_mcp_conformance::fakelog::FakeLog;
use serde_json::{json, Value};

/// Calls made before the baseline is read: buffers, thread pools and allocator arenas reach
/// their working size first, so what grows afterwards is a leak, not a warm-up.
const WARM_UP: usize = 500;
/// Calls in flight at once; the server runs 4 and queues the rest.
const IN_FLIGHT: usize = 8;
/// Output cap given to the server, so floods past it stay small.
const CAP: usize = 1 << 20;
/// Output cap given to the server on the warm backend.
const WARM_CAP: usize = 64 << 10;
/// No answer this long after a call was sent fails the run.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the server is watched after the last answer for responses to cancelled calls.
const QUIET: Duration = Duration::from_secs(2);
/// Largest RSS growth accepted between the warm-up and the end.
const MAX_RSS_GROWTH_KIB: u64 = 5 * 1024;

/// A seeded SplitMix64: reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Success,
    FloodUnderCap,
    FloodOverCap,
    HangCancel,
    Crash,
    NonUtf8,
    RelaunchCancel,
}

impl Kind {
    /// Weighted draw: mostly ordinary calls, every fault often enough to matter.
    fn draw(rng: &mut Rng) -> Kind {
        match rng.below(100) {
            0..=39 => Kind::Success,
            40..=47 => Kind::FloodUnderCap,
            48..=54 => Kind::FloodOverCap,
            55..=69 => Kind::HangCancel,
            70..=79 => Kind::Crash,
            80..=89 => Kind::NonUtf8,
            _ => Kind::RelaunchCancel,
        }
    }

    fn marker(self, warm: bool) -> String {
        match self {
            // An answer of many small messages: under the warm cap, and past it.
            Kind::FloodUnderCap if warm => {
                "[[fake-gemini:trickle count=2000 interval-ms=0]]".into()
            }
            Kind::FloodOverCap if warm => {
                "[[fake-gemini:trickle count=20000 interval-ms=0]]".into()
            }
            Kind::NonUtf8 if warm => "[[fake-gemini:quota-daily]]".into(),
            Kind::HangCancel if warm => "[[fake-gemini:hang-after-output after=1]]".into(),
            Kind::RelaunchCancel if warm => "[[fake-gemini:hang]]".into(),
            Kind::Success => "[[fake-gemini:success]]".into(),
            // Under the result budget (GEMINICLI_MCP_RESULT_BUDGET_BYTES): a longer answer would be kept in the
            // server's bounded store of long answers, growing RSS by design, not by a leak.
            Kind::FloodUnderCap => "[[fake-gemini:flood-stdout bytes=16384]]".into(),
            Kind::FloodOverCap => format!("[[fake-gemini:flood-stdout bytes={}]]", CAP * 2),
            Kind::HangCancel => "[[fake-gemini:hang]]".into(),
            Kind::Crash => "[[fake-gemini:crash]]".into(),
            Kind::NonUtf8 => "[[fake-gemini:non-utf8]]".into(),
            Kind::RelaunchCancel => "[[fake-gemini:relaunch]]".into(),
        }
    }

    /// Scenarios that never end by themselves: the client cancels them.
    fn cancelled(self) -> bool {
        matches!(self, Kind::HangCancel | Kind::RelaunchCancel)
    }

    /// How a call of this kind that was not cancelled may end (`success`, or the `errorKind`).
    fn expected(self, warm: bool) -> &'static str {
        match self {
            Kind::Success | Kind::FloodUnderCap => "success",
            Kind::FloodOverCap => "output_limit",
            Kind::Crash if warm => "error",
            Kind::Crash => "unknown",
            Kind::NonUtf8 if warm => "quota_exhausted",
            Kind::NonUtf8 => "success",
            Kind::HangCancel | Kind::RelaunchCancel => "(cancelled)",
        }
    }

    /// On the warm backend, scenarios that end the one agent every call shares (it crashes, or
    /// freezes and is killed): each runs alone, or the calls beside it would end with it.
    fn ends_the_agent(self) -> bool {
        matches!(self, Kind::Crash | Kind::RelaunchCancel)
    }
}

fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// A pid that is running (not a zombie) and is one of this run's fakes (its environment names
/// this run's log): pids wrap around during 10,000 calls on a busy machine, and other test runs
/// start fake-geminis too, so a live pid or a `fake-gemini` command line alone proves nothing.
fn alive_fake(pid: u32, log: &Path) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().next());
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let ours = format!("FAKE_GEMINI_LOG={}", log.display()).into_bytes();
    state != Some("Z") && environ.split(|&b| b == 0).any(|var| var == ours.as_slice())
}

struct Pending {
    kind: Kind,
    sent: Instant,
    cancel_at: Option<Instant>,
}

#[expect(
    clippy::too_many_lines,
    reason = "the soak run in sequence: its phases share the counters they report at the end"
)]
fn main() {
    let calls: usize = std::env::var("SOAK_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let seed: u64 = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let warm = match std::env::var("SOAK_BACKEND").as_deref() {
        Ok("acp") => true,
        Ok("oneshot") | Err(_) => false,
        Ok(other) => {
            eprintln!("soak: SOAK_BACKEND is acp or oneshot, not {other:?}");
            std::process::exit(2);
        }
    };
    let server_bin = gemini_mcp_conformance::bins::locate("geminicli-mcp");
    let fake = gemini_mcp_conformance::bins::locate("fake-gemini");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fake.log");
    let backend = if warm { "acp" } else { "oneshot" };
    // One-shot: a cancelled run's tree is killed 20 ms after SIGTERM, so the soak does not wait
    // on hung trees. Warm: the same grace is how long a cancelled prompt's agent has to answer
    // `session/cancel` before the server kills the agent every call shares, so the default.
    let kill_grace_ms = if warm { "2000" } else { "20" };
    // The warm backend caps a turn's answer as the one-shot one caps stdout; a smaller cap keeps
    // the answer that passes it (thousands of messages) quick.
    let cap = if warm { WARM_CAP } else { CAP };
    println!("soak: {calls} calls on the {backend} backend, seed {seed}, {IN_FLIGHT} in flight, cap {cap} bytes");

    let child = Command::new(&server_bin)
        .env("GEMINI_CLI_BIN", &fake)
        .env("FAKE_GEMINI_STATE", dir.path())
        .env("FAKE_GEMINI_LOG", &log)
        .env("GEMINICLI_MCP_KILL_GRACE_MS", kill_grace_ms)
        .env("GEMINICLI_MCP_MAX_OUTPUT_BYTES", cap.to_string())
        .env("GEMINICLI_MCP_BACKEND", backend)
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start geminicli-mcp");
    let mut client = Client::new(child);
    let pid = client.pid();
    let id = client
        .request(
            "initialize",
            Some(json!({"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "soak", "version": "1"}})),
        )
        .unwrap();
    client
        .response(&id, Instant::now() + Duration::from_secs(30))
        .expect("initialize answered");
    client.notify("notifications/initialized", None).unwrap();

    let started = Instant::now();
    let mut rng = Rng(seed);
    let mut pending: HashMap<Value, Pending> = HashMap::new();
    let mut cancelled: HashSet<Value> = HashSet::new();
    let mut answered_kinds: BTreeMap<String, usize> = BTreeMap::new();
    // The first error's text of each (drawn kind → result).
    let mut first_error: BTreeMap<String, String> = BTreeMap::new();
    let mut drawn: BTreeMap<Kind, usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut baseline: Option<(usize, u64)> = None;
    let mut sent = 0;
    // The call drawn and not sent yet: on the warm backend one that ends the agent waits for
    // the calls in flight to end.
    let mut next: Option<Kind> = None;

    while sent < calls || !pending.is_empty() {
        let at_baseline = sent == WARM_UP && baseline.is_none();
        if at_baseline && pending.is_empty() {
            settle(&mut client, warm);
            baseline = Some((fd_count(pid), status_kib(pid, "VmRSS:")));
            continue;
        }
        let kind = *next.get_or_insert_with(|| Kind::draw(&mut rng));
        let alone = warm && kind.ends_the_agent();
        let room = if alone {
            pending.is_empty()
        } else {
            pending.len() < IN_FLIGHT && !pending.values().any(|p| warm && p.kind.ends_the_agent())
        };
        if sent < calls && room && !at_baseline {
            next = None;
            *drawn.entry(kind).or_default() += 1;
            let prompt = format!("soak call {sent} {}", kind.marker(warm));
            let id = client
                .request(
                    "tools/call",
                    Some(json!({"name": "gemini_prompt", "arguments": {"prompt": prompt}})),
                )
                .unwrap();
            let now = Instant::now();
            let cancel_at = kind
                .cancelled()
                .then(|| now + Duration::from_millis(2 + rng.below(40)));
            pending.insert(
                id,
                Pending {
                    kind,
                    sent: now,
                    cancel_at,
                },
            );
            sent += 1;
            if sent % 1000 == 0 {
                // The trend tells a leak (steady growth) from allocator warm-up (a plateau).
                println!(
                    "  {sent} sent, {:.0} s: RSS {:.1} MiB, {} fds",
                    started.elapsed().as_secs_f64(),
                    status_kib(pid, "VmRSS:") as f64 / 1024.0,
                    fd_count(pid)
                );
            }
            continue;
        }

        let now = Instant::now();
        let due: Vec<Value> = pending
            .iter()
            .filter(|(_, p)| p.cancel_at.is_some_and(|t| t <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            client
                .notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "soak"})),
                )
                .unwrap();
            pending.remove(&id);
            cancelled.insert(id);
        }
        let next_cancel = pending.values().filter_map(|p| p.cancel_at).min();
        let deadline = next_cancel.unwrap_or(now + Duration::from_millis(200));
        if let Some(m) = client.wait_for(deadline, is_response) {
            let id = m["id"].clone();
            if cancelled.contains(&id) {
                failures.push(format!("a response to cancelled call {id}: {m}"));
            } else if let Some(p) = pending.remove(&id) {
                let kind = if m["result"]["isError"] == json!(true) {
                    m["result"]["structuredContent"]["errorKind"]
                        .as_str()
                        .unwrap_or("?")
                        .to_owned()
                } else if m.get("error").is_some() {
                    format!("jsonrpc {}", m["error"]["code"])
                } else {
                    "success".to_owned()
                };
                if p.kind.cancelled() {
                    failures.push(format!("{:?} call {id} ended by itself: {kind}", p.kind));
                } else if kind != p.kind.expected(warm) {
                    failures.push(format!(
                        "{:?} call {id} ended {kind}, not {}: {m}",
                        p.kind,
                        p.kind.expected(warm)
                    ));
                }
                let key = format!("{:?} → {kind}", p.kind);
                if kind != "success" {
                    let text = m["result"]["structuredContent"]["error"].as_str();
                    first_error
                        .entry(key.clone())
                        .or_insert_with(|| text.unwrap_or_default().chars().take(200).collect());
                }
                *answered_kinds.entry(key).or_default() += 1;
            }
        }
        if let Some((id, p)) = pending
            .iter()
            .find(|(_, p)| p.cancel_at.is_none() && p.sent.elapsed() > ANSWER_TIMEOUT)
        {
            failures.push(format!(
                "{:?} call {id} unanswered after {ANSWER_TIMEOUT:?}",
                p.kind
            ));
            break;
        }
        if client.stdout_ended() {
            failures.push("the server closed stdout".into());
            break;
        }
    }
    let elapsed = started.elapsed();
    client.listen_until(Instant::now() + QUIET);
    for m in client
        .received
        .iter()
        .filter(|r| !r.consumed)
        .map(|r| &r.message)
    {
        if is_response(m) && cancelled.contains(&m["id"]) {
            failures.push(format!("a late response to cancelled call {}", m["id"]));
        }
    }

    settle(&mut client, warm);
    let (fd_before, rss_before) = baseline.unwrap_or((0, 0));
    let (fd_after, rss_after) = (fd_count(pid), status_kib(pid, "VmRSS:"));
    let hwm = status_kib(pid, "VmHWM:");
    let fake_log = FakeLog::read(&log);
    let pids = fake_log.pids();
    let alive: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|&p| alive_fake(p, &log))
        .collect();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();

    println!("\ncalls drawn (kind: count): {drawn:?}");
    println!("answers (drawn kind → result: count):");
    for (k, n) in &answered_kinds {
        match first_error.get(k) {
            Some(text) => println!("  {k}: {n} (the first: {text})"),
            None => println!("  {k}: {n}"),
        }
    }
    println!("cancelled: {}", cancelled.len());
    println!(
        "wall time: {:.1} s ({:.1} ms per call)",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / calls as f64
    );
    println!("fds after warm-up: {fd_before}, at the end: {fd_after}");
    println!(
        "RSS after warm-up: {:.1} MiB, at the end: {:.1} MiB (growth {:+.2} MiB), VmHWM {:.1} MiB",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / 1024.0,
        hwm as f64 / 1024.0
    );
    println!(
        "fake-gemini pids logged: {}, alive: {}, server's children now: {:?}",
        pids.len(),
        alive.len(),
        children.trim()
    );
    println!(
        "fake-gemini fixture failures (exit 99): {}",
        fake_log.fixture_failures.len()
    );

    if baseline.is_some() && fd_after > fd_before {
        failures.push(format!("{} file descriptors leaked", fd_after - fd_before));
    }
    if baseline.is_some() && rss_after > rss_before + MAX_RSS_GROWTH_KIB {
        failures.push(format!("RSS grew by {} KiB", rss_after - rss_before));
    }
    // The warm backend keeps one agent, the server's child; the one-shot backend keeps nothing.
    let agents = usize::from(warm);
    if alive.len() > agents {
        failures.push(format!("fake-gemini processes alive: {alive:?}"));
    }
    let strays: Vec<String> = children
        .split_whitespace()
        .filter_map(|c| c.parse::<u32>().ok())
        .filter(|c| !alive.contains(c))
        .map(command_line)
        .filter(|line| !line.contains("--internal-watchdog"))
        .collect();
    if !strays.is_empty() {
        failures.push(format!(
            "the server has children besides its agent and watchdog: {strays:?}"
        ));
    }
    if !fake_log.fixture_failures.is_empty() {
        failures.push(format!("fixture failures: {:?}", fake_log.fixture_failures));
    }
    let answered: usize = answered_kinds.values().sum();
    if answered + cancelled.len() != calls {
        failures.push(format!(
            "{calls} calls: {answered} answered + {} cancelled",
            cancelled.len()
        ));
    }
    client.close_stdin();
    let exit = client.wait_exit(Instant::now() + Duration::from_secs(30));
    println!("server exit after stdin closed: {exit:?}");
    let outlived = outliving(&pids, &log);
    println!(
        "fake-gemini alive once the server exited: {}",
        outlived.len()
    );
    if !outlived.is_empty() {
        failures.push(format!(
            "fake-gemini processes outlived the server: {outlived:?}"
        ));
    }
    if !exit.is_some_and(|s| s.success()) {
        failures.push(format!("server exit: {exit:?}"));
    }
    let stderr = client.stderr();
    if !stderr.trim().is_empty() {
        println!("server stderr (last 2000 bytes):\n{}", tail(&stderr, 2000));
    }

    if failures.is_empty() {
        println!("\nsoak: PASS");
    } else {
        println!("\nsoak: FAIL");
        for f in failures.iter().take(20) {
            println!("  - {f}");
        }
        std::process::exit(1);
    }
}

/// The server idle, as at the warm-up's end and at the end alike: cancelled trees reaped, and on
/// the warm backend an agent running (a crash leaves none until the next call) with its spare
/// sessions made, so the descriptors and memory of the two points compare.
fn settle(client: &mut Client, warm: bool) {
    if warm {
        let id = client
            .request(
                "tools/call",
                Some(json!({"name": "gemini_prompt", "arguments": {"prompt": "settle [[fake-gemini:success]]"}})),
            )
            .unwrap();
        client
            .response(&id, Instant::now() + ANSWER_TIMEOUT)
            .expect("the settling call answered");
    }
    std::thread::sleep(Duration::from_millis(300));
}

/// The command line of process `pid`, its arguments joined by spaces.
fn command_line(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let line = String::from_utf8_lossy(&raw).replace('\0', " ");
    format!("{pid} {}", line.trim())
}

/// This run's fakes still alive a few seconds after the server exited (it stops its agent as
/// it goes).
fn outliving(pids: &[u32], log: &Path) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|&p| alive_fake(p, log))
            .collect();
        if alive.is_empty() || Instant::now() >= until {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}
