//! Sessions per project, replayed against the `s_sess*` captures: listing format, resume by
//! latest / index / id, the exit-42 failures, deletion, per-cwd scoping, and (behind the switch)
//! the upstream loss of a session resumed in a later clock minute.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::support::{capture, mock, Sandbox};

static TITLE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^  (\d+)\. .* \(").unwrap());

/// The mock API summarised sessions with its router JSON; titles are compared elsewhere.
fn mask_titles(s: &str) -> String {
    TITLE.replace_all(s, "  $1. <TITLE> (").into_owned()
}

fn sandbox(project: &str) -> Sandbox {
    let mut sb = Sandbox::new(project);
    sb.set("NO_COLOR", Some("1"))
        .set("FAKE_GEMINI_NOW", Some("2026-11-30T00:11:05.000Z"));
    sb.use_scenario(&mock("success"));
    sb
}

fn check(sb: &Sandbox, cap: &str, args: &[&str], rc: i32) -> String {
    let o = sb.run(args, None);
    assert_eq!(
        mask_titles(&sb.mask(&o.stdout)),
        mask_titles(&capture(&format!("{cap}.out"))),
        "{cap}: stdout"
    );
    assert_eq!(
        sb.mask(&o.stderr),
        capture(&format!("{cap}.err")),
        "{cap}: stderr"
    );
    assert_eq!(o.status.code(), Some(rc), "{cap}: exit code");
    String::from_utf8(o.stdout).unwrap()
}

fn init_id(stream: &str) -> String {
    let v: Value = serde_json::from_str(stream.lines().next().unwrap()).unwrap();
    v["session_id"].as_str().unwrap().to_string()
}

fn listed_ids(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|l| {
            l.rsplit_once('[')
                .map(|(_, id)| id.trim_end_matches(']').to_string())
        })
        .collect()
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one story of a project's sessions, each step depending on the last"
)]
fn create_list_and_resume_by_latest_index_and_id() {
    let sb = sandbox("sw1");
    check(&sb, "s_sess_list_empty", &["--list-sessions"], 0);
    let a = init_id(&check(
        &sb,
        "s_sess_create1",
        &[
            "-p",
            "first prompt alpha",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    ));
    let b = init_id(&check(
        &sb,
        "s_sess_create2",
        &[
            "-p",
            "second prompt beta",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    ));
    let c = init_id(&check(
        &sb,
        "s_sess_create3",
        &[
            "-p",
            "third prompt gamma",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    ));
    let list = check(&sb, "s_sess_list3", &["--list-sessions"], 0);
    assert_eq!(listed_ids(&list), [a.clone(), b.clone(), c.clone()]);
    assert!(
        list.contains("  1. first prompt alpha (Just now) ["),
        "{list}"
    );

    let out = check(
        &sb,
        "s_sess_resume_latest",
        &[
            "--resume",
            "latest",
            "-p",
            "resume latest delta",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), c);
    let out = check(
        &sb,
        "s_sess_resume_1",
        &[
            "--resume",
            "1",
            "-p",
            "resume index one epsilon",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), a);
    let out = check(
        &sb,
        "s_sess_resume_uuid",
        &[
            "--resume",
            &b,
            "-p",
            "resume by uuid zeta",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), b);
    check(
        &sb,
        "s_sess_resume_random_uuid",
        &[
            "--resume",
            "0b9d3c2e-1111-4a2b-9c3d-5e6f7a8b9c0d",
            "-p",
            "resume random",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        42,
    );
    check(
        &sb,
        "s_sess_resume_99",
        &[
            "--resume",
            "99",
            "-p",
            "resume 99",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        42,
    );
    check(
        &sb,
        "s_sess_resume_99_json",
        &["--resume", "99", "-p", "x", "-o", "json", "--skip-trust"],
        42,
    );
    let out = check(
        &sb,
        "s_sess_sessionid_new",
        &[
            "--session-id",
            "11111111-2222-4333-8444-555555555555",
            "-p",
            "explicit session id eta",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), "11111111-2222-4333-8444-555555555555");
    let out = check(
        &sb,
        "s_sess_sessionid_notuuid",
        &[
            "--session-id",
            "not-a-uuid",
            "-p",
            "bad id",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), "not-a-uuid");
    check(
        &sb,
        "s_sess_resume_latest_json",
        &[
            "--resume",
            "latest",
            "-p",
            "resume with json",
            "-o",
            "json",
            "--skip-trust",
        ],
        0,
    );
    check(
        &sb,
        "s_sess_resume_latest_text",
        &[
            "--resume",
            "latest",
            "-p",
            "resume with text",
            "--skip-trust",
        ],
        0,
    );
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one story of a project's sessions, each step depending on the last"
)]
fn existing_ids_deletion_and_other_projects() {
    let mut sb = sandbox("sw4");
    let a = init_id(&check(
        &sb,
        "s_sess2_create_a",
        &[
            "-p",
            "session two alpha",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    ));
    check(
        &sb,
        "s_sess2_create_b",
        &[
            "-p",
            "session two beta",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    let c = init_id(&check(
        &sb,
        "s_sess2_create_c",
        &[
            "-p",
            "session two gamma",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    ));
    check(&sb, "s_sess2_list", &["--list-sessions"], 0);
    for (cap, fmt) in [
        ("s_sess2_sessionid_existing", "stream-json"),
        ("s_sess2_sessionid_existing_json", "json"),
    ] {
        let o = sb.run(
            &[
                "--session-id",
                &a,
                "-p",
                "reuse id",
                "-o",
                fmt,
                "--skip-trust",
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(42), "{cap}");
        assert!(o.stdout.is_empty());
        assert_eq!(sb.mask(&o.stderr), capture(&format!("{cap}.err")), "{cap}");
    }
    check(
        &sb,
        "s_sess2_resume_random_json",
        &[
            "--resume",
            "0b9d3c2e-1111-4a2b-9c3d-5e6f7a8b9c0d",
            "-p",
            "x",
            "-o",
            "json",
            "--skip-trust",
        ],
        42,
    );
    check(
        &sb,
        "s_sess2_resume_random_text",
        &[
            "--resume",
            "0b9d3c2e-1111-4a2b-9c3d-5e6f7a8b9c0d",
            "-p",
            "x",
            "--skip-trust",
        ],
        42,
    );
    check(&sb, "s_sess2_delete_1", &["--delete-session", "1"], 0);
    check(&sb, "s_sess2_list_after_delete", &["--list-sessions"], 0);
    check(&sb, "s_sess2_delete_99", &["--delete-session", "99"], 0);
    check(&sb, "s_sess2_delete_uuid", &["--delete-session", &c], 0);

    // Same HOME, another project directory.
    let other = sb.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    sb.cwd = other;
    check(
        &sb,
        "s_sess2_othercwd_resume_uuid",
        &[
            "--resume",
            &c,
            "-p",
            "other cwd",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        42,
    );
    check(&sb, "s_sess2_othercwd_list", &["--list-sessions"], 0);
    check(
        &sb,
        "s_sess2_othercwd_delete_1",
        &["--delete-session", "1"],
        0,
    );
    check(
        &sb,
        "s_sess2_othercwd_resume_latest",
        &[
            "--resume",
            "latest",
            "-p",
            "other cwd latest",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
}

#[test]
fn a_resume_in_a_later_minute_loses_the_session_behind_the_switch() {
    let mut sb = sandbox("sw6");
    sb.set("FAKE_GEMINI_SESSION_LOSS", Some("1"));
    let a = init_id(
        &String::from_utf8(
            sb.run(
                &[
                    "-p",
                    "session two beta",
                    "-o",
                    "stream-json",
                    "--skip-trust",
                ],
                None,
            )
            .stdout,
        )
        .unwrap(),
    );
    sb.set("FAKE_GEMINI_NOW", Some("2026-11-30T00:12:26.000Z"));
    let out = check(
        &sb,
        "s_sess2_rollover_resume",
        &[
            "--resume",
            &a,
            "-p",
            "resume in a later minute",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), a);
    check(&sb, "s_sess2_rollover_list", &["--list-sessions"], 0);
    check(&sb, "s_sess2_rollover_list2", &["--list-sessions"], 0);
    let o = sb.run(&["--resume", &a, "-p", "x", "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(42), "the session is gone");

    // Without the switch the same sequence keeps the session.
    let mut sb = sandbox("sw7");
    let a = init_id(
        &String::from_utf8(
            sb.run(&["-p", "kept", "-o", "stream-json", "--skip-trust"], None)
                .stdout,
        )
        .unwrap(),
    );
    sb.set("FAKE_GEMINI_NOW", Some("2026-11-30T00:12:26.000Z"));
    assert_eq!(
        sb.run(&["--resume", &a, "-p", "again", "--skip-trust"], None)
            .status
            .code(),
        Some(0)
    );
    let list = String::from_utf8(sb.run(&["--list-sessions"], None).stdout).unwrap();
    assert_eq!(listed_ids(&list), [a]);
}

#[test]
fn concurrent_runs_record_every_session() {
    let sb = sandbox("sw8");
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let mut c = sb.cmd(&["-p", &format!("parallel {i}"), "--skip-trust"]);
            c.stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            c.spawn().unwrap()
        })
        .collect();
    for mut h in handles {
        assert!(h.wait().unwrap().success());
    }
    let list = String::from_utf8(sb.run(&["--list-sessions"], None).stdout).unwrap();
    assert_eq!(listed_ids(&list).len(), 8, "{list}");
}

/// Observed on 0.61 (`fake-gemini/differential/concurrent-sessions.py`): a run that starts
/// while another run's new session has not recorded its prompt yet deletes that session.
#[test]
fn a_start_before_a_new_session_recorded_its_prompt_loses_it_behind_the_switch() {
    use std::io::BufRead;
    let mut sb = sandbox("sw9");
    sb.set("FAKE_GEMINI_SESSION_LOSS", Some("1"));
    let mut a = sb.cmd(&[
        "-p",
        "slow [[fake-gemini:success delay-ms=1500]]",
        "-o",
        "stream-json",
        "--skip-trust",
    ]);
    a.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut a = a.spawn().unwrap();
    let mut a_out = std::io::BufReader::new(a.stdout.take().unwrap());
    let mut init = String::new();
    a_out.read_line(&mut init).unwrap();
    let a_id = init_id(&init);
    // A's file holds only its header for the next 1.5 s: B's start deletes it.
    let b = sb.run(&["-p", "quick", "-o", "stream-json", "--skip-trust"], None);
    let b_id = init_id(&String::from_utf8(b.stdout).unwrap());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut a_out, &mut rest).unwrap();
    assert!(a.wait().unwrap().success());
    assert!(rest.contains(r#""status":"success""#), "{rest}");
    let list = String::from_utf8(sb.run(&["--list-sessions"], None).stdout).unwrap();
    assert_eq!(listed_ids(&list), [b_id], "{list}");
    let o = sb.run(&["--resume", &a_id, "-p", "x", "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(42), "A's session is gone");

    // One after the other, both stay.
    let mut sb = sandbox("sw10");
    sb.set("FAKE_GEMINI_SESSION_LOSS", Some("1"));
    sb.run(
        &[
            "-p",
            "slow [[fake-gemini:success delay-ms=200]]",
            "--skip-trust",
        ],
        None,
    );
    sb.run(&["-p", "quick", "--skip-trust"], None);
    let list = String::from_utf8(sb.run(&["--list-sessions"], None).stdout).unwrap();
    assert_eq!(listed_ids(&list).len(), 2, "{list}");
}

#[test]
fn a_resume_moves_the_session_to_the_end_of_the_listing() {
    let sb = sandbox("sw5");
    let mut ids = Vec::new();
    for p in ["prompt a", "prompt b", "prompt c"] {
        ids.push(init_id(
            &String::from_utf8(
                sb.run(&["-p", p, "-o", "stream-json", "--skip-trust"], None)
                    .stdout,
            )
            .unwrap(),
        ));
    }
    let list = check(&sb, "s_sess3_list_before_resumes", &["--list-sessions"], 0);
    assert_eq!(listed_ids(&list), ids);
    let out = check(
        &sb,
        "s_sess3_resume_latest",
        &[
            "--resume",
            "latest",
            "-p",
            "rl",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), ids[2]);
    let out = check(
        &sb,
        "s_sess3_resume_1",
        &[
            "--resume",
            "1",
            "-p",
            "r1",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        0,
    );
    assert_eq!(init_id(&out), ids[0]);
    let list = check(
        &sb,
        "s_sess3_list_after_resume_latest_and_1",
        &["--list-sessions"],
        0,
    );
    assert_eq!(
        listed_ids(&list),
        [ids[1].clone(), ids[2].clone(), ids[0].clone()]
    );
}

#[test]
fn listing_ignores_json_output_and_tells_the_age() {
    let mut sb = sandbox("sw1");
    sb.run(&["-p", "one", "--skip-trust"], None);
    sb.run(&["-p", "two", "--skip-trust"], None);
    sb.run(
        &["--session-id", "not-a-uuid", "-p", "three", "--skip-trust"],
        None,
    );
    sb.set("FAKE_GEMINI_NOW", Some("2026-11-30T00:19:30.000Z"));
    check(
        &sb,
        "s_sess_list_o_json",
        &["--list-sessions", "-o", "json"],
        0,
    );
}
