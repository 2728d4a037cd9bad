//! FAKE_GEMINI_LOG: the invocation record of CONTRIBUTING.md (plus `event` and `launcher_pid`),
//! secrets only as SHA-256, exact stdin, and atomic appends under concurrent runs.

use std::process::Stdio;

use base64::Engine;
use serde_json::Value;

use crate::support::{log_records, Sandbox};

fn logged(sb: &mut Sandbox) -> std::path::PathBuf {
    let log = sb.dir.path().join("log.jsonl");
    sb.set("FAKE_GEMINI_LOG", Some(log.to_str().unwrap()));
    log
}

#[test]
fn the_invocation_record_has_every_field() {
    let mut sb = Sandbox::new("logp");
    let log = logged(&mut sb);
    sb.set("MY_SECRET", Some("hunter2"))
        .set("GEMINI_CLI_TRUST_WORKSPACE", Some("true"))
        .set("GEMINI_CLI_NO_RELAUNCH", Some("1"));
    let stdin = b"caf\xe9 \n";
    let o = sb.run(&["-p", "[[fake-gemini:success text=\"ok\"]]"], Some(stdin));
    assert_eq!(o.status.code(), Some(0));
    let recs = log_records(&log);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r["event"], "invocation");
    assert_eq!(r["version"], "0.61.0");
    assert_eq!(
        r["argv"],
        serde_json::json!(["-p", "[[fake-gemini:success text=\"ok\"]]"])
    );
    assert_eq!(r["stdin_bytes"], 6);
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(r["stdin_base64"].as_str().unwrap())
            .unwrap(),
        stdin
    );
    assert_eq!(r["stdin"], "caf\u{FFFD} \n");
    assert_eq!(
        r["prompt"],
        "caf\u{FFFD} \n\n\n[[fake-gemini:success text=\"ok\"]]"
    );
    assert_eq!(r["scenario"], "success");
    assert_eq!(r["params"], serde_json::json!({"text": "ok"}));
    assert_eq!(r["exit"], 0);
    assert_eq!(r["launcher_pid"], Value::Null);
    assert_eq!(r["cwd"], sb.cwd.display().to_string());
    for k in ["pid", "pgid", "ppid"] {
        assert!(r[k].as_u64().is_some(), "{k}");
    }
    assert_eq!(r["env"]["TERM"], serde_json::json!({"value": "dumb"}));
    assert_eq!(
        r["env"]["GEMINI_CLI_TRUST_WORKSPACE"],
        serde_json::json!({"value": "true"})
    );
    assert_eq!(
        r["env"]["MY_SECRET"],
        serde_json::json!({"sha256": "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7"})
    );
    assert!(!std::fs::read_to_string(&log).unwrap().contains("hunter2"));
}

#[test]
fn early_exits_are_logged_with_their_code() {
    let mut sb = Sandbox::new("logq");
    let log = logged(&mut sb);
    sb.set("GEMINI_CLI_NO_RELAUNCH", Some("1"));
    sb.run(&["--bogus"], None);
    sb.run(&["-p", "x"], None);
    sb.run(&["-p", "[[fake-gemini:hang-after-output]] [[x"], None);
    let exits: Vec<Value> = log_records(&log)
        .iter()
        .map(|r| r["exit"].clone())
        .collect();
    assert_eq!(exits[..2], [serde_json::json!(1), serde_json::json!(55)]);
}

#[test]
fn concurrent_appends_never_interleave() {
    let mut sb = Sandbox::new("logc");
    let log = logged(&mut sb);
    sb.set("GEMINI_CLI_TRUST_WORKSPACE", Some("true"));
    let big = "x".repeat(64 * 1024);
    let kids: Vec<_> = (0..12)
        .map(|_| {
            let mut c = sb.cmd(&["-p", &big]);
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c.spawn().unwrap()
        })
        .collect();
    for mut k in kids {
        assert!(k.wait().unwrap().success());
    }
    let recs = log_records(&log);
    assert_eq!(
        recs.iter().filter(|r| r["event"] == "invocation").count(),
        12
    );
    assert_eq!(
        recs.iter()
            .filter(|r| r["event"] == "spawned" && r["kind"] == "worker")
            .count(),
        12
    );
}

#[test]
fn an_unwritable_log_is_the_fakes_own_failure() {
    let mut sb = Sandbox::new("logf");
    let bad = sb.dir.path().join("no-such-dir").join("log.jsonl");
    sb.set("FAKE_GEMINI_LOG", Some(bad.to_str().unwrap()));
    for relaunch in [None, Some("1")] {
        sb.set("GEMINI_CLI_NO_RELAUNCH", relaunch);
        let o = sb.run(&["-p", "x", "--skip-trust"], None);
        assert_eq!(o.status.code(), Some(99));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("fake-gemini: cannot open FAKE_GEMINI_LOG")
        );
    }
}
