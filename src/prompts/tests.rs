use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::git::{self, Changes, Gathered, GitError, MAX_DIFF_BYTES};
use super::*;
use crate::config::settings::Policy;
use crate::policy;

fn run_git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

/// A repository with one commit of `a.txt`, in a fresh temp dir (canonical).
fn repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = policy::canonical(dir.path()).expect("canonical");
    run_git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "one\n").expect("write");
    run_git(&root, &["add", "a.txt"]);
    run_git(&root, &["commit", "-q", "-m", "first"]);
    (dir, root)
}

fn args(v: serde_json::Value) -> JsonObject {
    v.as_object().cloned().expect("an object")
}

async fn get_text(name: &str, a: serde_json::Value, cwd: &Path) -> Result<String, McpError> {
    let policy = Policy::default();
    let roots = Roots::new(&policy, cwd, None);
    let result = get(name, Some(&args(a)), &roots).await?;
    Ok(result.messages[0]
        .content
        .as_text()
        .expect("a text message")
        .text
        .clone())
}

#[test]
fn changes_are_read_and_flags_refused() {
    assert_eq!(Changes::parse(None), Ok(Changes::Uncommitted));
    assert_eq!(Changes::parse(Some(" ")), Ok(Changes::Uncommitted));
    assert_eq!(Changes::parse(Some("staged")), Ok(Changes::Staged));
    assert_eq!(
        Changes::parse(Some("main..HEAD")),
        Ok(Changes::Range("main..HEAD".into()))
    );
    assert_eq!(
        Changes::parse(Some("HEAD~3..")),
        Ok(Changes::Range("HEAD~3..".into()))
    );
    assert_eq!(
        Changes::parse(Some("abc123")),
        Ok(Changes::Commit("abc123".into()))
    );
    for bad in [
        "--output=/tmp/x",
        "-p",
        "main..--all",
        "a b",
        "..",
        "x;rm",
        "$(x)",
    ] {
        assert!(Changes::parse(Some(bad)).is_err(), "{bad} accepted");
    }
}

#[test]
fn every_prompt_is_listed_with_a_description() {
    let names: Vec<String> = list().into_iter().map(|p| p.name).collect();
    assert_eq!(names, [REVIEW, SECOND_OPINION, READ]);
    assert!(list().iter().all(|p| p.description.is_some()));
}

#[tokio::test]
async fn a_review_carries_the_diff_and_asks_for_plan() {
    let (_dir, root) = repo();
    std::fs::write(root.join("a.txt"), "two\n").expect("write");
    std::fs::write(root.join("new.txt"), "fresh\n").expect("write");
    let text = get_text(REVIEW, json!({"focus": "naming"}), &root)
        .await
        .expect("a review");
    assert!(text.contains("Call gemini_prompt_with_context"), "{text}");
    assert!(text.contains("approval_mode: \"plan\""), "{text}");
    assert!(text.contains("timeout_total_ms: "), "{text}");
    assert!(text.contains("Focus: naming"), "{text}");
    assert!(text.contains("-one\n+two"), "{text}");
    assert!(text.contains("+fresh"), "untracked file missing: {text}");
}

#[tokio::test]
async fn a_review_limited_to_paths_shows_only_them() {
    let (_dir, root) = repo();
    std::fs::create_dir(root.join("sub")).expect("mkdir");
    std::fs::write(root.join("sub/b.txt"), "bee\n").expect("write");
    std::fs::write(root.join("a.txt"), "two\n").expect("write");
    let text = get_text(REVIEW, json!({"paths": "sub"}), &root)
        .await
        .expect("a review");
    assert!(text.contains("+bee"), "{text}");
    assert!(!text.contains("+two"), "{text}");
}

#[tokio::test]
async fn a_diff_past_the_bound_says_so_and_sends_nothing() {
    let (_dir, root) = repo();
    std::fs::write(root.join("a.txt"), "x".repeat(MAX_DIFF_BYTES + 1)).expect("write");
    let text = get_text(REVIEW, json!({}), &root).await.expect("a message");
    assert!(text.contains("nothing was sent"), "{text}");
    assert!(text.contains("`paths`"), "{text}");
    assert!(text.contains("a.txt"), "the stat names the file: {text}");
    assert!(!text.contains("<diff>"), "{text}");
}

#[tokio::test]
async fn a_range_and_a_commit_are_reviewed() {
    let (_dir, root) = repo();
    std::fs::write(root.join("a.txt"), "two\n").expect("write");
    run_git(&root, &["commit", "-q", "-am", "second"]);
    let text = get_text(REVIEW, json!({"changes": "HEAD~1..HEAD"}), &root)
        .await
        .expect("a review");
    assert!(text.contains("+two"), "{text}");
    let text = get_text(REVIEW, json!({"changes": "HEAD~1"}), &root)
        .await
        .expect("a review");
    assert!(
        text.contains("+one"),
        "the first commit's own change: {text}"
    );
    let e = get_text(REVIEW, json!({"changes": "nosuch..HEAD"}), &root)
        .await
        .unwrap_err();
    assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(
        e.message.contains("\"nosuch\" is not a commit"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn nothing_to_review_says_so() {
    let (_dir, root) = repo();
    let text = get_text(REVIEW, json!({"changes": "staged"}), &root)
        .await
        .expect("a message");
    assert!(text.starts_with("There is nothing to review"), "{text}");
}

#[tokio::test]
async fn bad_arguments_are_invalid_params() {
    let (_dir, root) = repo();
    let outside = tempfile::tempdir().expect("temp dir");
    let cases = [
        (REVIEW, json!({"changes": "--output=x"}), "changes"),
        (
            REVIEW,
            json!({"paths": "missing.txt"}),
            "paths \"missing.txt\"",
        ),
        (
            REVIEW,
            json!({"paths": "../.."}),
            "outside the allowed roots",
        ),
        (REVIEW, json!({"focus": 5}), "focus must be a string"),
        (
            SECOND_OPINION,
            json!({"question": 1}),
            "question must be a string",
        ),
        (READ, json!({"question": "q"}), "paths is required"),
        (
            READ,
            json!({"paths": "a.txt", "question": "q", "workspace": outside.path().to_str()}),
            "workspace",
        ),
        ("nosuch", json!({}), "unknown prompt: nosuch"),
    ];
    for (name, a, says) in cases {
        let e = get_text(name, a.clone(), &root).await.unwrap_err();
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{name} {a}");
        assert!(e.message.contains(says), "{name} {a}: {}", e.message);
    }
}

#[tokio::test]
async fn a_folder_outside_git_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = policy::canonical(dir.path()).expect("canonical");
    let e = get_text(REVIEW, json!({}), &root).await.unwrap_err();
    assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(
        e.message.contains("not in a git work tree"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn a_read_hands_gemini_the_paths_not_their_text() {
    let (_dir, root) = repo();
    let text = get_text(READ, json!({"paths": "a.txt .", "question": "how?"}), &root)
        .await
        .expect("a read");
    assert!(text.contains("Call gemini_prompt with"), "{text}");
    assert!(
        text.contains("files and folders: a.txt, .. Then answer: how?"),
        "{text}"
    );
    assert!(!text.contains("one"), "the file's text was pasted: {text}");
    assert!(text.contains("approval_mode: \"plan\""), "{text}");
}

#[tokio::test]
async fn a_second_opinion_quotes_the_question() {
    let (_dir, root) = repo();
    let text = get_text(SECOND_OPINION, json!({"question": "Is X right?"}), &root)
        .await
        .expect("a message");
    assert!(text.contains("Call gemini_prompt with"), "{text}");
    assert!(
        text.ends_with("<question>\nIs X right?\n</question>"),
        "{text}"
    );
}

#[tokio::test]
async fn without_a_question_the_conversation_holds_it() {
    let (_dir, root) = repo();
    let text = get_text(SECOND_OPINION, json!({"question": ""}), &root)
        .await
        .expect("a message");
    assert!(
        text.contains("the question or plan at hand in this conversation"),
        "{text}"
    );
    assert!(!text.contains("<question>"), "{text}");
    let text = get_text(READ, json!({"paths": "a.txt,."}), &root)
        .await
        .expect("a message");
    assert!(
        text.contains("- prompt: \"Read these in full, files and folders: a.txt, ..\" then the question this conversation asks about them\n"),
        "{text}"
    );
}

#[test]
fn relative_paths_stay_in_the_workspace() {
    let ws = Path::new("/w");
    assert_eq!(git::relative(ws, Path::new("/w")), Some(".".into()));
    assert_eq!(git::relative(ws, Path::new("/w/a/b")), Some("a/b".into()));
    assert_eq!(git::relative(ws, Path::new("/x")), None);
    let _ = (
        GitError::Failed(String::new()),
        Gathered::TooLarge {
            stat: String::new(),
        },
    );
}
