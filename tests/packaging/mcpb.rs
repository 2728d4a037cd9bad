//! The Claude Desktop bundle (`.mcpb`) of this platform, built by `packaging/mcpb/build.mjs` from
//! the debug server and unpacked as a client unpacks it: its manifest declares the binary, the
//! tools the server lists and the settings mapped onto the server's variables, and its binary
//! runs. With the npm registry reachable, `mcpb validate` (the bundle format's own tool) checks
//! the manifest and the release's server.json with the bundle's sum validates against the
//! registry's schema; both are installed into a scratch folder, never into the repository.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::{available, platform, run_ok, workspace};

/// The settings the bundle asks for, and the variable of the server each one sets.
const SETTINGS: [(&str, &str); 4] = [
    ("gemini_api_key", "GEMINI_API_KEY"),
    ("allowed_root", "GEMINICLI_MCP_ALLOWED_ROOTS"),
    ("approval_mode", "GEMINICLI_MCP_APPROVAL_MODE"),
    ("gemini_cli", "GEMINI_CLI_BIN"),
];

/// Builds this platform's bundle into `dist` and returns its path.
fn build(dist: &Path, platform: &str) -> PathBuf {
    let server = gemini_mcp_conformance::bins::locate("geminicli-mcp");
    let out = run_ok(
        Command::new("node")
            .arg(workspace().join("packaging/mcpb/build.mjs"))
            .arg("--out")
            .arg(dist)
            .arg(format!(
                "{platform}={}",
                server.parent().expect("a binary has a directory").display()
            )),
    );
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let bundle = dist.join(format!(
        "geminicli-mcp-{}-{platform}.mcpb",
        env!("CARGO_PKG_VERSION")
    ));
    assert_eq!(Path::new(&printed), bundle);
    bundle
}

/// The names of the tools the server at `binary` lists by default.
fn listed_tools(binary: &Path, home: &Path) -> Vec<String> {
    let mut server = Command::new(binary)
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "packaging-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    drop(stdin);
    let out = server.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let list = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to tools/list: {out:?}"));
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// Asserts what the manifest of `platform`'s bundle declares.
fn assert_manifest(manifest: &Value, platform: &str) {
    let (os, _) = platform.split_once('-').unwrap();
    let exe = if os == "win32" { ".exe" } else { "" };
    assert_eq!(manifest["manifest_version"], "0.3");
    assert_eq!(manifest["name"], "geminicli-mcp");
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["server"]["type"], "binary");
    assert_eq!(
        manifest["server"]["entry_point"],
        format!("server/geminicli-mcp{exe}")
    );
    let config = &manifest["server"]["mcp_config"];
    assert_eq!(config["command"], "${__dirname}/server/geminicli-mcp");
    assert_eq!(manifest["compatibility"]["platforms"], json!([os]));

    let env = config["env"].as_object().unwrap();
    let settings = manifest["user_config"].as_object().unwrap();
    assert_eq!(env.len(), SETTINGS.len(), "{env:?}");
    assert_eq!(settings.len(), SETTINGS.len(), "{settings:?}");
    for (key, variable) in SETTINGS {
        assert_eq!(
            env[variable],
            format!("${{user_config.{key}}}"),
            "{variable}"
        );
        // A setting left empty must still give the server a value it reads: a client may hand
        // an unset `${user_config.X}` on unreplaced.
        let setting = &settings[key];
        assert!(
            setting["required"] == true || setting.get("default").is_some(),
            "{key} is optional without a default"
        );
    }
    let key = &settings["gemini_api_key"];
    assert_eq!(key["type"], "string");
    assert_eq!(key["sensitive"], true);
    // One folder: an env value is one string, and a multiple selection cannot be joined there.
    assert_eq!(settings["allowed_root"]["type"], "directory");
    assert_ne!(settings["allowed_root"]["multiple"], true);
    let ceiling = settings["approval_mode"]["default"].as_str().unwrap();
    assert!(
        ["plan", "default", "auto_edit", "yolo"].contains(&ceiling),
        "{ceiling}"
    );
}

/// Installs the bundle tool and a JSON Schema validator from the npm registry into `dir`;
/// false (and why, on stderr) when the registry cannot be reached.
fn install_checkers(dir: &Path) -> bool {
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "checkers", "version": "1.0.0", "private": true }"#,
    )
    .unwrap();
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefer-offline"])
        .args(["@anthropic-ai/mcpb@2", "ajv@8", "ajv-formats@3"])
        .current_dir(dir)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "cannot install @anthropic-ai/mcpb and ajv: skipping mcpb validate and the schema check\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.status.success()
}

/// Writes the release's server.json for `bundle` (the committed one plus the bundle and its sum)
/// under `scratch`, and validates it and the committed one with the ajv installed in `tools`.
fn assert_release_server_json(scratch: &Path, tools: &Path, bundle: &Path, platform: &str) {
    let release = scratch.join("server.json");
    run_ok(
        Command::new("node")
            .arg(workspace().join("packaging/registry/server-json.mjs"))
            .args([
                "--version",
                env!("CARGO_PKG_VERSION"),
                "--platforms",
                platform,
            ])
            .arg("--mcpb")
            .arg(bundle.parent().unwrap())
            .arg("--out")
            .arg(&release),
    );
    run_ok(
        Command::new("node")
            .arg(workspace().join("packaging/registry/validate.mjs"))
            .arg("--modules")
            .arg(tools)
            .arg(workspace().join("server.json"))
            .arg(&release),
    );
    let server: Value = serde_json::from_str(&std::fs::read_to_string(&release).unwrap()).unwrap();
    let added = server["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["registryType"] == "mcpb")
        .expect("the bundle's package");
    let file = bundle.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        added["identifier"],
        format!(
            "{}/releases/download/v{}/{file}",
            env!("CARGO_PKG_REPOSITORY"),
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(added["fileSha256"].as_str().unwrap().len(), 64);
}

#[test]
#[ignore = "builds the .mcpb bundle (node, unzip) and checks it with npm tools; see tests/packaging"]
fn bundle_declares_the_server_and_its_binary_runs() {
    if !(available("node", &["--version"])
        && available("npm", &["--version"])
        && available("unzip", &["-v"]))
    {
        eprintln!("node, npm or unzip not found: skipping");
        return;
    }
    let Some(platform) = platform() else {
        eprintln!("no bundle is built for this platform: skipping");
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let dist = root.path().join("dist");
    let bundle = build(&dist, platform);
    let unpacked = root.path().join("unpacked");
    run_ok(
        Command::new("unzip")
            .arg("-q")
            .arg(&bundle)
            .arg("-d")
            .arg(&unpacked),
    );

    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(unpacked.join("manifest.json")).unwrap())
            .unwrap();
    assert_manifest(&manifest, platform);
    for file in ["README.md", "LICENSE"] {
        assert!(unpacked.join(file).is_file(), "{file} is not in the bundle");
    }

    // The binary kept its execute bit through the zip, and is the server.
    let binary = unpacked.join(manifest["server"]["entry_point"].as_str().unwrap());
    let version = run_ok(Command::new(&binary).arg("--version"));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("geminicli-mcp {}", env!("CARGO_PKG_VERSION"))
    );
    let declared: Vec<&str> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(declared, listed_tools(&binary, root.path()));

    let tools = root.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    if !install_checkers(&tools) {
        return;
    }
    let validated = run_ok(
        Command::new("node")
            .arg(tools.join("node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"))
            .arg("validate")
            .arg(unpacked.join("manifest.json")),
    );
    assert!(
        String::from_utf8_lossy(&validated.stdout).contains("validation passes"),
        "{validated:?}"
    );

    assert_release_server_json(root.path(), &tools, &bundle, platform);
}
