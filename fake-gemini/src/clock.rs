//! Wall-clock time as the emulated CLI sees it: ISO-8601 timestamps for events and session files,
//! and the injectable clock (`FAKE_GEMINI_NOW`) that lets tests move sessions across minutes.

use std::time::{SystemTime, UNIX_EPOCH};

/// The clock set by a prompt marker's `now=` parameter for this run (`i64::MIN`: unset).
static NOW_OVERRIDE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// Sets this run's clock (a marker's `now=`): it wins over `FAKE_GEMINI_NOW`, so one server
/// process can make each call happen in another minute.
pub fn set_now(ms: i64) {
    NOW_OVERRIDE.store(ms, std::sync::atomic::Ordering::Relaxed);
}

/// Milliseconds since the Unix epoch: a marker's `now=`, else `FAKE_GEMINI_NOW` (ISO-8601 or
/// epoch ms) when set, else the system clock.
pub fn now_ms() -> i64 {
    let set = NOW_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed);
    if set != i64::MIN {
        return set;
    }
    if let Ok(v) = std::env::var("FAKE_GEMINI_NOW") {
        if let Some(ms) = parse_time(&v) {
            return ms;
        }
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The last stamp [`call_stamp_ms`] gave out.
static LAST_CALL_STAMP: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// The millisecond part of a tool-call id (`<name>__<name>_<ms>_<n>`, the real CLI's
/// `Date.now()` when a turn's calls arrive): [`now_ms`], but never the same twice in one process,
/// so two turns within a millisecond (or under a frozen clock) get distinct ids — the real CLI's
/// turns are milliseconds apart, a wrapper may key tool calls by id.
pub fn call_stamp_ms() -> i64 {
    let now = now_ms();
    let prev = LAST_CALL_STAMP
        .fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |last| Some(now.max(last.saturating_add(1))),
        )
        .unwrap_or(now);
    now.max(prev.saturating_add(1))
}

/// `2026-11-29T23:08:11.015Z`
pub fn iso(ms: i64) -> String {
    let (y, mo, d, h, mi, s, milli) = parts(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

/// The current time as `iso`.
pub fn iso_now() -> String {
    iso(now_ms())
}

/// `2026-11-29T23-08` — the minute stamp of session file names.
pub fn minute_stamp(ms: i64) -> String {
    let (y, mo, d, h, mi, ..) = parts(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}")
}

/// `2026-11-29T23-09-14-774Z` — the stamp of error report file names.
pub fn report_stamp(ms: i64) -> String {
    let (y, mo, d, h, mi, s, milli) = parts(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}-{milli:03}Z")
}

fn parts(ms: i64) -> (i64, u32, u32, u32, u32, u32, u32) {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000) as u32;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    (y, m, d, sod / 3600, sod % 3600 / 60, sod % 60, milli)
}

// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses epoch milliseconds or `YYYY-MM-DDTHH:MM[:SS[.mmm]][Z]` (UTC).
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    let s = s.trim_end_matches('Z');
    let (date, time) = s.split_once('T')?;
    let mut dp = date.split('-');
    let y: i64 = dp.next()?.parse().ok()?;
    let mo: u32 = dp.next()?.parse().ok()?;
    let d: u32 = dp.next()?.parse().ok()?;
    let mut tp = time.split(':');
    let h: i64 = tp.next()?.parse().ok()?;
    let mi: i64 = tp.next()?.parse().ok()?;
    let (sec, milli) = match tp.next() {
        Some(sec) => match sec.split_once('.') {
            Some((a, b)) => (
                a.parse::<i64>().ok()?,
                format!("{b:0<3}")[..3].parse::<i64>().ok()?,
            ),
            None => (sec.parse::<i64>().ok()?, 0),
        },
        None => (0, 0),
    };
    Some(((days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec) * 1000) + milli)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_stamps_never_repeat_even_under_a_frozen_clock() {
        set_now(1_700_000_000_000);
        let stamps: Vec<i64> = (0..1000).map(|_| call_stamp_ms()).collect();
        assert_eq!(stamps[0], 1_700_000_000_000);
        assert!(stamps.windows(2).all(|w| w[1] > w[0]), "{stamps:?}");
    }

    #[test]
    fn iso_round_trips() {
        let ms = parse_time("2026-11-29T23:08:11.015Z").unwrap();
        assert_eq!(iso(ms), "2026-11-29T23:08:11.015Z");
        assert_eq!(minute_stamp(ms), "2026-11-29T23-08");
        assert_eq!(report_stamp(ms), "2026-11-29T23-08-11-015Z");
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
    }
}
