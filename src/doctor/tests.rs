use super::*;

#[test]
fn versions_parse() {
    assert_eq!(parse_version("0.61.0\n"), Some((0, 61, 0)));
    assert_eq!(parse_version("v0.40.0-preview.1"), Some((0, 40, 0)));
    assert_eq!(parse_version("gemini 1.2.3"), Some((1, 2, 3)));
    assert_eq!(parse_version("Usage: gemini"), None);
    assert!(parse_version("0.39.9").unwrap() < MIN_VERSION);
}

#[test]
fn help_flags_match_whole_words() {
    let help = "  --acp  Starts ACP\n      --approval-mode  x\n  -o, --output-format [choices: \"text\", \"json\", \"stream-json\"]\n      --experimental-acp  deprecated, use --skip-trust instead";
    assert!(help_lists(help, "--acp"));
    assert!(help_lists(help, "--approval-mode"));
    assert!(help_lists(help, "stream-json"));
    assert!(!help_lists(help, "--approval"));
    assert!(!help_lists(help, "--skip-trust"));
    assert!(help_lists(help, "--output-format"));
    assert!(!help_lists("  --experimental-acp  x", "--acp"));
}

#[tokio::test]
async fn the_mcp_servers_that_do_not_answer_are_named_and_this_server_left_out() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        r#"{"mcpServers": {"slow": {"command": "sleep", "args": ["100000"]}, "mine": {"command": "npx", "args": ["-y", "geminicli-mcp"]}}}"#,
    )
    .unwrap();
    let config = Config {
        mcp_server_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    let mut inputs = Inputs::from_process(config, Duration::from_secs(5));
    inputs.vars = vec![("HOME".into(), home.path().as_os_str().to_owned())];
    inputs.cwd = cwd.path().to_path_buf();
    let mut warnings = Vec::new();
    let (rows, nested) = mcp::check(&inputs.vars, &inputs.cwd, &mut warnings, &inputs.config).await;
    assert!(nested.is_none());
    let status: Vec<(&str, Value)> = rows
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                mcp::json(std::slice::from_ref(r))[0]["status"].clone(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [("slow", json!("silent")), ("mine", json!("left_out"))]
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("the MCP server 'slow' ("),
        "{}",
        warnings[0]
    );
    assert!(mcp::text(&rows).contains("NO ANSWER to `initialize`"));
    inputs.vars.push(("GEMINICLI_MCP_RUN".into(), "9:1".into()));
    let (_, nested) = mcp::check(&inputs.vars, &inputs.cwd, &mut warnings, &inputs.config).await;
    assert!(nested.unwrap().0.contains("GEMINICLI_MCP_RUN=9:1"));
}
