//! The lenient readings of environment values every setting shares: a typo in a client's `env`
//! block means the default, never a server that does not start.

/// A comma-separated list, trimmed, empty items dropped.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A positive base-10 integer: ASCII digits only (no sign, no spaces, no `0x`), above zero.
pub fn parse_positive(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<u64>().ok().filter(|v| *v > 0)
}

/// `0`, `false`, `no` or `off`, in any case: a switch that is on by default, turned off.
pub fn parse_off(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "0" | "false" | "no" | "off"
    )
}

/// The reference's truthy spellings: `1`, `true`, `yes` (case-insensitive).
pub fn parse_flag(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes"
    )
}
