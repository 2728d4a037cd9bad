//! The process's open-file limit (`RLIMIT_NOFILE`): raised from the soft to the hard limit at
//! start, since every HTTP connection and every run's pipes take a descriptor and many systems
//! start processes at a soft limit of 256 or 1024; and the share of it the HTTP transport may
//! spend on connections.

/// Descriptors kept for what is not a connection: the server's own files, the listener, and the
/// pipes of runs and ACP agents (three per process, more while one starts).
pub const RESERVED_FDS: u64 = 128;
/// The most connections the HTTP transport admits when not told otherwise, however high the limit.
pub const MAX_DERIVED_CONNECTIONS: usize = 1024;

/// The soft limit to ask for: the hard limit, clamped to `os_max` where the system refuses more
/// than it (macOS: `kern.maxfilesperproc`, as its `setrlimit` fails for `RLIM_INFINITY`), never
/// below the current soft limit.
pub fn raised_soft(soft: u64, hard: u64, os_max: Option<u64>) -> u64 {
    let target = os_max.map_or(hard, |max| hard.min(max));
    target.max(soft)
}

/// The connection cap derived from the soft limit (`None`: unlimited or unknown): the limit minus
/// [`RESERVED_FDS`], or half the limit when that would leave the connections less than the
/// reserve, at most [`MAX_DERIVED_CONNECTIONS`] and at least one.
pub fn connection_cap(soft: Option<u64>) -> usize {
    let Some(soft) = soft else {
        return MAX_DERIVED_CONNECTIONS;
    };
    let room = if soft >= 2 * RESERVED_FDS {
        soft - RESERVED_FDS
    } else {
        soft / 2
    };
    usize::try_from(room)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_DERIVED_CONNECTIONS)
}

/// The soft and hard limits now (`None` for either: unlimited), or `None` where there is no such
/// limit or it cannot be read.
#[cfg(unix)]
pub fn current() -> Option<(Option<u64>, Option<u64>)> {
    let (soft, hard) = get()?;
    let finite = |v: u64| (v != to_u64(libc::RLIM_INFINITY)).then_some(v);
    Some((finite(soft), finite(hard)))
}

/// The soft and hard limits now: none on this system.
#[cfg(not(unix))]
pub fn current() -> Option<(Option<u64>, Option<u64>)> {
    None
}

/// The soft limit now; `None` when unlimited or unknown.
pub fn soft() -> Option<u64> {
    current().and_then(|(soft, _)| soft)
}

/// Raises the soft limit to the hard one (see [`raised_soft`]) and logs the limit at debug; a
/// refusal is logged too and changes nothing.
#[cfg(unix)]
pub fn raise() {
    let Some((before, hard)) = get() else {
        tracing::debug!("the open-file limit cannot be read");
        return;
    };
    let target = raised_soft(before, hard, os_max());
    if target > before {
        let limit = libc::rlimit {
            rlim_cur: to_rlim(target),
            rlim_max: to_rlim(hard),
        };
        // SAFETY: setrlimit reads the struct it is given, nothing else.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            let error = std::io::Error::last_os_error();
            tracing::debug!(before, hard, target, %error, "the open-file limit could not be raised");
            return;
        }
    }
    let (soft, hard) = current().unwrap_or_default();
    tracing::debug!(before, ?soft, ?hard, "open-file limit (RLIMIT_NOFILE)");
}

/// Raises the soft limit: nothing to do on this system.
#[cfg(not(unix))]
pub fn raise() {}

/// The raw soft and hard limits (`RLIM_INFINITY` as it is).
#[cfg(unix)]
fn get() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    Some((to_u64(limit.rlim_cur), to_u64(limit.rlim_max)))
}

#[cfg(unix)]
#[allow(
    clippy::unnecessary_cast,
    reason = "rlim_t is u64 on Linux and macOS, i64 on FreeBSD"
)]
fn to_u64(value: libc::rlim_t) -> u64 {
    value as u64
}

#[cfg(unix)]
#[allow(
    clippy::unnecessary_cast,
    reason = "rlim_t is u64 on Linux and macOS, i64 on FreeBSD"
)]
fn to_rlim(value: u64) -> libc::rlim_t {
    value as libc::rlim_t
}

/// The most descriptors the system lets one process have where `setrlimit` refuses more than
/// that, `None` where the hard limit itself is the bound (Linux and the BSDs).
#[cfg(all(unix, not(target_os = "macos")))]
fn os_max() -> Option<u64> {
    None
}

/// macOS: `kern.maxfilesperproc`, or `OPEN_MAX` (10240, `<sys/syslimits.h>`) when the sysctl
/// cannot be read; `setrlimit` fails with `RLIM_INFINITY` and above these.
#[cfg(target_os = "macos")]
fn os_max() -> Option<u64> {
    const OPEN_MAX: u64 = 10_240;
    let mut value: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>();
    // SAFETY: the name is NUL-terminated; the output buffer and its size match.
    let ok = unsafe {
        libc::sysctlbyname(
            c"kern.maxfilesperproc".as_ptr(),
            (&mut value as *mut libc::c_int).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    } == 0;
    Some(match u64::try_from(value) {
        Ok(v) if ok && v > 0 => v,
        _ => OPEN_MAX,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_rises_to_the_hard_one() {
        assert_eq!(raised_soft(256, 4096, None), 4096);
        assert_eq!(raised_soft(1024, 1024, None), 1024);
    }

    #[test]
    fn where_the_system_has_its_own_bound_the_soft_limit_stops_there() {
        // macOS: the hard limit is often RLIM_INFINITY, which setrlimit refuses.
        assert_eq!(raised_soft(256, u64::MAX, Some(10_240)), 10_240);
        assert_eq!(raised_soft(256, 4096, Some(10_240)), 4096);
        assert_eq!(
            raised_soft(20_000, u64::MAX, Some(10_240)),
            20_000,
            "never lowered"
        );
    }

    #[test]
    fn the_connection_cap_leaves_the_reserve_and_stays_within_bounds() {
        assert_eq!(connection_cap(Some(512)), 384);
        assert_eq!(connection_cap(Some(256)), 128);
        assert_eq!(connection_cap(Some(1024)), 896);
        assert_eq!(connection_cap(Some(20_000)), MAX_DERIVED_CONNECTIONS);
        assert_eq!(connection_cap(None), MAX_DERIVED_CONNECTIONS);
        assert_eq!(connection_cap(Some(100)), 50, "a tiny limit is shared");
        assert_eq!(connection_cap(Some(1)), 1);
    }

    #[cfg(unix)]
    #[test]
    fn the_current_limit_can_be_read() {
        let (soft, hard) = current().expect("getrlimit");
        if let (Some(soft), Some(hard)) = (soft, hard) {
            assert!(soft <= hard);
        }
    }
}
