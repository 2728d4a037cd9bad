//! `geminicli-mcp setup` checked by the clients themselves: after `setup claude-code codex
//! gemini-cli` in a private home, `claude mcp list` and `gemini mcp list` show the server connected
//! and `codex mcp list` lists it, and `gemini skills list` the skills; after `setup --remove` none
//! does; a server each client added itself survives both. The skills in the requests each client
//! sends its model: `skills::<client>`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{pinned, runs};

/// The pinned client's command, installed with npm into the clients' cache when missing (as the
/// driver does).
fn client_bin(client: &str, package: &str, command: &str) -> PathBuf {
    let cache = std::env::var_os("GEMINICLI_MCP_CLIENTS_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/geminicli-mcp/clients")
        });
    let version = pinned(client);
    let prefix = cache.join(format!("{}-{version}", package.rsplit('/').next().unwrap()));
    let bin = prefix.join("node_modules/.bin").join(command);
    if !bin.exists() {
        let fresh = tempfile::tempdir_in({
            std::fs::create_dir_all(&cache).unwrap();
            &cache
        })
        .unwrap();
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(fresh.path())
            .arg(format!("{package}@{version}"))
            .status()
            .expect("run npm");
        assert!(
            status.success(),
            "npm install {package}@{version}: {status}"
        );
        // Another run may have won the race; its install is as good.
        let _ = std::fs::rename(fresh.keep(), &prefix);
    }
    bin
}

/// Runs `program args` in the private home, offline, with fake keys; asserts it exits 0.
fn run(home: &Path, path: &std::ffi::OsStr, program: &Path, args: &[&str]) -> String {
    let out: Output = Command::new(program)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("PATH", path)
        .env_remove("XDG_CONFIG_HOME")
        .env("ANTHROPIC_API_KEY", "fake")
        .env("OPENAI_API_KEY", "fake")
        .env("GEMINI_API_KEY", "fake")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        // `gemini mcp list` shows no server in a folder it does not trust.
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{} {args:?}: {}\n{text}",
        program.display(),
        out.status
    );
    eprintln!(
        "$ {} {}\n{text}",
        program.file_name().unwrap().to_string_lossy(),
        args.join(" ")
    );
    text
}

/// The line of `listing` about server `name`, if any.
fn line<'a>(listing: &'a str, name: &str) -> Option<&'a str> {
    listing.lines().find(|l| {
        let l = l.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
        l.starts_with(&format!("{name}:")) || l.starts_with(&format!("{name} "))
    })
}

#[test]
#[ignore = "runs the real MCP clients (node, npm; installs them once); see tests/clients"]
fn setup_registers_the_server_and_remove_takes_it_out() {
    if !runs("node") || !runs("npm") {
        eprintln!("node or npm not found: skipping");
        return;
    }
    let claude = client_bin("claude", "@anthropic-ai/claude-code", "claude");
    let codex = client_bin("codex", "@openai/codex", "codex");
    let gemini = client_bin("gemini", "@google/gemini-cli", "gemini");
    let server = gemini_mcp_conformance::bins::locate("geminicli-mcp");
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    let dirs = [&claude, &codex, &gemini].map(|b| b.parent().unwrap().to_path_buf());
    let path = std::env::join_paths(dirs.iter().cloned().chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();

    run(
        home,
        &path,
        &claude,
        &["mcp", "add", "--scope", "user", "other", "--", "/bin/true"],
    );
    run(
        home,
        &path,
        &codex,
        &["mcp", "add", "other", "--", "/bin/true"],
    );
    run(
        home,
        &path,
        &gemini,
        &["mcp", "add", "--scope", "user", "other", "/bin/true"],
    );

    let clients = ["claude-code", "codex", "gemini-cli"];
    let out = run(home, &path, &server, &[&["setup"][..], &clients].concat());
    assert_eq!(out.matches("added `gemini`").count(), 3, "{out}");
    let listed = |program: &Path| run(home, &path, program, &["mcp", "list"]);
    let (c, x, g) = (listed(&claude), listed(&codex), listed(&gemini));
    assert!(
        line(&c, "gemini").is_some_and(|l| l.contains("Connected")),
        "{c}"
    );
    assert!(
        line(&x, "gemini").is_some_and(|l| l.contains("GEMINI_API_KEY")),
        "{x}"
    );
    assert!(
        line(&g, "gemini").is_some_and(|l| l.contains("Connected")),
        "{g}"
    );
    for listing in [&c, &x, &g] {
        assert!(line(listing, "other").is_some(), "{listing}");
    }
    let skills = run(home, &path, &gemini, &["skills", "list"]);
    for skill in SKILLS {
        assert!(skills.contains(&format!("{skill} [Enabled]")), "{skills}");
    }

    let again = run(home, &path, &server, &[&["setup"][..], &clients].concat());
    assert_eq!(again.matches(": unchanged: `gemini`").count(), 3, "{again}");
    assert_eq!(again.matches(": skills unchanged: ").count(), 3, "{again}");

    let out = run(
        home,
        &path,
        &server,
        &[&["setup", "--remove"][..], &clients].concat(),
    );
    assert_eq!(out.matches("removed `gemini`").count(), 3, "{out}");
    assert_eq!(out.matches(": skills removed: ").count(), 3, "{out}");
    for program in [&claude, &codex, &gemini] {
        let listing = listed(program);
        assert!(line(&listing, "gemini").is_none(), "{listing}");
        assert!(line(&listing, "other").is_some(), "{listing}");
    }
    let skills = run(home, &path, &gemini, &["skills", "list"]);
    for skill in SKILLS {
        assert!(!skills.contains(skill), "{skills}");
    }
}

/// The skills of plugins/geminicli-mcp/skills, which `setup` installs.
const SKILLS: [&str; 4] = [
    "gemini-delegate",
    "gemini-large-read",
    "gemini-review",
    "gemini-second-opinion",
];

/// After `setup`, the client lists every skill in the request to its model (the always-loaded
/// descriptions), and `invoke` (the client's own spelling of a skill command, if it has one)
/// loads `gemini-review` whole; after `setup --remove`, none is listed.
fn skills_reach_the_model(client: &str, invoke: Option<&str>) {
    let skills = |more: &[&str]| {
        let report = super::drive_with(client, "plain", more)?;
        let skills = report.skills.expect("the driver reports the skills");
        eprintln!("{}", skills.setup);
        Some(skills)
    };
    let Some(installed) = skills(&["--skills", "installed"]) else {
        return;
    };
    assert_eq!(installed.seen, SKILLS, "{client}");
    assert!(
        installed.used.is_empty(),
        "{client} loaded {:?}",
        installed.used
    );
    if let Some(command) = invoke {
        let invoked = skills(&["--skills", "installed", "--user-prompt", command]).unwrap();
        assert_eq!(invoked.used, ["gemini-review"], "{client}: {command}");
    }
    let removed = skills(&["--skills", "removed"]).unwrap();
    assert!(
        removed.seen.is_empty(),
        "{client} still lists {:?}",
        removed.seen
    );
}

mod skills {
    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn claude() {
        super::skills_reach_the_model("claude", Some("/gemini-review"));
    }

    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn codex() {
        super::skills_reach_the_model("codex", Some("$gemini-review"));
    }

    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn gemini() {
        super::skills_reach_the_model("gemini", None);
    }
}
