//! Capped capture of one pipe: stdout keeps its head, stderr its tail; both forward the lines of
//! what they keep (tagged with their stream), count every byte, stamp an optional [`Activity`]
//! per read, and keep reading past the cap so the writer never blocks.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::status::Stream;

/// Bytes asked for per read: the default pipe buffer on Linux, so one read usually empties it.
const READ_CHUNK: usize = 64 * 1024;
/// Longest stderr line forwarded; the rest of a longer line is dropped. stderr lines only feed
/// progress (the CLI's `Attempt N failed …` blocks), and a stack or a flood must not be held twice.
pub(crate) const MAX_STDERR_LINE: usize = 4096;

/// What is handed every line as it completes, with the stream it came from: a view of the kept
/// bytes, not a copy, so a line as long as the cap is held once while it is looked at. Each
/// stream's reader calls it on its own task: it must be quick and must not block.
pub type LineFn = std::sync::Arc<dyn Fn(Stream, &[u8]) + Send + Sync>;

/// When either pipe of a run last delivered bytes, shared between the readers and whoever
/// watches the run. Cheap to update: one clock read and one relaxed store per read (a read takes
/// whatever the pipe holds, up to 64 KiB), never a lock.
#[derive(Debug, Clone)]
pub struct Activity {
    origin: Instant,
    /// Microseconds from `origin` to the last read, plus one; 0 = no byte yet.
    last: Arc<AtomicU64>,
}

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}

impl Activity {
    /// No byte seen yet.
    pub fn new() -> Self {
        Activity {
            origin: Instant::now(),
            last: Arc::default(),
        }
    }

    /// Records that bytes arrived now.
    pub fn touch(&self) {
        let micros = self.origin.elapsed().as_micros() as u64 + 1;
        self.last.store(micros, Ordering::Relaxed);
    }

    /// When bytes last arrived; `None` before the first.
    pub fn last(&self) -> Option<Instant> {
        match self.last.load(Ordering::Relaxed) {
            0 => None,
            n => Some(self.origin + Duration::from_micros(n - 1)),
        }
    }
}

/// Where the bytes of one stream go.
pub(crate) trait Sink {
    /// Takes one chunk; returns true when this chunk took the stream past its cap.
    fn push(&mut self, chunk: &[u8]) -> bool;
    /// Called once, at EOF or when the drain is abandoned.
    fn finish(&mut self);
}

/// The first `cap` bytes of stdout, with every line of them forwarded as it completes.
pub(crate) struct Head {
    kept: Vec<u8>,
    cap: usize,
    total: u64,
    /// Start of the line not yet forwarded, an index into `kept`: lines are sliced out of the
    /// kept bytes rather than buffered twice, so a flood costs one cap of memory, not two.
    line_start: usize,
    lines: Option<LineFn>,
}

impl Head {
    pub(crate) fn new(cap: usize, lines: Option<LineFn>) -> Self {
        Head {
            kept: Vec::new(),
            cap,
            total: 0,
            line_start: 0,
            lines,
        }
    }

    fn forward(&self, line: &[u8]) {
        if let Some(lines) = &self.lines {
            lines(Stream::Stdout, line);
        }
    }

    /// The kept bytes and the total seen.
    pub(crate) fn into_parts(self) -> (Vec<u8>, u64) {
        (self.kept, self.total)
    }
}

impl Sink for Head {
    fn push(&mut self, chunk: &[u8]) -> bool {
        let was_over = self.total > self.cap as u64;
        self.total += chunk.len() as u64;
        let room = self.cap - self.kept.len();
        let take = room.min(chunk.len());
        if take > 0 {
            let old_len = self.kept.len();
            reserve_up_to_cap(&mut self.kept, take, self.cap);
            self.kept.extend_from_slice(&chunk[..take]);
            let mut from = old_len;
            while let Some(pos) = self.kept[from..].iter().position(|&b| b == b'\n') {
                let end = from + pos;
                self.forward(&self.kept[self.line_start..end]);
                self.line_start = end + 1;
                from = end + 1;
            }
        }
        !was_over && self.total > self.cap as u64
    }

    fn finish(&mut self) {
        // The unterminated rest (a last line without `\n`, or a line cut at the cap) is
        // forwarded too, so the lines always add up to the kept bytes.
        if self.line_start < self.kept.len() {
            self.forward(&self.kept[self.line_start..]);
            self.line_start = self.kept.len();
        }
        self.lines = None;
    }
}

/// The last `cap` bytes of stderr: the CLI prints its real error at the end, after any noise.
/// Lines of the first `cap` bytes are forwarded (each cut at [`MAX_STDERR_LINE`]), so what waits
/// in the channel is bounded by the cap as on stdout.
pub(crate) struct Tail {
    kept: VecDeque<u8>,
    cap: usize,
    total: u64,
    /// The line being assembled for forwarding (at most `MAX_STDERR_LINE` bytes of it).
    line: Vec<u8>,
    lines: Option<LineFn>,
}

impl Tail {
    pub(crate) fn new(cap: usize, lines: Option<LineFn>) -> Self {
        Tail {
            kept: VecDeque::new(),
            cap,
            total: 0,
            line: Vec::new(),
            lines,
        }
    }

    fn forward_lines(&mut self, chunk: &[u8]) {
        let Some(tx) = &self.lines else { return };
        for piece in chunk.split_inclusive(|&b| b == b'\n') {
            let (body, ends) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            let room = MAX_STDERR_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&body[..room.min(body.len())]);
            if ends {
                tx(Stream::Stderr, &self.line);
                self.line.clear();
            }
        }
    }

    /// The kept bytes (oldest first) and the total seen.
    pub(crate) fn into_parts(self) -> (Vec<u8>, u64) {
        (Vec::from(self.kept), self.total)
    }
}

impl Sink for Tail {
    fn push(&mut self, chunk: &[u8]) -> bool {
        let was_over = self.total > self.cap as u64;
        let forwardable = (self.cap as u64).saturating_sub(self.total) as usize;
        if forwardable > 0 {
            self.forward_lines(&chunk[..forwardable.min(chunk.len())]);
        }
        self.total += chunk.len() as u64;
        let chunk = &chunk[chunk.len().saturating_sub(self.cap)..];
        let overflow = (self.kept.len() + chunk.len()).saturating_sub(self.cap);
        self.kept.drain(..overflow);
        let (len, capacity) = (self.kept.len(), self.kept.capacity());
        let want = grown_capacity(len, capacity, chunk.len(), self.cap);
        if want > capacity {
            self.kept.reserve_exact(want - len);
        }
        self.kept.extend(chunk);
        !was_over && self.total > self.cap as u64
    }

    fn finish(&mut self) {
        if let Some(lines) = self.lines.take() {
            if !self.line.is_empty() {
                lines(Stream::Stderr, &std::mem::take(&mut self.line));
            }
        }
    }
}

/// The capacity to grow to for `extra` more bytes: doubling as usual, but never past `cap`, so a
/// flood costs at most one cap of memory per stream instead of up to two (a doubling Vec
/// overshoots any cap that is not a power of two).
fn grown_capacity(len: usize, capacity: usize, extra: usize, cap: usize) -> usize {
    if len + extra <= capacity {
        return capacity;
    }
    (len + extra)
        .max(capacity.saturating_mul(2))
        .min(cap.max(len + extra))
}

fn reserve_up_to_cap(kept: &mut Vec<u8>, extra: usize, cap: usize) {
    let want = grown_capacity(kept.len(), kept.capacity(), extra, cap);
    if want > kept.capacity() {
        kept.reserve_exact(want - kept.len());
    }
}

/// Reads `reader` into `sink` until EOF, a read error, or `stop`; reports the first time the
/// stream goes past its cap on `tripped`, then keeps reading and discarding: a writer blocked on
/// a full pipe would otherwise never reach the signal that ends it. Every read that brings bytes
/// stamps `activity`, whether or not it completes a line.
pub(crate) async fn pump<R, S>(
    mut reader: R,
    mut sink: S,
    stream: Stream,
    tripped: mpsc::UnboundedSender<Stream>,
    stop: CancellationToken,
    activity: Option<Activity>,
) -> S
where
    R: AsyncRead + Unpin,
    S: Sink,
{
    // Read into spare capacity: no zeroing of the chunk on every run, and its pages are touched
    // only as far as output arrives.
    let mut buf = Vec::with_capacity(READ_CHUNK);
    loop {
        let read = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            read = reader.read_buf(&mut buf) => read,
        };
        match read {
            Ok(0) => break,
            Ok(_) => {
                if let Some(a) = &activity {
                    a.touch();
                }
                if sink.push(&buf) {
                    let _ = tripped.send(stream);
                }
                buf.clear();
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A broken pipe has nothing more to give; what was kept stays.
            Err(_) => break,
        }
    }
    sink.finish();
    sink
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines handed over since the last call, as the tests read them.
    type Lines = std::collections::VecDeque<(Stream, Vec<u8>)>;

    #[derive(Clone, Default)]
    struct Seen(std::sync::Arc<std::sync::Mutex<Lines>>);

    impl Seen {
        fn lines(&self) -> LineFn {
            let seen = self.0.clone();
            std::sync::Arc::new(move |stream, line| {
                seen.lock().unwrap().push_back((stream, line.to_vec()));
            })
        }
        fn try_recv(&self) -> Option<(Stream, Vec<u8>)> {
            self.0.lock().unwrap().pop_front()
        }
    }

    fn channel() -> (Seen, Seen) {
        let seen = Seen::default();
        (seen.clone(), seen)
    }

    fn drain_lines(rx: &mut Seen) -> Vec<String> {
        let mut out = Vec::new();
        while let Some((_, l)) = rx.try_recv() {
            out.push(String::from_utf8(l).unwrap());
        }
        out
    }

    #[test]
    fn tail_forwards_stderr_lines_tagged_and_bounded() {
        let (tx, mut rx) = channel();
        let mut tail = Tail::new(30, Some(tx.lines()));
        tail.push(b"Attempt 1 fa");
        tail.push(b"iled\nnext\n");
        assert_eq!(
            rx.try_recv().unwrap(),
            (Stream::Stderr, b"Attempt 1 failed".to_vec())
        );
        assert_eq!(rx.try_recv().unwrap(), (Stream::Stderr, b"next".to_vec()));
        // Past the cap nothing more is forwarded (the unfinished line within it still is).
        tail.push(b"abcdefgh\nzzz\n");
        tail.finish();
        assert_eq!(drain_lines(&mut rx), ["abcdefgh"]);

        let (tx, rx) = channel();
        let mut tail = Tail::new(1 << 20, Some(tx.lines()));
        tail.push(&vec![b'x'; MAX_STDERR_LINE + 10]);
        tail.push(b"\n");
        assert_eq!(rx.try_recv().unwrap().1.len(), MAX_STDERR_LINE);
    }

    #[test]
    fn head_forwards_lines_split_across_chunks() {
        let (tx, mut rx) = channel();
        let mut head = Head::new(100, Some(tx.lines()));
        assert!(!head.push(b"ab"));
        assert!(!head.push(b"c\nde\n\nf"));
        assert_eq!(drain_lines(&mut rx), ["abc", "de", ""]);
        head.finish();
        assert_eq!(drain_lines(&mut rx), ["f"]);
        assert_eq!(head.into_parts(), (b"abc\nde\n\nf".to_vec(), 9));
    }

    #[test]
    fn head_keeps_the_first_cap_bytes_and_trips_once() {
        let (tx, mut rx) = channel();
        let mut head = Head::new(5, Some(tx.lines()));
        assert!(!head.push(b"12\n45"));
        assert!(head.push(b"6\n78"));
        assert!(!head.push(b"more"));
        head.finish();
        assert_eq!(drain_lines(&mut rx), ["12", "45"]);
        assert_eq!(head.into_parts(), (b"12\n45".to_vec(), 13));
    }

    #[test]
    fn a_line_longer_than_the_cap_is_cut_at_the_cap() {
        let (tx, mut rx) = channel();
        let mut head = Head::new(4, Some(tx.lines()));
        assert!(head.push(b"abcdefgh\n"));
        head.finish();
        assert_eq!(drain_lines(&mut rx), ["abcd"]);
    }

    #[test]
    fn exactly_the_cap_does_not_trip() {
        let mut head = Head::new(3, None);
        assert!(!head.push(b"abc"));
        let mut tail = Tail::new(3, None);
        assert!(!tail.push(b"abc"));
        assert!(tail.push(b"d"));
    }

    #[test]
    fn tail_keeps_the_last_cap_bytes() {
        let mut tail = Tail::new(4, None);
        assert!(!tail.push(b"ab"));
        assert!(tail.push(b"cde"));
        assert!(!tail.push(b"f"));
        assert_eq!(tail.into_parts(), (b"cdef".to_vec(), 6));

        let mut tail = Tail::new(4, None);
        assert!(tail.push(b"0123456789"));
        assert_eq!(tail.into_parts(), (b"6789".to_vec(), 10));
    }

    #[test]
    fn buffers_never_grow_past_the_cap() {
        let cap = 3 * 64 * 1024 + 5;
        let mut head = Head::new(cap, None);
        let mut tail = Tail::new(cap, None);
        for _ in 0..10 {
            head.push(&[b'o'; 64 * 1024]);
            tail.push(&[b'e'; 64 * 1024]);
            assert!(head.kept.capacity() <= cap);
            assert!(tail.kept.capacity() <= cap);
        }
        assert_eq!(head.kept.len(), cap);
        assert_eq!(tail.kept.len(), cap);
    }

    #[tokio::test]
    async fn pump_stamps_activity_for_bytes_without_a_newline() {
        let activity = Activity::new();
        assert_eq!(activity.last(), None);
        let (trip_tx, _trip_rx) = mpsc::unbounded_channel();
        let (tx, rx) = channel();
        let before = Instant::now();
        pump(
            &b"half a line, no newline"[..],
            Head::new(1000, Some(tx.lines())),
            Stream::Stdout,
            trip_tx,
            CancellationToken::new(),
            Some(activity.clone()),
        )
        .await;
        let last = activity.last().expect("the read was stamped");
        assert!(
            last >= before - Duration::from_millis(1),
            "{last:?} {before:?}"
        );
        // The line itself only completes at EOF.
        assert_eq!(rx.try_recv().unwrap().1, b"half a line, no newline");
    }

    #[tokio::test]
    async fn pump_reads_to_eof_past_the_cap() {
        let data = vec![b'x'; 300 * 1024];
        let (trip_tx, mut trip_rx) = mpsc::unbounded_channel();
        let head = pump(
            &data[..],
            Head::new(1000, None),
            Stream::Stdout,
            trip_tx,
            CancellationToken::new(),
            None,
        )
        .await;
        assert_eq!(trip_rx.try_recv().ok(), Some(Stream::Stdout));
        assert!(trip_rx.try_recv().is_err());
        let (kept, total) = head.into_parts();
        assert_eq!(kept.len(), 1000);
        assert_eq!(total, data.len() as u64);
    }
}
