//! The agent's stdout as the real agent's is: one chain of writes, in the order they were asked
//! for (the ACP SDK sends every message through one promise chain), where a write that does not
//! fit in the pipe at once — Node finishes it on a later turn of its event loop — lets what was
//! asked for meanwhile go before the writer's next line. A history replay (`streamHistory`,
//! awaiting each update) keeps its place only while its lines fit: once the client reads slower
//! than the agent writes, an answer to a request read in between comes before the rest of it.

use std::sync::{Condvar, Mutex};

use crate::sys::out;

/// The write chain: tickets served in order.
pub(crate) struct Writer {
    /// (next ticket to hand out, ticket being served)
    state: Mutex<(u64, u64)>,
    turn: Condvar,
}

impl Writer {
    pub(crate) fn new() -> Writer {
        Writer {
            state: Mutex::new((0, 0)),
            turn: Condvar::new(),
        }
    }

    /// A place in the chain, behind every write asked for before.
    pub(crate) fn ticket(&self) -> u64 {
        let mut s = self.state.lock().expect("lock");
        s.0 += 1;
        s.0 - 1
    }

    /// Waits until `ticket` is served.
    pub(crate) fn wait(&self, ticket: u64) {
        let s = self.state.lock().expect("lock");
        let _s = self.turn.wait_while(s, |s| s.1 != ticket).expect("lock");
    }

    /// Ends the turn being served.
    pub(crate) fn release(&self) {
        self.state.lock().expect("lock").1 += 1;
        self.turn.notify_all();
    }

    /// Writes `line` in the turn being served; whether it fitted in the pipe at once (a line that
    /// does not waits for the client to read, as the real agent's waits for `drain`).
    pub(crate) fn write(&self, line: &[u8]) -> bool {
        let fits = room().is_none_or(|room| line.len() <= room);
        out(line);
        fits
    }
}

/// The free bytes in stdout's pipe; `None` when stdout is no pipe (or the system cannot say).
#[cfg(target_os = "linux")]
fn room() -> Option<usize> {
    let mut unread: libc::c_int = 0;
    // SAFETY: fcntl and ioctl on fd 1 with a valid out pointer; failures return -1.
    let (size, ok) = unsafe {
        (
            libc::fcntl(1, libc::F_GETPIPE_SZ),
            libc::ioctl(1, libc::FIONREAD, &mut unread),
        )
    };
    (size > 0 && ok == 0).then(|| (size as usize).saturating_sub(unread.max(0) as usize))
}

#[cfg(not(target_os = "linux"))]
fn room() -> Option<usize> {
    None
}
