//! `setup` against a private home folder (a temporary directory, never the real `HOME`): every
//! client's format fresh and existing, idempotence, removal, dry runs, and files it must not touch.

use std::fs;
use std::path::{Path, PathBuf};

use rstest::rstest;
use serde_json::{json, Value};

use super::*;

const EXE: &str = "/opt/geminicli-mcp/bin/geminicli-mcp";

/// A private home folder and the `Env` that points every client into it (the skills' tests use
/// it too).
pub(super) struct Home {
    pub(super) dir: tempfile::TempDir,
    pub(super) env: Env,
}

impl Home {
    /// An empty home; `PATH` holds nothing, so only folders show a client installed.
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            home: dir.path().to_path_buf(),
            xdg_config_home: None,
            appdata: Some(dir.path().join("AppData").join("Roaming")),
            codex_home: None,
            path: None,
            launch: Launch {
                launcher: None,
                exe: PathBuf::from(EXE),
            },
        };
        Self { dir, env }
    }

    /// Runs `setup` with `argv` (after `setup`); asserts it exits 0 and returns its stdout.
    pub(super) fn setup_ok(&self, argv: &[&str]) -> String {
        let (code, out, err) = self.setup(argv);
        assert_eq!(code, 0, "{out}{err}");
        out
    }

    /// Runs `setup` with `argv` (after `setup`); returns the exit code, stdout and stderr.
    fn setup(&self, argv: &[&str]) -> (i32, String, String) {
        let args = parse(argv);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&args, &self.env, &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    fn file(&self, client: Client) -> PathBuf {
        client.config_file(&self.env)
    }

    fn write(&self, client: Client, text: &str) -> PathBuf {
        let path = self.file(client);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn read(&self, client: Client) -> String {
        fs::read_to_string(self.file(client)).unwrap()
    }

    /// Every file under the home folder, with its bytes: what a run that must write nothing
    /// compares before and after.
    pub(super) fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        snapshot_of(self.dir.path())
    }

    fn backups(&self, client: Client) -> Vec<PathBuf> {
        let file = self.file(client);
        let prefix = format!("{}.bak-", file.file_name().unwrap().to_string_lossy());
        let mut found: Vec<PathBuf> = fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&prefix)
            })
            .collect();
        found.sort();
        found
    }
}

/// `argv` after `geminicli-mcp setup`, parsed as the binary parses it.
fn parse(argv: &[&str]) -> SetupArgs {
    let mut full = vec!["geminicli-mcp", "setup"];
    full.extend_from_slice(argv);
    match crate::config::Cli::try_parse_from(full).unwrap().command {
        Some(crate::config::Command::Setup(args)) => args,
        other => panic!("not setup: {other:?}"),
    }
}

/// The file's servers object, read as JSON (comments allowed).
fn servers(client: Client, text: &str) -> Value {
    let value = jsonc_parser::parse_to_serde_value(text, &Default::default())
        .unwrap()
        .unwrap_or(Value::Null);
    let Format::Json { key } = client.format() else {
        panic!("not JSON");
    };
    value[key].clone()
}

/// `[mcp_servers.gemini]` of a Codex file, read by the `toml` crate rather than toml_edit.
fn codex_table(text: &str) -> ::toml::Table {
    let doc: ::toml::Table = ::toml::from_str(text).unwrap();
    doc["mcp_servers"]["gemini"].as_table().unwrap().clone()
}

const JSON_CLIENTS: [Client; 5] = [
    Client::ClaudeCode,
    Client::GeminiCli,
    Client::Cursor,
    Client::ClaudeDesktop,
    Client::Vscode,
];

#[rstest]
#[case(Client::ClaudeCode, json!({"type": "stdio", "command": EXE, "args": [], "env": {}}))]
#[case(Client::GeminiCli, json!({"command": EXE, "env": {"GEMINI_API_KEY": "$GEMINI_API_KEY"}, "trust": true}))]
#[case(Client::Cursor, json!({"command": EXE}))]
#[case(Client::ClaudeDesktop, json!({"command": EXE}))]
#[case(Client::Vscode, json!({"type": "stdio", "command": EXE}))]
fn a_fresh_json_file_gets_the_entry_and_is_private(#[case] client: Client, #[case] want: Value) {
    let home = Home::new();
    let (code, out, err) = home.setup(&[client.name()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("added `gemini`") && out.contains("(new file)"),
        "{out}"
    );
    let text = home.read(client);
    assert_eq!(servers(client, &text), json!({"gemini": want}));
    assert!(text.ends_with('\n'));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(home.file(client))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn a_fresh_codex_file_gets_the_table_codex_exec_needs() {
    let home = Home::new();
    let (code, _, err) = home.setup(&["codex"]);
    assert_eq!(code, 0, "{err}");
    let text = home.read(Client::Codex);
    assert_eq!(
        text,
        format!(
            "[mcp_servers.gemini]\ncommand = \"{EXE}\"\ndefault_tools_approval_mode = \"approve\"\n\
             env_vars = [\"GEMINI_API_KEY\"]\ntool_timeout_sec = 600\n"
        )
    );
}

#[test]
fn codex_home_moves_the_codex_file() {
    let mut home = Home::new();
    let codex_home = home.dir.path().join("elsewhere");
    home.env.codex_home = Some(codex_home.clone());
    assert_eq!(home.setup(&["codex"]).0, 0);
    assert!(codex_home.join("config.toml").is_file());
    assert!(!home.dir.path().join(".codex").exists());
}

/// A settings file with comments, trailing commas and another server; `SERVERS` is replaced by
/// the client's key.
const JSONC_WITH_OTHERS: &str = r#"{
    // my servers
    "theme": "dark", /* keep */
    "SERVERS": {
        "other": {"command": "other-server", "args": ["--x"]}, // another server
    },
    "after": [1, 2,],
}
"#;

/// [`JSONC_WITH_OTHERS`] with the client's servers key.
fn with_key(client: Client) -> String {
    let Format::Json { key } = client.format() else {
        unreachable!()
    };
    JSONC_WITH_OTHERS.replace("SERVERS", key)
}

#[rstest]
fn an_existing_json_file_keeps_its_comments_and_other_servers(
    #[values(
        Client::ClaudeCode,
        Client::GeminiCli,
        Client::Cursor,
        Client::ClaudeDesktop,
        Client::Vscode
    )]
    client: Client,
) {
    let home = Home::new();
    let original = with_key(client);
    home.write(client, &original);
    let (code, out, err) = home.setup(&[client.name()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("added `gemini`") && out.contains("(backup: "),
        "{out}"
    );
    let text = home.read(client);
    // The file up to the new entry is byte for byte the old one, comments and trailing commas too.
    let cut = original.find("// another server").unwrap() + "// another server".len();
    assert_eq!(&text[..cut], &original[..cut], "{text}");
    assert!(text.ends_with("    \"after\": [1, 2,],\n}\n"), "{text}");
    let servers = servers(client, &text);
    assert_eq!(
        servers["other"],
        json!({"command": "other-server", "args": ["--x"]})
    );
    assert_eq!(servers["gemini"]["command"], json!(EXE));
    // The backup is the old file.
    let backups = home.backups(client);
    assert_eq!(backups.len(), 1);
    assert_eq!(fs::read_to_string(&backups[0]).unwrap(), original);
}

#[test]
fn an_existing_codex_file_keeps_its_comments_and_other_servers() {
    let home = Home::new();
    let original = "# my codex\nmodel = \"gpt-5.5\" # pinned\n\n[mcp_servers.other]\ncommand = \"other-server\" # another\n\n[profiles.x]\nmodel = \"o3\"\n";
    home.write(Client::Codex, original);
    let (code, _, err) = home.setup(&["codex"]);
    assert_eq!(code, 0, "{err}");
    let text = home.read(Client::Codex);
    // The new table joins the other servers' tables; everything else is as it was.
    let block = format!(
        "[mcp_servers.gemini]\ncommand = \"{EXE}\"\ndefault_tools_approval_mode = \"approve\"\n\
         env_vars = [\"GEMINI_API_KEY\"]\ntool_timeout_sec = 600\n\n"
    );
    assert_eq!(
        text,
        original.replace("[profiles.x]", &format!("{block}[profiles.x]"))
    );
    assert_eq!(codex_table(&text)["command"].as_str(), Some(EXE));
    assert_eq!(home.backups(Client::Codex).len(), 1);
}

#[rstest]
fn a_second_setup_changes_nothing(
    #[values(
        Client::ClaudeCode,
        Client::Codex,
        Client::GeminiCli,
        Client::Cursor,
        Client::ClaudeDesktop,
        Client::Vscode
    )]
    client: Client,
) {
    let home = Home::new();
    assert_eq!(home.setup(&[client.name()]).0, 0);
    let before = home.snapshot();
    let (code, out, _) = home.setup(&[client.name()]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("{}: unchanged", client.name())),
        "{out}"
    );
    assert_eq!(home.snapshot(), before, "no write, no backup");
    let text = home.read(client);
    assert_eq!(text.matches("geminicli-mcp\"").count(), 1, "{text}");
}

#[rstest]
fn remove_takes_only_our_entry(
    #[values(
        Client::ClaudeCode,
        Client::GeminiCli,
        Client::Cursor,
        Client::ClaudeDesktop,
        Client::Vscode
    )]
    client: Client,
) {
    let home = Home::new();
    let original = with_key(client);
    home.write(client, &original);
    assert_eq!(home.setup(&[client.name()]).0, 0);
    let (code, out, err) = home.setup(&["--remove", client.name()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed `gemini`"), "{out}");
    let text = home.read(client);
    let servers = servers(client, &text);
    assert_eq!(
        servers,
        json!({"other": {"command": "other-server", "args": ["--x"]}})
    );
    assert!(
        text.contains("// my servers")
            && text.contains("/* keep */")
            && text.contains("// another server")
    );
    // Removing again finds nothing to do.
    let (code, out, _) = home.setup(&["--remove", client.name()]);
    assert_eq!(code, 0);
    assert!(out.contains("nothing to remove"), "{out}");
}

#[test]
fn remove_takes_only_our_codex_table() {
    let home = Home::new();
    let original = "# top\n[mcp_servers.other]\ncommand = \"other-server\"\n";
    home.write(Client::Codex, original);
    assert_eq!(home.setup(&["codex"]).0, 0);
    assert_eq!(home.setup(&["--remove", "codex"]).0, 0);
    assert_eq!(home.read(Client::Codex), original);
}

#[test]
fn remove_without_a_file_creates_none() {
    let home = Home::new();
    let (code, out, _) = home.setup(&["--remove", "codex", "cursor"]);
    assert_eq!(code, 0);
    assert!(out.contains("codex: nothing to remove"), "{out}");
    assert!(home.snapshot().is_empty());
}

#[test]
fn name_chooses_the_entry() {
    let home = Home::new();
    assert_eq!(home.setup(&["--name", "gem2", "cursor", "codex"]).0, 0);
    assert!(servers(Client::Cursor, &home.read(Client::Cursor))["gem2"].is_object());
    assert!(home.read(Client::Codex).contains("[mcp_servers.gem2]"));
    assert!(parse_name("a.b").is_err() && parse_name("").is_err());
}

#[rstest]
#[case(
    Client::GeminiCli,
    "{\n  \"mcpServers\": {\n    \"gemini\": {\n  }\n",
    "line 2 column 17"
)]
#[case(Client::Vscode, "{\"servers\": {]}", "line 1")]
#[case(Client::Codex, "[mcp_servers.gemini]\ncommand = \n", "line 2")]
fn an_unparseable_file_is_untouched_and_named(
    #[case] client: Client,
    #[case] text: &str,
    #[case] position: &str,
) {
    let home = Home::new();
    let path = home.write(client, text);
    let before = home.snapshot();
    let (code, out, err) = home.setup(&[client.name(), "cursor"]);
    assert_eq!(code, 1);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(
        err.contains("cannot parse it") && err.contains(position),
        "{err}"
    );
    assert!(err.contains("left untouched"), "{err}");
    // The other client still proceeds.
    assert!(out.contains("cursor: added"), "{out}");
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    assert!(home.backups(client).is_empty());
    assert!(before.iter().all(|f| home.snapshot().contains(f)));
}

#[rstest]
#[case(Client::ClaudeCode, "[1, 2]", "the top level is not an object")]
#[case(
    Client::Cursor,
    "{\"mcpServers\": []}",
    "`mcpServers` is not an object"
)]
#[case(
    Client::Vscode,
    "{\"servers\": {\"gemini\": \"x\"}}",
    "`servers.gemini` is not an object"
)]
#[case(
    Client::GeminiCli,
    "{\"mcpServers\": {}, \"mcpServers\": {}}",
    "`mcpServers` is given more than once"
)]
#[case(
    Client::Cursor,
    "{\"mcpServers\": {\"gemini\": {}, \"gemini\": {}}}",
    "`mcpServers.gemini` is given more than once"
)]
#[case(Client::Codex, "mcp_servers = 1\n", "`mcp_servers` is not a table")]
#[case(
    Client::Codex,
    "[mcp_servers]\ngemini = 2\n",
    "`mcp_servers.gemini` is not a table"
)]
fn a_file_of_another_shape_is_untouched(
    #[case] client: Client,
    #[case] text: &str,
    #[case] error: &str,
) {
    let home = Home::new();
    home.write(client, text);
    for argv in [vec![client.name()], vec!["--remove", client.name()]] {
        let (code, _, err) = home.setup(&argv);
        assert_eq!(code, 1);
        assert!(err.contains(error), "{err}");
        assert_eq!(home.read(client), text);
    }
}

#[test]
fn a_directory_or_binary_file_is_an_error_not_a_panic() {
    let home = Home::new();
    fs::create_dir_all(home.file(Client::Cursor)).unwrap();
    home.write(Client::GeminiCli, "");
    fs::write(home.file(Client::GeminiCli), b"{\"a\": \"\xff\"}").unwrap();
    let (code, out, err) = home.setup(&["cursor", "gemini-cli", "codex"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("cursor: ") && err.contains("mcp.json"),
        "{err}"
    );
    assert!(
        err.contains("gemini-cli: ") && err.contains("not UTF-8 text (invalid byte at offset 7)"),
        "{err}"
    );
    assert!(out.contains("codex: added"), "{out}");
    assert_eq!(
        fs::read(home.file(Client::GeminiCli)).unwrap(),
        b"{\"a\": \"\xff\"}"
    );
}

#[rstest]
fn a_dry_run_writes_nothing(
    #[values(false, true)] existing: bool,
    #[values(false, true)] remove: bool,
) {
    let home = Home::new();
    if existing {
        for client in JSON_CLIENTS {
            home.write(client, &with_key(client));
        }
        home.write(Client::Codex, "[mcp_servers.gemini]\ncommand = \"old\"\n");
    }
    let before = home.snapshot();
    let mut argv = vec![
        "--dry-run",
        "claude-code",
        "codex",
        "gemini-cli",
        "cursor",
        "claude-desktop",
        "vscode",
    ];
    if remove {
        argv.insert(0, "--remove");
    }
    let (code, out, err) = home.setup(&argv);
    assert_eq!(code, 0, "{err}");
    assert_eq!(home.snapshot(), before);
    if !remove {
        assert!(
            out.contains(&format!(
                "codex: would {} `gemini` in",
                if existing { "update" } else { "add" }
            )),
            "{out}"
        );
        assert!(out.contains(&format!("  + command = \"{EXE}\"")), "{out}");
        assert!(
            out.contains(&format!("  +   \"command\": \"{EXE}\"")),
            "{out}"
        );
    }
    if existing && !remove {
        assert!(out.contains("  - command = \"old\""), "{out}");
    }
    if existing && remove {
        assert!(out.contains("codex: would remove"), "{out}");
    }
}

#[test]
fn without_clients_only_the_installed_ones_are_set_up() {
    let mut home = Home::new();
    fs::create_dir_all(home.dir.path().join(".codex")).unwrap();
    fs::create_dir_all(home.dir.path().join(".config/Code/User")).unwrap();
    let bin = home.dir.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::write(
        bin.join(if cfg!(windows) {
            "gemini.cmd"
        } else {
            "gemini"
        }),
        "",
    )
    .unwrap();
    home.env.path = Some(bin.into_os_string());
    let (code, out, err) = home.setup(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("codex: found"), "{out}");
    assert!(
        out.contains("gemini-cli: found (`gemini` on PATH)"),
        "{out}"
    );
    assert!(out.contains("cursor: skipped, not installed"), "{out}");
    assert!(out.contains("claude-code: skipped, not installed"), "{out}");
    assert!(home.file(Client::Codex).is_file());
    assert!(home.file(Client::GeminiCli).is_file());
    assert!(!home.file(Client::Cursor).exists());
    assert!(!home.file(Client::ClaudeCode).exists());
    if !cfg!(any(windows, target_os = "macos")) {
        assert!(out.contains("vscode: found"), "{out}");
        assert!(home.file(Client::Vscode).is_file());
    }
}

#[test]
fn an_update_keeps_what_the_user_added_to_the_entry() {
    let home = Home::new();
    home.write(
        Client::GeminiCli,
        "{\"mcpServers\": {\"gemini\": {\"command\": \"old\", \"timeout\": 900000, // mine\n\"env\": {\"GEMINI_CLI_BIN\": \"/x\"}}}}",
    );
    home.write(
        Client::Codex,
        "[mcp_servers.gemini]\ncommand = \"old\"\ntool_timeout_sec = 1200 # long runs\nenv_vars = [\"OTHER\"]\n",
    );
    let (code, out, err) = home.setup(&["gemini-cli", "codex"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("gemini-cli: updated") && out.contains("codex: updated"),
        "{out}"
    );
    let gemini = &servers(Client::GeminiCli, &home.read(Client::GeminiCli))["gemini"];
    assert_eq!(gemini["command"], json!(EXE));
    assert_eq!(gemini["timeout"], json!(900_000));
    assert_eq!(
        gemini["env"],
        json!({"GEMINI_CLI_BIN": "/x", "GEMINI_API_KEY": "$GEMINI_API_KEY"})
    );
    assert!(home.read(Client::GeminiCli).contains("// mine"));
    let codex = home.read(Client::Codex);
    assert!(
        codex.contains("tool_timeout_sec = 1200 # long runs"),
        "{codex}"
    );
    let table = codex_table(&codex);
    assert_eq!(
        table["env_vars"],
        ::toml::Value::from(vec!["OTHER", "GEMINI_API_KEY"])
    );
}

#[test]
fn no_secret_value_is_written() {
    let home = Home::new();
    assert_eq!(
        home.setup(&[
            "claude-code",
            "codex",
            "gemini-cli",
            "cursor",
            "claude-desktop",
            "vscode"
        ])
        .0,
        0
    );
    for (path, bytes) in home.snapshot() {
        let text = String::from_utf8_lossy(&bytes);
        // The key appears only as a name: `$GEMINI_API_KEY` (expanded by the Gemini CLI) or in
        // Codex's list of variables to pass on.
        for (i, _) in text.match_indices("GEMINI_API_KEY") {
            let around = &text[i.saturating_sub(2)..(i + 16).min(text.len())];
            assert!(
                around.contains("$GEMINI_API_KEY")
                    || around.starts_with("[\"")
                    || around.contains("\"GEMINI_API_KEY\""),
                "{}: {text}",
                path.display()
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn the_file_mode_and_a_symlink_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    let real = home.dir.path().join("dotfiles").join("mcp.json");
    fs::create_dir_all(real.parent().unwrap()).unwrap();
    fs::write(&real, "{}\n").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
    let link = home.file(Client::Cursor);
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(home.setup(&["cursor"]).0, 0);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::metadata(&real).unwrap().permissions().mode() & 0o777,
        0o640
    );
    assert!(servers(Client::Cursor, &fs::read_to_string(&real).unwrap())["gemini"].is_object());
}

#[test]
fn a_byte_order_mark_stays() {
    let home = Home::new();
    home.write(Client::Vscode, "\u{feff}{\n  \"servers\": {}\n}\n");
    assert_eq!(home.setup(&["vscode"]).0, 0);
    let text = home.read(Client::Vscode);
    assert!(text.starts_with('\u{feff}'));
    assert!(servers(Client::Vscode, text.trim_start_matches('\u{feff}'))["gemini"].is_object());
}

#[rstest]
#[case(None, EXE, &[])]
#[case(Some("/usr/lib/node_modules/geminicli-mcp/bin/geminicli-mcp"), "/usr/lib/node_modules/geminicli-mcp/bin/geminicli-mcp", &[])]
#[case(Some("/home/u/.npm/_npx/1a2b/node_modules/geminicli-mcp/bin/geminicli-mcp"), "npx", &["-y", "geminicli-mcp"])]
fn the_entry_runs_what_ran_setup(
    #[case] launcher: Option<&str>,
    #[case] command: &str,
    #[case] args: &[&str],
) {
    let launch = Launch {
        launcher: launcher.map(PathBuf::from),
        exe: PathBuf::from(EXE),
    };
    let (c, a) = launch.command();
    if cfg!(windows) && launcher.is_some_and(|l| !l.contains("_npx")) {
        assert_eq!(c, EXE);
    } else {
        assert_eq!(c, command);
        assert_eq!(a, args);
    }
}

#[test]
fn the_npx_entry_has_its_args() {
    let mut home = Home::new();
    home.env.launch.launcher = Some(PathBuf::from(
        "/root/.npm/_npx/abc/node_modules/.bin/geminicli-mcp",
    ));
    assert_eq!(home.setup(&["claude-code", "codex"]).0, 0);
    let claude = servers(Client::ClaudeCode, &home.read(Client::ClaudeCode));
    assert_eq!(
        claude["gemini"],
        json!({"type": "stdio", "command": "npx", "args": ["-y", "geminicli-mcp"], "env": {}})
    );
    let table = codex_table(&home.read(Client::Codex));
    assert_eq!(
        table["args"],
        ::toml::Value::from(vec!["-y", "geminicli-mcp"])
    );
}

#[test]
fn a_key_the_user_set_in_env_stays() {
    let home = Home::new();
    // Not a secret: a value the user wrote, which `setup` must neither replace nor copy.
    let original = "{\"mcpServers\": {\"gemini\": {\"command\": \"x\", \"env\": {\"GEMINI_API_KEY\": \"users-own\"}}}}";
    home.write(Client::GeminiCli, original);
    assert_eq!(home.setup(&["gemini-cli"]).0, 0);
    let gemini = &servers(Client::GeminiCli, &home.read(Client::GeminiCli))["gemini"];
    assert_eq!(gemini["env"], json!({"GEMINI_API_KEY": "users-own"}));
    assert_eq!(gemini["command"], json!(EXE));
    assert_eq!(gemini["trust"], json!(true));
}

/// Every file and folder under `root`, with each file's bytes, sorted: a tree to compare before and
/// after a run that must write nothing.
pub(super) fn snapshot_of(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, acc: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                acc.push((p.clone(), Vec::new()));
                walk(&p, acc);
            } else {
                acc.push((p.clone(), fs::read(&p).unwrap_or_default()));
            }
        }
    }
    let mut acc = Vec::new();
    walk(root, &mut acc);
    acc.sort();
    acc
}
