//! `geminicli-mcp setup` as a user runs it: the binary in a private home (never the real one),
//! its report, its exit code, and the command it writes into the entries.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `geminicli-mcp setup args` with `home` as the only home and nothing on `PATH`.
fn setup(home: &Path, args: &[&str], launcher: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_geminicli-mcp"));
    cmd.arg("setup")
        .args(args)
        .env("HOME", home)
        .env("USERPROFILE", home)
        .env("APPDATA", home.join("AppData"))
        .env("PATH", "")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("GEMINICLI_MCP_LAUNCHER");
    if let Some(l) = launcher {
        cmd.env("GEMINICLI_MCP_LAUNCHER", l);
    }
    cmd.output().expect("run geminicli-mcp")
}

/// Output bytes as text.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn setup_writes_this_binary_and_fails_only_for_the_broken_file() {
    let home = tempfile::tempdir().unwrap();
    let cursor = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, "{\"mcpServers\": {,}}").unwrap();

    let out = setup(home.path(), &["codex", "cursor", "gemini-cli"], None);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("codex: added `gemini`"), "{stdout}");
    assert!(stdout.contains("gemini-cli: added `gemini`"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "error: cursor: {}: cannot parse it",
            cursor.display()
        )) && stderr.contains("line 1 column"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&cursor).unwrap(),
        "{\"mcpServers\": {,}}"
    );

    // The entry runs the binary that ran setup, by its absolute path.
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_geminicli-mcp")).unwrap();
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.path().join(".gemini/settings.json")).unwrap())
            .unwrap();
    let command = settings["mcpServers"]["gemini"]["command"]
        .as_str()
        .unwrap();
    assert_eq!(std::fs::canonicalize(command).unwrap(), exe);
}

#[test]
fn setup_under_npx_writes_npx() {
    let home = tempfile::tempdir().unwrap();
    let launcher = "/home/u/.npm/_npx/0123abcd/node_modules/geminicli-mcp/bin/geminicli-mcp";
    let out = setup(home.path(), &["--dry-run", "codex"], Some(launcher));
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("  + command = \"npx\""), "{stdout}");
    assert!(
        stdout.contains("  + args = [\"-y\", \"geminicli-mcp\"]"),
        "{stdout}"
    );
    assert!(
        !home.path().join(".codex").exists(),
        "a dry run writes nothing"
    );
    // The launcher's variable is the server's own: serving or setup never calls it unknown.
    assert!(!text(&out.stderr).contains("not a setting"), "{out:?}");
}

#[test]
fn setup_without_a_client_installed_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = setup(home.path(), &[], None);
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.matches("skipped, not installed").count(),
        6,
        "{stdout}"
    );
    assert!(stdout.contains("no client found"), "{stdout}");
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}
