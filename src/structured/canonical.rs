//! The canonical text of a validated answer: byte for byte what the reference's
//! `JSON.stringify(JSON.parse(answer))` prints, so clients comparing strings see no difference.

use std::fmt::Write as _;

use serde_json::Value;

/// Largest integer every double below it represents exactly (2^53).
const EXACT_INTEGERS: u64 = 1 << 53;

/// Compact JSON as JavaScript's `JSON.stringify` writes it: keys in the order the model wrote them
/// (a duplicate key keeps its first position and its last value, as `JSON.parse` does; serde_json's
/// `preserve_order` map behaves the same), numbers by ECMAScript Number::toString, strings escaped
/// as `JSON.stringify` escapes them.
pub fn canonical_json(value: &Value) -> String {
    canonical_json_sized(value, 64)
}

/// [`canonical_json`] into a string of `capacity` bytes to start with: the length of the text the
/// value was parsed from saves the growing string its copies.
pub(crate) fn canonical_json_sized(value: &Value, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    write_value(&mut out, value);
    out
}

// Recursion is bounded: every value reaching here came from serde_json's parser, whose nesting
// limit is 128.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            // Integers a double holds exactly print as themselves, the common case made cheap.
            (Some(u), _) if u <= EXACT_INTEGERS => {
                out.push_str(itoa::Buffer::new().format(u));
            }
            (_, Some(i)) if i.unsigned_abs() <= EXACT_INTEGERS => {
                out.push_str(itoa::Buffer::new().format(i));
            }
            // JavaScript has only doubles: a u64/i64 beyond 2^53 rounds exactly as `as f64` does.
            _ => write_number(out, n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// ECMAScript QuoteJSONString. Lone surrogates (which `JSON.stringify` writes as `\udxxx`) cannot
/// occur: a Rust string holds none, and serde_json refuses them when parsing.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    // Most strings need no escape: one pass the compiler vectorises, then one copy.
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    // Everything escaped is ASCII, so the runs between escapes end on character boundaries.
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// Rust's `{:e}` gives the shortest digit string that round-trips, as ECMAScript asks, but breaks
/// an exact tie between two such strings upwards where ECMAScript takes the even one
/// (`1059438285926254.25` prints `…254.2` in JavaScript, `…254.3` in Rust). Returns the digits
/// and the decimal exponent of the first one, the slow way ([`Shortest`] is the quick one);
/// `quick` lets a double's bits rule a tie out before any more printing.
fn shortest_digits_checked(x: f64, quick: bool) -> (String, i64) {
    let (digits, exponent) = split_exp(&format!("{x:e}"));
    let k = digits.len();
    let last = digits.as_bytes()[k - 1] - b'0';
    if last.is_multiple_of(2) {
        return (digits, exponent);
    }
    // A tie means x sits exactly halfway: its exact expansion is the k digits below, then a 5,
    // then nothing. Most doubles' exact expansions are far longer than k + 1 digits, which their
    // bits tell without printing; three more digits rule most of the rest out cheaply; the exact
    // expansion (a double has at most 767 significant digits) settles the rest.
    if quick && expansion_longer_than(x, k + 1) {
        return (digits, exponent);
    }
    let (near, near_exp) = split_exp(&format!("{x:.*e}", k + 3));
    if near_exp != exponent || !near[k..].starts_with("5000") {
        return (digits, exponent);
    }
    let (exact, _) = split_exp(&format!("{x:.*e}", 780));
    if exact[k + 1..].bytes().any(|d| d != b'0') {
        return (digits, exponent);
    }
    let lower = &exact[..k];
    let even = if (lower.as_bytes()[k - 1] - b'0').is_multiple_of(2) {
        lower.to_owned()
    } else {
        match increment(lower) {
            Some(upper) => upper,
            None => return (digits, exponent),
        }
    };
    let candidate = format!("{}.{}e{exponent}", &even[..1], &even[1..]);
    if candidate.parse::<f64>() == Ok(x) {
        (even.trim_end_matches('0').to_owned(), exponent)
    } else {
        (digits, exponent)
    }
}

/// Whether the exact decimal expansion of the positive double `x` has more than `digits`
/// significant digits. With `x = odd × 2^-n` (n > 0), that expansion is `odd × 5^n` shifted, whose
/// length is at least log10(odd) + n·log10(5).
fn expansion_longer_than(x: f64, digits: usize) -> bool {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exp2) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, biased - 1075)
    };
    if mantissa == 0 {
        return false;
    }
    let zeros = mantissa.trailing_zeros();
    let odd = mantissa >> zeros;
    let n = -(exp2 + i64::from(zeros));
    if n <= 0 {
        return false;
    }
    let odd_bits = f64::from(64 - odd.leading_zeros());
    // log10(5) = 1 - log10(2).
    (odd_bits - 1.0) * std::f64::consts::LOG10_2 + n as f64 * (1.0 - std::f64::consts::LOG10_2)
        > digits as f64 + 1e-9
}

/// Splits Rust's `{:e}` output into its digits (no point) and exponent.
fn split_exp(text: &str) -> (String, i64) {
    let (mantissa, exponent) = text
        .split_once('e')
        .expect("LowerExp output always has an exponent");
    let digits = mantissa.chars().filter(|c| *c != '.').collect();
    (
        digits,
        exponent.parse().expect("LowerExp exponent is an integer"),
    )
}

/// Adds one in the last place of a digit string; `None` when it would gain a digit.
fn increment(digits: &str) -> Option<String> {
    let mut bytes = digits.as_bytes().to_vec();
    for byte in bytes.iter_mut().rev() {
        if *byte == b'9' {
            *byte = b'0';
        } else {
            *byte += 1;
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

/// ECMAScript Number::toString(x) (ECMA-262 §6.1.6.1.20) for a finite double; `JSON.stringify`
/// writes non-finite numbers as `null`, which this returns for them too.
pub fn format_number(x: f64) -> String {
    let mut out = String::new();
    write_number(&mut out, x);
    out
}

/// [`format_number`], appended to `out` without allocating in the common case.
pub(crate) fn write_number(out: &mut String, x: f64) {
    if !x.is_finite() {
        out.push_str("null");
        return;
    }
    if x == 0.0 {
        // Both zeros: String(-0) is "0".
        out.push('0');
        return;
    }
    // An integer a double holds exactly prints as itself (the shortest digits are its own, and
    // no tie between two of them can arise).
    if x.fract() == 0.0 && x.abs() <= EXACT_INTEGERS as f64 {
        out.push_str(itoa::Buffer::new().format(x as i64));
        return;
    }
    // Ryū's plain layout (`8571.428571428572`, `0.001`, never an exponent) is also JavaScript's,
    // whose plain range is wider; only its digits can differ, at an exact tie.
    let mut ryu = ryu::Buffer::new();
    let text = ryu.format_finite(x);
    if !text.bytes().any(|b| b == b'e') && !text.ends_with(".0") {
        let significant = text
            .bytes()
            .filter(u8::is_ascii_digit)
            .skip_while(|b| *b == b'0')
            .count();
        let last = text.as_bytes()[text.len() - 1] - b'0';
        if last.is_multiple_of(2) || expansion_longer_than(x.abs(), significant + 1) {
            out.push_str(text);
            return;
        }
    }
    write_shortest(out, x);
}

/// ECMAScript's layout of the shortest digits of a finite, non-zero `x`, every case worked out.
fn write_shortest(out: &mut String, x: f64) {
    if x < 0.0 {
        out.push('-');
    }
    let shortest = Shortest::of(x.abs());
    let digits = shortest.digits();
    let k = digits.len() as i64;
    let n = shortest.exponent + 1;
    if k <= n && n <= 21 {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(digits);
    } else {
        let e = n - 1;
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(out, "e{}{}", if e >= 0 { '+' } else { '-' }, e.abs());
    }
}

/// The shortest round-trip digits of a positive double, on the stack.
struct Shortest {
    buf: [u8; 24],
    len: usize,
    exponent: i64,
}

impl Shortest {
    fn of(x: f64) -> Shortest {
        // Ryū's shortest round-trip digits, in one of its two layouts: `1.25`, `100.0`, `0.001`
        // or `1.2345e-7`.
        let mut text = ryu::Buffer::new();
        let text = text.format_finite(x);
        // Byte searches: the text is at most 24 ASCII bytes, too short for `str`'s searchers.
        let (mantissa, e) = match text.bytes().position(|b| b == b'e') {
            Some(at) => (
                &text[..at],
                text[at + 1..]
                    .parse::<i64>()
                    .expect("Ryū's exponent is an integer"),
            ),
            None => (text, 0),
        };
        let int_len = mantissa
            .bytes()
            .position(|b| b == b'.')
            .unwrap_or(mantissa.len()) as i64;
        let mut shortest = Shortest {
            buf: [0; 24],
            len: 0,
            exponent: 0,
        };
        let mut leading = 0i64;
        for b in mantissa.bytes().filter(|b| *b != b'.') {
            if b == b'0' && shortest.len == 0 {
                leading += 1;
            } else {
                shortest.buf[shortest.len] = b;
                shortest.len += 1;
            }
        }
        while shortest.len > 1 && shortest.buf[shortest.len - 1] == b'0' {
            shortest.len -= 1;
        }
        shortest.exponent = int_len + e - leading - 1;
        let last = shortest.buf[shortest.len - 1] - b'0';
        if last.is_multiple_of(2) || expansion_longer_than(x, shortest.len + 1) {
            return shortest;
        }
        // A tie is possible: the exact path decides.
        let (digits, exponent) = shortest_digits_checked(x, false);
        shortest.len = digits.len();
        shortest.buf[..digits.len()].copy_from_slice(digits.as_bytes());
        shortest.exponent = exponent;
        shortest
    }

    fn digits(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).expect("digits are ASCII")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Parses `text` as serde_json does for an answer and prints it canonically.
    fn canon(text: &str) -> String {
        canonical_json(&serde_json::from_str(text).expect("test input is JSON"))
    }

    #[rstest]
    #[case("1.0", "1")]
    #[case("1", "1")]
    #[case("-1.5", "-1.5")]
    #[case("1e21", "1e+21")]
    #[case("1e20", "100000000000000000000")]
    #[case("123456789012345678901", "123456789012345680000")]
    #[case("1e-7", "1e-7")]
    #[case("1.2345e-7", "1.2345e-7")]
    #[case("1e-6", "0.000001")]
    #[case("0.0000015", "0.0000015")]
    #[case("0.1", "0.1")]
    #[case("0.30000000000000004", "0.30000000000000004")]
    #[case("123.456", "123.456")]
    #[case("9007199254740993", "9007199254740992")]
    #[case("-9007199254740993", "-9007199254740992")]
    #[case("18446744073709551615", "18446744073709552000")]
    #[case("-9223372036854775808", "-9223372036854776000")]
    #[case("-0", "0")]
    #[case("-0.0", "0")]
    #[case("0e10", "0")]
    #[case("5e-324", "5e-324")]
    #[case("1.7976931348623157e308", "1.7976931348623157e+308")]
    #[case("1.5e300", "1.5e+300")]
    #[case("12e-1", "1.2")]
    #[case("100", "100")]
    #[case("1E2", "100")]
    #[case("1059438285926254.2", "1059438285926254.2")]
    #[case("70414735593405128e-3", "70414735593405.12")]
    #[case("81959386060041.62", "81959386060041.62")]
    #[case("0.5", "0.5")]
    #[case("2.5", "2.5")]
    fn numbers_follow_ecmascript_number_to_string(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(canon(input), expected);
    }

    #[test]
    fn every_printed_number_reads_back_as_the_same_double() {
        // A fixed pseudo-random walk over bit patterns: all exponents, signs and mantissas.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = f64::from_bits(state);
            if !x.is_finite() {
                continue;
            }
            let text = format_number(x);
            assert_eq!(
                text.parse::<f64>(),
                Ok(if x == 0.0 { 0.0 } else { x }),
                "{x:e} -> {text}"
            );
            assert!(!text.ends_with(".0") && !text.contains("e+0") && !text.contains("e-0"));
        }
    }

    #[test]
    fn ruling_ties_out_by_the_bits_changes_no_digit() {
        let mut state: u64 = 0x1234_5678_9abc_def1;
        let mut xs: Vec<f64> = (1..20_000).map(|i| f64::from(i) / 8.0).collect();
        xs.extend((1..2_000).map(|i| 1_059_438_285_926_254.0 + f64::from(i) / 4.0));
        for _ in 0..20_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            xs.push(f64::from_bits(state >> 1));
        }
        for x in xs.into_iter().filter(|x| x.is_finite() && *x > 0.0) {
            assert_eq!(
                shortest_digits_checked(x, true),
                shortest_digits_checked(x, false),
                "{x:e}"
            );
        }
    }

    /// Doubles where printing goes wrong if anywhere: every eighth and quarter (exact ties among
    /// them), integers around 2^53, ones around 1e-7 and 1e21 where the layouts switch, and
    /// 40,000 random positive bit patterns (a fixed walk from `seed`).
    fn hard_doubles(seed: u64) -> Vec<f64> {
        let mut xs: Vec<f64> = (1..20_000).map(|i| f64::from(i) / 8.0).collect();
        xs.extend((1..2_000).map(|i| 1_059_438_285_926_254.0 + f64::from(i) / 4.0));
        xs.extend((-2_000..2_000).map(|i| 9_007_199_254_740_992.0 + f64::from(i)));
        xs.extend(
            (-30..30).flat_map(|p| [1.0, 1.5, 9.999_999, 123.456].map(|m| m * 10f64.powi(p))),
        );
        let mut state = seed;
        for _ in 0..40_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            xs.push(f64::from_bits(state >> 1));
        }
        xs.retain(|x| x.is_finite() && *x > 0.0);
        xs
    }

    #[test]
    fn the_quick_digits_are_the_exact_paths_digits() {
        // Ryū's digits, re-checked for ties, against the exact path on its own.
        for x in hard_doubles(0x0ddb_a11c_afe5_eed5) {
            let quick = Shortest::of(x);
            assert_eq!(
                (quick.digits().to_owned(), quick.exponent),
                shortest_digits_checked(x, false),
                "{x:e}"
            );
        }
    }

    #[test]
    fn the_quick_layouts_are_the_worked_out_ones() {
        // Integers and Ryū's plain layout are printed as they come; the worked-out layout of the
        // shortest digits is the judge, for both signs.
        for x in hard_doubles(0x5eed_0ffa_571a_7000) {
            for x in [x, -x] {
                let mut worked_out = String::new();
                write_shortest(&mut worked_out, x);
                assert_eq!(format_number(x), worked_out, "{x:e}");
            }
        }
    }

    #[test]
    fn non_finite_numbers_print_as_null_like_json_stringify() {
        assert_eq!(format_number(f64::INFINITY), "null");
        assert_eq!(format_number(f64::NAN), "null");
    }

    #[rstest]
    #[case(r#"{ "b" : 1 , "a" : [ true , null ] }"#, r#"{"b":1,"a":[true,null]}"#)]
    #[case(r#"{"a":1,"b":2,"a":3}"#, r#"{"a":3,"b":2}"#)]
    #[case(r#"{"z":{"y":1,"x":2,"y":3}}"#, r#"{"z":{"y":3,"x":2}}"#)]
    #[case(r#"[ ]"#, "[]")]
    #[case(r#"{ }"#, "{}")]
    fn compact_with_the_models_key_order_and_last_duplicate_wins(
        #[case] input: &str,
        #[case] expected: &str,
    ) {
        assert_eq!(canon(input), expected);
    }

    #[rstest]
    #[case(r#""a\"b\\c""#, r#""a\"b\\c""#)]
    #[case(r#""\b\f\n\r\t""#, r#""\b\f\n\r\t""#)]
    #[case(r#""\u0000\u001F\u0007""#, r#""\u0000\u001f\u0007""#)]
    #[case(r#""\u007f""#, "\"\u{7f}\"")]
    #[case(r#""\/""#, r#""/""#)]
    #[case(r#""é😀\u00e9""#, "\"é😀é\"")]
    #[case(r#""\u2028\u2029""#, "\"\u{2028}\u{2029}\"")]
    #[case(r#""\ud83d\ude00""#, "\"😀\"")]
    fn strings_are_escaped_as_json_stringify_escapes_them(
        #[case] input: &str,
        #[case] expected: &str,
    ) {
        assert_eq!(canon(input), expected);
    }
}
