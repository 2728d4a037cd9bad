use super::*;
use crate::gemini::settings::{Layer, SystemFile};
use serde_json::json;

fn layer(layer: Layer, v: Value) -> LayerFile {
    LayerFile {
        layer,
        path: format!("/{layer:?}.json").into(),
        content: Ok(v.as_object().cloned()),
        check: SystemFile::Read,
    }
}

fn entry(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn this_server_is_recognised_by_command_under_any_name() {
    for ours in [
        json!({"command": "/usr/local/bin/geminicli-mcp"}),
        json!({"command": "C:\\tools\\geminicli-mcp.exe"}),
        json!({"command": "/usr/lib/node_modules/geminicli-mcp/bin/geminicli-mcp"}),
        json!({"command": "npx", "args": ["-y", "geminicli-mcp"]}),
        json!({"command": "npx", "args": ["-y", "geminicli-mcp@0.3.1"]}),
        json!({"command": "npx -y geminicli-mcp"}),
        json!({"command": "uvx", "args": ["geminicli-mcp==0.3.1"]}),
        json!({"command": "pipx", "args": ["run", "geminicli-mcp"]}),
        json!({"command": "node", "args": ["/opt/geminicli-mcp/bin/geminicli-mcp.js", "serve"]}),
    ] {
        assert!(is_ours(&entry(ours.clone())), "{ours}");
    }
    for theirs in [
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}),
        json!({"command": "sleep", "args": ["geminicli-mcp"]}),
        json!({"command": "/bin/geminicli-mcp-proxy"}),
        json!({"httpUrl": "http://127.0.0.1:9/mcp"}),
        json!({"command": "npx", "args": ["other", "geminicli-mcp-helper"]}),
    ] {
        assert!(!is_ours(&entry(theirs.clone())), "{theirs}");
    }
}

#[test]
fn the_highest_layer_wins_per_name_and_the_lists_combine_as_the_clis_do() {
    let layers = [
        layer(
            Layer::System,
            json!({"mcp": {"allowed": ["gh", "Gemini", "db"], "excluded": ["db"]}}),
        ),
        layer(
            Layer::Workspace,
            json!({"mcpServers": {"gh": {"command": "gh-mcp"}}}),
        ),
        layer(
            Layer::User,
            json!({"mcpServers": {
                "gh": {"command": "other"},
                "gemini": {"command": "npx", "args": ["-y", "geminicli-mcp"]},
                "db": {"command": "db-mcp"},
                "slow": {"command": "sleep", "args": ["100000"]}
            }, "mcp": {"allowed": ["gh", "gemini", "slow", "db"]}}),
        ),
    ];
    let s = of_layers(&layers);
    assert_eq!(s.configured.len(), 4);
    assert_eq!(
        s.configured[0].entry["command"], "gh-mcp",
        "the workspace's"
    );
    // allowed: intersected, compared without case, the first list's spelling kept.
    assert_eq!(
        s.allowed.as_deref(),
        Some(&["gh".to_owned(), "Gemini".into(), "db".into()][..])
    );
    assert_eq!(s.excluded, ["db"]);
    // "gemini" is allowed only as "Gemini" (the CLI compares exactly): not started.
    let started: Vec<&str> = s.started().map(|c| c.name.as_str()).collect();
    assert_eq!(started, ["gh"]);
}

#[test]
fn names_are_handed_only_to_leave_something_out() {
    let s = of_layers(&[layer(
        Layer::User,
        json!({"mcpServers": {
            "gemini": {"command": "geminicli-mcp"},
            "gh": {"command": "gh-mcp"},
            "odd name": {"command": "x"},
            "off": {"command": "y"},
            "nothing": {"env": {"A": "1"}}
        }, "mcp": {"excluded": ["off"]}}),
    )]);
    assert_eq!(s.ours(), ["gemini"]);
    assert_eq!(s.allowed_names(&[], &[]), None);
    assert_eq!(
        s.allowed_names(&[], &["off".into()]),
        None,
        "not started anyway"
    );
    assert_eq!(
        s.allowed_names(&[], &s.ours()),
        Some(vec!["gh".into()]),
        "excluded and unnameable ones stay out"
    );
    assert_eq!(s.allowed_names(&["gh".into()], &s.ours()), None);
    assert_eq!(
        s.allowed_names(&["gemini".into(), "gh".into()], &s.ours()),
        Some(vec!["gh".into()])
    );
    assert_eq!(
        s.allowed_names(&["gemini".into()], &s.ours()),
        Some(vec![NONE.into()])
    );
    let only_ours = of_layers(&[layer(
        Layer::User,
        json!({"mcpServers": {"g": {"command": "geminicli-mcp"}, "geminicli-mcp-none": {"command": "geminicli-mcp"}}}),
    )]);
    assert_eq!(
        only_ours.allowed_names(&[], &only_ours.ours()),
        Some(vec!["geminicli-mcp-none_".into()]),
        "a name no server has"
    );
}

#[test]
fn extensions_add_their_servers_after_the_settings() {
    let home = tempfile::tempdir().unwrap();
    let ext = home.path().join(".gemini/extensions/e1");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::write(
        ext.join("gemini-extension.json"),
        r#"{"name": "e1", "mcpServers": {"fromext": {"command": "e"}, "gh": {"command": "ignored"}}}"#,
    )
    .unwrap();
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        r#"{"mcpServers": {"gh": {"command": "gh-mcp"}}}"#,
    )
    .unwrap();
    let h = home.path().as_os_str().to_owned();
    let ws = tempfile::tempdir().unwrap();
    let var = move |k: &str| (k == "GEMINI_CLI_HOME").then(|| h.clone());
    let s = read(ws.path(), &var);
    let names: Vec<(&str, &str)> = s
        .configured
        .iter()
        .map(|c| (c.name.as_str(), c.entry["command"].as_str().unwrap()))
        .collect();
    assert!(names.contains(&("gh", "gh-mcp")), "{names:?}");
    assert!(names.contains(&("fromext", "e")), "{names:?}");
}

#[test]
fn a_server_started_by_a_servers_cli_says_so() {
    assert_eq!(nested(|_| None), None);
    let why = nested(|k| (k == NESTED_MARK).then(|| "77:3".into())).unwrap();
    assert!(why.contains("GEMINICLI_MCP_RUN=77:3"), "{why}");
}
