//! Checks on fake-gemini's invocation records (`[[log.invocation]]`): argv, stdin, the assembled
//! prompt, environment (values or SHA-256 of secrets) and cwd.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::case::InvocationCheck;
use crate::fakelog::env_entry;
use crate::values::Vars;

fn argv_of(rec: &Value) -> Vec<String> {
    rec.get("argv")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The Gemini CLI's one-letter alias of a long flag, where it has one (both spellings mean the
/// same to the CLI, so a wrapper may use either).
fn short_alias(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "--model" => "-m",
        "--prompt" => "-p",
        "--sandbox" => "-s",
        "--resume" => "-r",
        "--yolo" => "-y",
        "--output-format" => "-o",
        "--debug" => "-d",
        "--extensions" => "-e",
        _ => return None,
    })
}

fn has_flag(argv: &[String], flag: &str, value: Option<&str>) -> bool {
    has_spelling(argv, flag, value)
        || short_alias(flag).is_some_and(|s| has_spelling(argv, s, value))
}

fn has_spelling(argv: &[String], flag: &str, value: Option<&str>) -> bool {
    argv.iter().enumerate().any(|(i, a)| match value {
        None => a == flag || a.starts_with(&format!("{flag}=")),
        Some(v) => {
            *a == format!("{flag}={v}")
                || (a == flag && argv.get(i + 1).map(String::as_str) == Some(v))
        }
    })
}

fn short(s: &str) -> String {
    if s.chars().count() > 300 {
        format!(
            "{:?}… ({} bytes)",
            s.chars().take(300).collect::<String>(),
            s.len()
        )
    } else {
        format!("{s:?}")
    }
}

/// The problems of one invocation record against one check (empty: it holds).
#[expect(
    clippy::too_many_lines,
    reason = "one check per field of an invocation check, in the order the case format documents them"
)]
pub(crate) fn check_invocation(rec: &Value, c: &InvocationCheck, vars: &Vars) -> Vec<String> {
    let mut p = Vec::new();
    let argv = argv_of(rec);
    for a in &c.argv_contains {
        let a = vars.str(a);
        if !argv.contains(&a) {
            p.push(format!("argv lacks {a:?}: {argv:?}"));
        }
    }
    for a in &c.argv_not_contains {
        let a = vars.str(a);
        if argv.contains(&a) {
            p.push(format!("argv contains {a:?}: {argv:?}"));
        }
    }
    for (flag, v) in &c.argv_flags {
        let ok = match v {
            Value::Bool(true) => has_flag(&argv, flag, None),
            Value::Bool(false) => !has_flag(&argv, flag, None),
            Value::String(s) => has_flag(&argv, flag, Some(s)),
            other => has_flag(&argv, flag, Some(&other.to_string())),
        };
        if !ok {
            p.push(format!("argv flag {flag} = {v} does not hold: {argv:?}"));
        }
    }
    for r in &c.argv_none_match {
        let re = regex::Regex::new(r).expect("validated at load");
        if let Some(a) = argv.iter().find(|a| re.is_match(a)) {
            p.push(format!("argv element {} matches /{r}/", short(a)));
        }
    }
    let stdin = rec.get("stdin").and_then(Value::as_str).unwrap_or_default();
    if let Some(want) = &c.stdin_equals {
        let want = vars.str(want);
        if stdin != want {
            p.push(format!(
                "stdin is {}, expected {}",
                short(stdin),
                short(&want)
            ));
        }
    }
    for s in &c.stdin_contains {
        if !stdin.contains(&vars.str(s)) {
            p.push(format!("stdin lacks {}: {}", short(s), short(stdin)));
        }
    }
    for s in &c.stdin_not_contains {
        if stdin.contains(&vars.str(s)) {
            p.push(format!("stdin contains {}", short(s)));
        }
    }
    if let Some(min) = c.stdin_bytes_at_least {
        let got = rec
            .get("stdin_bytes")
            .and_then(Value::as_u64)
            .unwrap_or(stdin.len() as u64);
        if got < min {
            p.push(format!("stdin has {got} bytes, expected at least {min}"));
        }
    }
    let prompt = rec
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(want) = &c.prompt_equals {
        let want = vars.str(want);
        if prompt != want {
            p.push(format!(
                "prompt is {}, expected {}",
                short(prompt),
                short(&want)
            ));
        }
    }
    for s in &c.prompt_contains {
        if !prompt.contains(&vars.str(s)) {
            p.push(format!("prompt lacks {}: {}", short(s), short(prompt)));
        }
    }
    for s in &c.prompt_not_contains {
        if prompt.contains(&vars.str(s)) {
            p.push(format!("prompt contains {}", short(s)));
        }
    }
    for r in &c.prompt_matches {
        let re = regex::Regex::new(r).expect("validated at load");
        if !re.is_match(prompt) {
            p.push(format!("prompt does not match /{r}/: {}", short(prompt)));
        }
    }
    for (s, want) in &c.prompt_occurrences {
        let got = prompt.matches(&vars.str(s)).count();
        if got != *want {
            p.push(format!(
                "prompt holds {s:?} {got} time(s), expected {want}: {}",
                short(prompt)
            ));
        }
    }
    for k in &c.env_present {
        if env_entry(rec, k).is_none() {
            p.push(format!("env lacks {k}"));
        }
    }
    for k in &c.env_absent {
        if env_entry(rec, k).is_some() {
            p.push(format!("env has {k}"));
        }
    }
    for (k, want) in &c.env_value {
        match env_entry(rec, k) {
            Some(Ok(v)) if v == *want => {}
            Some(Err(h)) if h == sha256_hex(want) => {}
            other => p.push(format!("env {k} is {other:?}, expected {want:?}")),
        }
    }
    for (k, secret) in &c.env_sha256_of {
        match env_entry(rec, k) {
            Some(Err(h)) if h == sha256_hex(secret) => {}
            Some(Ok(v)) if v == *secret => {}
            Some(Err(_)) => p.push(format!(
                "env {k} arrived with a different value (SHA-256 differs)"
            )),
            Some(Ok(_)) => p.push(format!("env {k} arrived with a different value")),
            None => p.push(format!("env lacks {k}")),
        }
    }
    if let Some(want) = &c.cwd {
        let want = PathBuf::from(vars.str(want));
        let got = PathBuf::from(rec.get("cwd").and_then(Value::as_str).unwrap_or_default());
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if canon(&got) != canon(&want) {
            p.push(format!(
                "cwd is {}, expected {}",
                got.display(),
                want.display()
            ));
        }
    }
    p
}

/// Lowercase hex SHA-256 of a string, as fake-gemini logs hidden env values.
pub fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_in_both_spellings() {
        let argv: Vec<String> = [
            "--output-format",
            "json",
            "--approval-mode=yolo",
            "--skip-trust",
        ]
        .map(String::from)
        .to_vec();
        assert!(has_flag(&argv, "--output-format", Some("json")));
        assert!(has_flag(&argv, "--approval-mode", Some("yolo")));
        assert!(has_flag(&argv, "--skip-trust", None));
        assert!(!has_flag(&argv, "--model", None));
        let short: Vec<String> = ["-m", "gemini-2.5-flash"].map(String::from).to_vec();
        assert!(has_flag(&short, "--model", Some("gemini-2.5-flash")));
        assert!(!has_flag(&short, "--model", Some("gemini-2.5-pro")));
    }

    #[test]
    fn sha256_matches_known_vector() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
