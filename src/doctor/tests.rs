use super::*;

#[test]
fn versions_parse() {
    assert_eq!(parse_version("0.61.0\n"), Some((0, 61, 0)));
    assert_eq!(parse_version("v0.40.0-preview.1"), Some((0, 40, 0)));
    assert_eq!(parse_version("gemini 1.2.3"), Some((1, 2, 3)));
    assert_eq!(parse_version("Usage: gemini"), None);
    assert!(parse_version("0.39.9").unwrap() < MIN_VERSION);
}

#[test]
fn help_flags_match_whole_words() {
    let help = "  --acp  Starts ACP\n      --approval-mode  x\n  -o, --output-format [choices: \"text\", \"json\", \"stream-json\"]\n      --experimental-acp  deprecated, use --skip-trust instead";
    assert!(help_lists(help, "--acp"));
    assert!(help_lists(help, "--approval-mode"));
    assert!(help_lists(help, "stream-json"));
    assert!(!help_lists(help, "--approval"));
    assert!(!help_lists(help, "--skip-trust"));
    assert!(help_lists(help, "--output-format"));
    assert!(!help_lists("  --experimental-acp  x", "--acp"));
}
