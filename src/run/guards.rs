//! Guards a call holds while it runs: its count among the calls in progress, and a task that
//! must not outlive it.

use tokio::sync::watch;

/// Counts calls in progress while alive.
pub(super) struct ActiveGuard(watch::Sender<usize>);

impl ActiveGuard {
    pub(super) fn new(active: &watch::Sender<usize>) -> Self {
        active.send_modify(|n| *n += 1);
        ActiveGuard(active.clone())
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// Aborts a task when dropped.
pub(super) struct AbortOnDrop<T>(pub(super) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
