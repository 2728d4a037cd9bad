use super::*;
use crate::gemini::settings::{Layer, LayerFile, SystemFile};
use serde_json::json;

fn servers(v: serde_json::Value) -> Servers {
    mcp_servers::of_layers(&[LayerFile {
        layer: Layer::User,
        path: "/home/u/.gemini/settings.json".into(),
        content: Ok(v.as_object().cloned()),
        check: SystemFile::Read,
    }])
}

#[tokio::test]
async fn a_silent_server_is_left_out_named_and_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let s = servers(json!({"mcpServers": {
        "slow": {"command": "sleep", "args": ["100000"], "env": {"WHICH": "left-out-test"}},
        "gone": {"command": "/nonexistent/mcp-server"},
        "gemini": {"command": "npx", "args": ["-y", "geminicli-mcp"]}
    }}));
    let progress = Progress::new(None, crate::progress::Style::Summary, None);
    let ct = CancellationToken::new();
    let bound = Duration::from_millis(300);
    let started = Instant::now();
    let choice = choose_among(&s, dir.path(), &[], &progress, &ct, bound).await;
    assert!(started.elapsed() < Duration::from_secs(5), "bounded");
    // A missing command only makes the CLI warn: it stays; this server and the silent one go.
    assert_eq!(choice.names, Some(vec!["gone".to_owned()]));
    let note = choice.note.expect("said in the result");
    assert!(
        note.contains(
            "'slow' (/home/u/.gemini/settings.json) did not answer `initialize` within 0s"
        ),
        "{note}"
    );
    assert!(!note.contains("'gemini'"), "{note}");
    // Known silent: the next call does not wait for it again.
    let again = Instant::now();
    let choice = choose_among(&s, dir.path(), &[], &progress, &ct, Duration::from_secs(30)).await;
    assert!(again.elapsed() < Duration::from_secs(5));
    assert_eq!(choice.names, Some(vec!["gone".to_owned()]));
}

#[tokio::test]
async fn only_this_server_left_out_says_nothing_and_hands_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let s = servers(json!({"mcpServers": {
        "g": {"command": "/opt/bin/geminicli-mcp"},
        "other": {"httpUrl": "https://example.invalid/mcp"}
    }}));
    let progress = Progress::new(None, crate::progress::Style::Summary, None);
    let choice = choose_among(
        &s,
        dir.path(),
        &[],
        &progress,
        &CancellationToken::new(),
        Duration::from_millis(300),
    )
    .await;
    assert_eq!(choice.names, Some(vec!["other".to_owned()]));
    assert_eq!(choice.note, None);
    let none = servers(json!({"mcpServers": {"x": {"httpUrl": "https://example.invalid/mcp"}}}));
    let choice = choose_among(
        &none,
        dir.path(),
        &[],
        &progress,
        &CancellationToken::new(),
        Duration::from_millis(300),
    )
    .await;
    assert_eq!(
        (choice.names, choice.note),
        (None, None),
        "nothing to leave out: no flag"
    );
}

fn chosen(silent: &[&str]) -> Choice {
    Choice {
        names: Some(vec!["kept".to_owned()]),
        note: (!silent.is_empty()).then(|| "left out".to_owned()),
        silent: silent.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn under_yolo_and_plan_the_chosen_names_are_handed() {
    let bound = Duration::from_secs(10);
    let (names, note) = settle(chosen(&["'slow' (/s.json)"]), None, true, bound).unwrap();
    assert_eq!(names, Some(vec!["kept".to_owned()]));
    assert_eq!(note.as_deref(), Some("left out"));
}

#[test]
fn a_list_that_would_widen_the_mode_is_not_handed() {
    let bound = Duration::from_secs(10);
    // Only this server's own entry to leave out: nothing handed, nothing said (a server the CLI
    // starts refuses to run Gemini).
    let (names, note) = settle(chosen(&[]), Some("default"), true, bound).unwrap();
    assert_eq!((names, note), (None, None));
    // A silent server: the call ends at once, naming it and its file.
    let f = settle(
        chosen(&["'slow' (/s.json)"]),
        Some("auto_edit"),
        true,
        bound,
    )
    .unwrap_err();
    assert_eq!(f.kind, crate::error::ErrorKind::ConfigError);
    assert!(f.message.contains("'slow' (/s.json)"), "{}", f.message);
    assert!(
        f.message.contains("approval mode auto_edit"),
        "{}",
        f.message
    );
    assert!(f.fix().contains("\"timeout\""), "{}", f.fix());
}

#[test]
fn a_list_the_caller_named_is_narrowed_whatever_the_mode() {
    let bound = Duration::from_secs(10);
    let (names, _) = settle(chosen(&["'slow' (/s.json)"]), Some("ask"), false, bound).unwrap();
    assert_eq!(names, Some(vec!["kept".to_owned()]));
}
