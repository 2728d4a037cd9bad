//! The skills and their installation against a private home folder (a temporary directory, never
//! the real `HOME`): where each client gets them, idempotence, updates, removal that takes only
//! ours, dry runs, and folders that are the user's.

use std::fs;
use std::path::PathBuf;

use super::*;
use crate::setup::tests::Home;
use crate::setup::Client;

/// The folder `client` takes skills from, in `home`.
fn skills(home: &Home, client: Client) -> PathBuf {
    client.skills_dir(&home.env).unwrap()
}

#[test]
fn each_skill_has_the_front_matter_the_clients_read_and_a_short_description() {
    for skill in SKILLS {
        assert_eq!(skill.field("name"), Some(skill.name), "{}", skill.name);
        let description = skill.field("description").unwrap_or_default();
        // What every request carries: under 100 tokens, counting a token as 4 characters (the
        // mocks' measure in docs/clients.md; real tokenizers count English prose shorter).
        assert!(
            !description.is_empty() && description.len() < 400,
            "{}: {} characters",
            skill.name,
            description.len()
        );
        assert!(
            !description.contains(": "),
            "{}: YAML needs quotes",
            skill.name
        );
    }
}

#[test]
fn each_skill_names_only_tools_the_server_has_and_never_asks_for_yolo() {
    let tools = [
        "gemini_prompt",
        "gemini_prompt_with_context",
        "gemini_prompt_structured",
        "gemini_read_answer",
        "gemini_start",
        "gemini_wait",
        "gemini_cancel",
        "gemini_jobs",
    ];
    let word = regex::Regex::new(r"\bgemini_[a-z_]+").unwrap();
    for skill in SKILLS {
        let named: Vec<&str> = word.find_iter(skill.text).map(|m| m.as_str()).collect();
        assert!(!named.is_empty(), "{} names no tool", skill.name);
        for tool in named {
            assert!(tools.contains(&tool), "{}: no tool {tool}", skill.name);
        }
        assert!(skill.text.contains("`approval_mode`"), "{}", skill.name);
        assert!(skill.text.contains("\"plan\""), "{}", skill.name);
        for line in skill.text.lines().filter(|l| l.contains("yolo")) {
            assert!(line.contains("Never"), "{}: {line}", skill.name);
        }
    }
}

#[test]
fn setup_installs_the_skills_where_each_client_loads_them() {
    let home = Home::new();
    let out = home.setup_ok(&[
        "claude-code",
        "codex",
        "gemini-cli",
        "cursor",
        "vscode",
        "claude-desktop",
    ]);
    let root = home.dir.path();
    for (client, dir) in [
        (Client::ClaudeCode, ".claude/skills"),
        (Client::Codex, ".codex/skills"),
        (Client::GeminiCli, ".gemini/skills"),
    ] {
        let dir = root.join(dir);
        assert_eq!(skills(&home, client), dir);
        for skill in SKILLS {
            let text = fs::read_to_string(dir.join(skill.name).join("SKILL.md")).unwrap();
            assert_eq!(text, skill.text);
        }
        let record: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join(RECORD)).unwrap()).unwrap();
        assert_eq!(record.as_object().unwrap().len(), SKILLS.len());
        assert!(
            out.contains(&format!(
                "{}: skills added: gemini-review, gemini-second-opinion, gemini-large-read, \
                 gemini-delegate in {}",
                client.name(),
                dir.display()
            )),
            "{out}"
        );
    }
    for client in [Client::Cursor, Client::Vscode, Client::ClaudeDesktop] {
        assert!(client.skills_dir(&home.env).is_none());
        assert!(
            !out.contains(&format!("{}: skills", client.name())),
            "{out}"
        );
    }
}

#[test]
fn codex_home_moves_the_codex_skills() {
    let mut home = Home::new();
    let codex_home = home.dir.path().join("elsewhere");
    home.env.codex_home = Some(codex_home.clone());
    home.setup_ok(&["codex"]);
    assert!(codex_home.join("skills/gemini-review/SKILL.md").is_file());
    assert!(!home.dir.path().join(".codex").exists());
}

#[test]
fn a_second_setup_changes_nothing_and_says_so() {
    let home = Home::new();
    home.setup_ok(&["claude-code", "codex", "gemini-cli"]);
    let before = home.snapshot();
    let out = home.setup_ok(&["claude-code", "codex", "gemini-cli"]);
    assert_eq!(home.snapshot(), before);
    assert_eq!(out.matches(": skills unchanged: ").count(), 3, "{out}");
    assert!(!out.contains("skills added"), "{out}");
}

#[test]
fn a_client_not_installed_gets_no_skills() {
    let home = Home::new();
    fs::create_dir_all(home.dir.path().join(".codex")).unwrap();
    let out = home.setup_ok(&[]);
    assert!(out.contains("codex: skills added"), "{out}");
    assert!(!home.dir.path().join(".claude").exists(), "{out}");
    assert!(!home.dir.path().join(".gemini").exists(), "{out}");
}

#[test]
fn no_skills_writes_only_the_entry() {
    let home = Home::new();
    let out = home.setup_ok(&["--no-skills", "claude-code"]);
    assert!(out.contains("added `gemini`"), "{out}");
    assert!(!skills(&home, Client::ClaudeCode).exists(), "{out}");
}

#[test]
fn an_earlier_unedited_version_is_updated_and_an_edited_one_left_alone() {
    let home = Home::new();
    let dir = skills(&home, Client::GeminiCli);
    home.setup_ok(&["gemini-cli"]);
    // An earlier release's text, recorded as written by setup.
    let old = "---\nname: gemini-review\ndescription: old\n---\nold body\n";
    fs::write(dir.join("gemini-review/SKILL.md"), old).unwrap();
    let mut record: BTreeMap<String, String> =
        serde_json::from_slice(&fs::read(dir.join(RECORD)).unwrap()).unwrap();
    record.insert("gemini-review".into(), fingerprint(old.as_bytes()));
    fs::write(dir.join(RECORD), serde_json::to_vec(&record).unwrap()).unwrap();
    // The user's own edit of another one.
    let mine = "---\nname: gemini-delegate\ndescription: mine\n---\nmy rules\n";
    fs::write(dir.join("gemini-delegate/SKILL.md"), mine).unwrap();

    let out = home.setup_ok(&["gemini-cli"]);
    assert!(
        out.contains("gemini-cli: skills updated: gemini-review in"),
        "{out}"
    );
    assert!(
        out.contains("gemini-cli: skills left alone: gemini-delegate in")
            && out.contains("edited since setup wrote them"),
        "{out}"
    );
    assert_eq!(
        fs::read_to_string(dir.join("gemini-review/SKILL.md")).unwrap(),
        SKILLS[0].text
    );
    assert_eq!(
        fs::read_to_string(dir.join("gemini-delegate/SKILL.md")).unwrap(),
        mine
    );
    // And --remove leaves the edited one too.
    let out = home.setup_ok(&["--remove", "gemini-cli"]);
    assert!(out.contains("skills left alone: gemini-delegate"), "{out}");
    assert_eq!(
        fs::read_to_string(dir.join("gemini-delegate/SKILL.md")).unwrap(),
        mine
    );
}

#[test]
fn remove_takes_out_only_our_skills() {
    let home = Home::new();
    let dir = skills(&home, Client::ClaudeCode);
    let theirs = dir.join("my-skill/SKILL.md");
    fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    fs::write(&theirs, "---\nname: my-skill\ndescription: mine\n---\n").unwrap();
    home.setup_ok(&["claude-code"]);
    // A file of the user's beside one of ours keeps that folder.
    fs::write(dir.join("gemini-review/notes.txt"), "mine").unwrap();

    let out = home.setup_ok(&["--remove", "claude-code"]);
    assert!(out.contains("removed `gemini`"), "{out}");
    assert!(
        out.contains(
            "claude-code: skills removed: gemini-review, gemini-second-opinion, \
             gemini-large-read, gemini-delegate in"
        ),
        "{out}"
    );
    assert!(theirs.is_file());
    assert!(dir.join("gemini-review/notes.txt").is_file());
    assert!(!dir.join("gemini-review/SKILL.md").exists());
    for skill in &SKILLS[1..] {
        assert!(!dir.join(skill.name).exists(), "{}", skill.name);
    }
    assert!(!dir.join(RECORD).exists());

    let out = home.setup_ok(&["--remove", "claude-code"]);
    assert!(out.contains("skills nothing to remove"), "{out}");
}

#[test]
fn a_dry_run_shows_the_skills_and_writes_nothing() {
    let home = Home::new();
    let before = home.snapshot();
    let out = home.setup_ok(&["--dry-run", "claude-code", "codex", "gemini-cli"]);
    assert_eq!(home.snapshot(), before);
    assert_eq!(out.matches(": skills would add: ").count(), 3, "{out}");
    for skill in SKILLS {
        let line = format!(
            "  + {}/SKILL.md: {}",
            skill.name,
            skill.field("description").unwrap()
        );
        assert_eq!(out.matches(&line).count(), 3, "{out}");
    }
    home.setup_ok(&["codex"]);
    let before = home.snapshot();
    let out = home.setup_ok(&["--dry-run", "--remove", "codex"]);
    assert_eq!(home.snapshot(), before);
    assert!(
        out.contains("codex: skills would remove: gemini-review"),
        "{out}"
    );
}

#[cfg(unix)]
#[test]
fn a_linked_skill_folder_is_the_users() {
    let home = Home::new();
    let dir = skills(&home, Client::Codex);
    let elsewhere = home.dir.path().join("checkout/gemini-review");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::write(elsewhere.join("SKILL.md"), SKILLS[0].text).unwrap();
    fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("gemini-review")).unwrap();
    let out = home.setup_ok(&["codex"]);
    assert!(
        out.contains("codex: skills left alone: gemini-review"),
        "{out}"
    );
    let out = home.setup_ok(&["--remove", "codex"]);
    assert!(
        out.contains("codex: skills left alone: gemini-review"),
        "{out}"
    );
    assert!(elsewhere.join("SKILL.md").is_file());
    assert!(dir.join("gemini-review").is_symlink());
}
