//! Unix: one watchdog process per server kills what the server's runs left when the server dies
//! without cleaning up (SIGKILL, an OOM kill, a crash). The parent-death signal reaches only a
//! run's direct child; its grandchildren — the real CLI's worker, its shell commands, its MCP
//! servers — would live on, in the run's process group or in sessions of their own.
//!
//! The server starts the watchdog once ([`start`], off the critical path): its own executable again, with [`ARG`], in a
//! process group of its own (a signal to the server's group does not reach it) and deaf to
//! SIGINT, SIGTERM, SIGHUP and SIGPIPE. Its stdin is a pipe whose only writer is the server; the
//! server writes `+PGID` when a run's tree starts and `-PGID` when it is gone ([`live`],
//! [`ended`]): one write of a few bytes per run, no per-run process. When the server exits, in
//! any way, the kernel closes the pipe, and the watchdog (in [`main`]) kills every group still
//! live and, on Linux, every process that carries the server's run marker in its environment
//! (`GEMINICLI_MCP_RUN=<server pid>:…`, which the sweep uses too) with the groups and sessions
//! those lead; then it removes the runs' private temporary directories and exits. A clean exit of the server closes the pipe as well, with nothing
//! left to kill.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The first argument that makes the executable a watchdog instead of a server.
pub(super) const ARG: &str = "--internal-watchdog";

/// `GEMINICLI_MCP_WATCHDOG=0` leaves the watchdog out (for a system where the server cannot run
/// its own executable again).
pub(super) const ENV: &str = crate::config::settings::WATCHDOG.name;

/// How long the watchdog keeps sweeping after the server died: SIGKILLed processes die within
/// milliseconds, and each death can reparent more of them.
const SWEEP_FOR: Duration = Duration::from_secs(2);

/// Pause between the watchdog's sweeps.
const SWEEP_POLL: Duration = Duration::from_millis(20);

/// How long a clean exit waits for the watchdog to see the pipe close and leave.
const STOP_WAIT: Duration = Duration::from_millis(500);

/// The server's side: the watchdog and the pipe to it.
struct Watchdog {
    child: Child,
    pipe: Option<ChildStdin>,
    /// Set once a write failed: the watchdog is gone, said once in the log.
    lost: bool,
}

/// The watchdog once started, and what the runs said before it was.
#[derive(Default)]
struct State {
    watchdog: Option<Watchdog>,
    /// Lines written before the watchdog was up (it starts off the critical path).
    pending: Vec<String>,
    /// Whether a watchdog is wanted at all (`start` was called and not turned off).
    wanted: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    watchdog: None,
    pending: Vec::new(),
    wanted: false,
});

fn state() -> std::sync::MutexGuard<'static, State> {
    crate::sync::lock(&STATE)
}

/// Starts the watchdog, once per server, on a thread of its own (an exec of this executable takes
/// milliseconds the `initialize` answer need not wait for); runs that start before it is up are
/// handed to it when it is. A no-op when `GEMINICLI_MCP_WATCHDOG` is `0`, `false`, `no` or `off`.
pub(super) fn start() -> std::io::Result<()> {
    if std::env::var(ENV).is_ok_and(|v| crate::config::parse::parse_off(&v)) {
        return Ok(());
    }
    {
        let mut s = state();
        if s.wanted {
            return Ok(());
        }
        s.wanted = true;
    }
    let exe = std::env::current_exe()?;
    std::thread::Builder::new()
        .name("watchdog-start".into())
        .spawn(move || {
            let started = spawn(&exe);
            let mut s = state();
            match started {
                Ok(mut watchdog) => {
                    let pending = std::mem::take(&mut s.pending);
                    for line in pending {
                        write(&mut watchdog, &line);
                    }
                    s.watchdog = Some(watchdog);
                }
                Err(e) => {
                    s.wanted = false;
                    s.pending.clear();
                    tracing::warn!(error = %e, "could not start the process watchdog: a server killed outright may leave processes behind");
                }
            }
        })?;
    Ok(())
}

fn spawn(exe: &std::path::Path) -> std::io::Result<Watchdog> {
    let mut command = Command::new(exe);
    command
        .arg(ARG)
        .arg(std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn()?;
    let pipe = child.stdin.take();
    if let Some(pipe) = &pipe {
        set_nonblocking(pipe)?;
    }
    Ok(Watchdog {
        child,
        pipe,
        lost: false,
    })
}

/// A full pipe must not stall a run: the write end does not block, and a line that does not fit
/// is dropped (the watchdog then misses that group; the marker sweep still finds its processes on
/// Linux).
fn set_nonblocking(pipe: &ChildStdin) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn tell(line: String) {
    let mut s = state();
    if !s.wanted {
        return;
    }
    match s.watchdog.as_mut() {
        Some(watchdog) => write(watchdog, &line),
        None => s.pending.push(line),
    }
}

fn write(w: &mut Watchdog, line: &str) {
    let Some(pipe) = w.pipe.as_mut() else {
        return;
    };
    if let Err(e) = pipe.write_all(line.as_bytes()) {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            return;
        }
        if !w.lost {
            w.lost = true;
            // Reaped here: the sweep leaves a dead child that leads its own group alone.
            let _ = w.child.try_wait();
            tracing::warn!(error = %e, "the process watchdog is gone: a server killed outright may now leave processes behind");
        }
    }
}

/// A run's process group started.
pub(crate) fn live(pgid: u32) {
    tell(format!("+{pgid}\n"));
}

/// A run's process group is gone.
pub(crate) fn ended(pgid: u32) {
    tell(format!("-{pgid}\n"));
}

/// At the server's clean exit: closes the pipe and waits briefly for the watchdog to leave, so it
/// does not outlive the server.
pub(super) fn stop() {
    let mut s = state();
    s.wanted = false;
    let Some(w) = s.watchdog.as_mut() else {
        return;
    };
    w.pipe = None;
    let deadline = Instant::now() + STOP_WAIT;
    while Instant::now() < deadline {
        if !matches!(w.child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What the watchdog holds: the groups the server said are live.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Groups(HashSet<i32>);

impl Groups {
    /// Applies one line from the server; anything else is ignored.
    pub(crate) fn apply(&mut self, line: &str) {
        let (sign, pgid) = line.trim_end().split_at_checked(1).unwrap_or(("", ""));
        let Ok(pgid) = pgid.parse::<i32>() else {
            return;
        };
        // 0 and 1 are not run groups: killpg on them would hit this group or everything.
        if pgid <= 1 {
            return;
        }
        match sign {
            "+" => {
                self.0.insert(pgid);
            }
            "-" => {
                self.0.remove(&pgid);
            }
            _ => {}
        }
    }
}

/// The watchdog process: reads the server's lines until the pipe closes, then kills what is left.
/// `args` are the arguments after [`ARG`] (the server's pid). Returns the exit code.
pub(super) fn main(args: &[String]) -> i32 {
    let Some(server) = args.first().and_then(|p| p.parse::<i32>().ok()) else {
        eprintln!("{ARG} needs the server's pid");
        return 2;
    };
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
        // SAFETY: setting a signal's disposition to ignore, before any thread exists.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
    let mut groups = Groups::default();
    let stdin = std::io::stdin();
    let mut line = String::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => groups.apply(&line),
        }
    }
    let killed = kill_what_is_left(&groups, server);
    if killed > 0 {
        eprintln!(
            "geminicli-mcp watchdog: the server (pid {server}) ended with runs in flight; killed {killed} of their processes"
        );
    }
    // The runs' private temporary directories, once nothing of theirs is left to write in them
    // (the temporary directory is the server's: the watchdog inherited its environment).
    if let Ok(pid) = u32::try_from(server) {
        super::tmp::remove_left_by(pid, &std::env::temp_dir());
    }
    0
}

/// Kills the live groups, then sweeps for the server's marked processes until none is left or
/// [`SWEEP_FOR`] has passed. Returns how many groups and processes were signalled.
fn kill_what_is_left(groups: &Groups, server: i32) -> usize {
    let mut killed = 0;
    for &pgid in &groups.0 {
        // SAFETY: plain signal to a process group the server said a run leads.
        if unsafe { libc::killpg(pgid, libc::SIGKILL) } == 0 {
            killed += 1;
        }
    }
    #[cfg(target_os = "linux")]
    {
        killed += marked::sweep(server, SWEEP_FOR, SWEEP_POLL);
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (server, SWEEP_FOR, SWEEP_POLL);
    }
    killed
}

/// Linux: the processes that carry the server's run marker, found through `/proc`.
#[cfg(target_os = "linux")]
mod marked {
    use std::collections::HashSet;
    use std::time::{Duration, Instant};

    use super::super::sweep::{parse_stat, MARKER_VAR};

    /// Whether an environment block (`/proc/PID/environ`) holds a marker of `server`'s runs.
    pub(crate) fn carries_marker(environ: &[u8], server: i32) -> bool {
        let prefix = format!("{MARKER_VAR}={server}:");
        environ
            .split(|&b| b == 0)
            .any(|var| var.starts_with(prefix.as_bytes()))
    }

    /// Kills every live process with `server`'s marker, and the groups and sessions they lead,
    /// scanning again while any was found. Returns how many processes were signalled.
    pub(crate) fn sweep(server: i32, within: Duration, poll: Duration) -> usize {
        let deadline = Instant::now() + within;
        let mut signalled = HashSet::new();
        let mut leaders = HashSet::new();
        loop {
            let mut found = false;
            for pid in pids() {
                let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    continue;
                };
                let Some(stat) = parse_stat(&text) else {
                    continue;
                };
                let in_led = leaders.contains(&stat.pgrp) || leaders.contains(&stat.session);
                let marked = stat.state != b'Z'
                    && std::fs::read(format!("/proc/{pid}/environ"))
                        .is_ok_and(|env| carries_marker(&env, server));
                if stat.state == b'Z' || !(marked || in_led) {
                    continue;
                }
                found = true;
                if stat.pgrp == pid || stat.session == pid {
                    leaders.insert(pid);
                    // SAFETY: plain signal to a group a marked process leads.
                    unsafe { libc::killpg(pid, libc::SIGKILL) };
                }
                // SAFETY: plain signal to a process of the server's runs.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                signalled.insert(pid);
            }
            if !found || Instant::now() >= deadline {
                return signalled.len();
            }
            std::thread::sleep(poll);
        }
    }

    fn pids() -> Vec<i32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_marker_of_this_server_only() {
            let env = b"PATH=/bin\0GEMINICLI_MCP_RUN=41:7\0HOME=/h\0";
            assert!(carries_marker(env, 41));
            assert!(!carries_marker(env, 4), "41 is not 4");
            assert!(!carries_marker(b"XGEMINICLI_MCP_RUN=41:7\0", 41));
            assert!(!carries_marker(b"", 41));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_follow_the_servers_lines() {
        let mut g = Groups::default();
        for line in ["+100\n", "+200\n", "-100\n", "+300", "-999\n"] {
            g.apply(line);
        }
        assert_eq!(g, Groups(HashSet::from([200, 300])));
    }

    #[test]
    fn lines_that_could_hit_other_groups_are_ignored() {
        let mut g = Groups::default();
        for line in [
            "+0\n",
            "+1\n",
            "+-5\n",
            "+x\n",
            "*7\n",
            "\n",
            "+\n",
            "+2147483648\n",
        ] {
            g.apply(line);
        }
        assert_eq!(g, Groups::default());
    }
}
