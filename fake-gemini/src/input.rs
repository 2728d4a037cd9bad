//! Reading stdin as the real CLI's `readStdin` does: only when it is not a TTY, waiting at most
//! the first-chunk window (500 ms) for the first bytes, then to EOF with no time limit, capped at
//! 8 MiB counted in UTF-8 bytes and cut on a character boundary, with the real warning (observed
//! on 0.61.0: 4.2 M `é` are cut to exactly 8,388,608 bytes; 3-byte `€` to 8,388,606).

use std::io::{IsTerminal, Read};
use std::sync::mpsc;
use std::time::Duration;

/// The cap of `readStdin`.
pub const MAX_STDIN: usize = 8 * 1024 * 1024;

/// What was read.
#[derive(Debug, Default)]
pub struct Stdin {
    /// The raw bytes consumed.
    pub bytes: Vec<u8>,
    /// The text the CLI works with (UTF-8 decoded lossily, truncated at the cap).
    pub text: String,
    /// The cap was hit (the warning was printed).
    pub truncated: bool,
}

/// Whether stdin is a terminal.
pub fn is_tty() -> bool {
    std::io::stdin().is_terminal()
}

/// Reads stdin under the first-chunk window `wait`. `late` = behave as if nothing arrived in time.
pub fn read(wait: Duration, late: bool) -> Stdin {
    if is_tty() || late {
        return Stdin::default();
    }
    let (tx, rx) = mpsc::channel::<Option<Vec<u8>>>();
    // A reader thread, so the window can expire while a read blocks; it is left behind
    // (blocked) when nothing arrives, which is what the real CLI does too.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(n) => {
                    if tx.send(Some(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
            }
        }
    });
    let first = match rx.recv_timeout(wait) {
        Ok(Some(chunk)) => chunk,
        _ => return Stdin::default(),
    };
    let mut bytes = first;
    // The CLI stops reading at the cap; a few bytes more than the cap are enough to know that the
    // decoded text goes over it (a partial character at the end is decoded lossily and cut).
    while bytes.len() <= MAX_STDIN + 4 {
        match rx.recv() {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    let mut truncated = false;
    if text.len() > MAX_STDIN {
        truncated = true;
        text.truncate(floor_char_boundary(&text, MAX_STDIN));
        crate::sys::err_line(&format!(
            "Warning: stdin input truncated to {MAX_STDIN} bytes."
        ));
    }
    Stdin {
        bytes,
        text,
        truncated,
    }
}

/// The largest index `<= max` that is a character boundary of `s` (`truncateUtf8Bytes`).
pub fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_utf8_bytes_on_character_boundaries() {
        assert_eq!(floor_char_boundary("aé😀b", 3), 3);
        assert_eq!(floor_char_boundary("aé😀b", 4), 3);
        assert_eq!(floor_char_boundary("aé😀b", 7), 7);
        assert_eq!(floor_char_boundary("abc", 8), 3);
        assert_eq!(floor_char_boundary("€€", 4), 3);
    }
}
