//! Failed accepts (mostly out of descriptors): logged on stderr at most once per
//! [`LOG_INTERVAL`] with a count of the failures in between, and a growing wait before the next
//! try, so a flood of connections costs neither the clients' logs nor a busy loop.

use std::time::{Duration, Instant};

/// The shortest time between two log lines about failed accepts.
pub(super) const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// The wait after a failure that follows a successful accept: short, since a connection closed
/// meanwhile (by a timeout, or to make room) frees a descriptor for the next try.
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(1);
/// The longest wait between two tries while accepts keep failing.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The state of failed accepts: when the last line was logged, how many failures it has not
/// reported, and the current wait.
#[derive(Debug)]
pub(super) struct AcceptErrors {
    last_line: Option<Instant>,
    suppressed: u64,
    backoff: Duration,
}

impl Default for AcceptErrors {
    fn default() -> Self {
        AcceptErrors {
            last_line: None,
            suppressed: 0,
            backoff: FIRST_BACKOFF,
        }
    }
}

impl AcceptErrors {
    /// Counts a failure at `now`. `Some(n)` when a line is due, `n` being the failures since the
    /// last line that were not logged; `None` while the interval since that line runs.
    pub(super) fn note(&mut self, now: Instant) -> Option<u64> {
        match self.last_line {
            Some(at) if now.saturating_duration_since(at) < LOG_INTERVAL => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last_line = Some(now);
                Some(std::mem::take(&mut self.suppressed))
            }
        }
    }

    /// The wait before the next try: doubles from [`FIRST_BACKOFF`] to [`MAX_BACKOFF`] while
    /// failures follow each other.
    pub(super) fn backoff(&mut self) -> Duration {
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        wait
    }

    /// An accept succeeded: the next failure waits the shortest time again.
    pub(super) fn succeeded(&mut self) {
        self.backoff = FIRST_BACKOFF;
    }
}

/// Whether an accept failed for want of descriptors (the process's or the system's), which
/// closing a connection can cure.
pub(super) fn out_of_descriptors(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_with_the_count_of_the_others() {
        let mut errors = AcceptErrors::default();
        let t0 = Instant::now();
        assert_eq!(errors.note(t0), Some(0), "the first failure is logged");
        for ms in [1, 500, 9_999] {
            assert_eq!(errors.note(t0 + Duration::from_millis(ms)), None);
        }
        assert_eq!(errors.note(t0 + LOG_INTERVAL), Some(3));
        assert_eq!(
            errors.note(t0 + LOG_INTERVAL + Duration::from_secs(1)),
            None
        );
        assert_eq!(errors.note(t0 + LOG_INTERVAL * 3), Some(1));
    }

    #[test]
    fn the_backoff_doubles_up_to_its_ceiling_and_resets_on_success() {
        let mut errors = AcceptErrors::default();
        let waits: Vec<Duration> = (0..14).map(|_| errors.backoff()).collect();
        assert_eq!(waits[0], FIRST_BACKOFF);
        assert_eq!(waits[1], FIRST_BACKOFF * 2);
        assert!(waits.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*waits.last().unwrap(), MAX_BACKOFF);
        errors.succeeded();
        assert_eq!(errors.backoff(), FIRST_BACKOFF);
    }

    #[cfg(unix)]
    #[test]
    fn emfile_and_enfile_are_a_want_of_descriptors() {
        for code in [libc::EMFILE, libc::ENFILE] {
            assert!(out_of_descriptors(&std::io::Error::from_raw_os_error(code)));
        }
        assert!(!out_of_descriptors(&std::io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
    }
}
