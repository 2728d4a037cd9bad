//! Reading stdin as the real CLI's `readStdin` does: only when it is not a TTY, waiting at most
//! the first-chunk window (500 ms) for the first bytes, then to EOF with no time limit, capped at
//! 8 MiB counted in UTF-16 code units (JavaScript string length), with the real warning.

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
    let mut units = 0usize;
    let mut counted = 0usize;
    let mut truncated = false;
    loop {
        // Count UTF-16 units of the complete UTF-8 prefix read so far.
        let valid_upto = match std::str::from_utf8(&bytes[counted..]) {
            Ok(_) => bytes.len(),
            Err(e) => counted + e.valid_up_to(),
        };
        units += utf16_len(&String::from_utf8_lossy(&bytes[counted..valid_upto]));
        counted = valid_upto;
        if units > MAX_STDIN {
            truncated = true;
            break;
        }
        match rx.recv() {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if truncated || utf16_len(&text) > MAX_STDIN {
        truncated = true;
        text = truncate_utf16(&text, MAX_STDIN);
        crate::output::err_line(&format!(
            "Warning: stdin input truncated to {MAX_STDIN} bytes."
        ));
    }
    Stdin {
        bytes,
        text,
        truncated,
    }
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Cuts `s` after `max` UTF-16 units; a surrogate pair split in half becomes U+FFFD, as a lone
/// surrogate does when Node encodes it.
pub fn truncate_utf16(s: &str, max: usize) -> String {
    let mut n = 0;
    let mut out = String::with_capacity(s.len().min(max * 3));
    for c in s.chars() {
        let l = c.len_utf16();
        if n + l > max {
            if n < max {
                out.push('\u{FFFD}');
            }
            break;
        }
        n += l;
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_utf16_units() {
        assert_eq!(truncate_utf16("aé😀b", 3), "aé\u{FFFD}");
        assert_eq!(truncate_utf16("aé😀b", 4), "aé😀");
        assert_eq!(truncate_utf16("abc", 8), "abc");
    }
}
