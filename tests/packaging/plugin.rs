//! The Claude Code plugin (`plugins/geminicli-mcp/`) and its marketplace
//! (`.claude-plugin/marketplace.json`) agree with the crate, the npm package and the docs, so a
//! release cannot leave the plugin behind: its version is the crate's, the marketplace lists it
//! where it is, its `.mcp.json` runs the npm package's command exactly as docs/clients.md shows
//! it, the tool names its command and eval cases use are the ones Claude Code gives the plugin's
//! server, and the evals' mock of the server lists the tools the server lists. Needs nothing but
//! the workspace and its binaries, so it is not ignored; `clients::plugin` runs the plugin in the
//! real Claude Code.

use serde_json::Value;

use super::workspace;

/// The plugin's folder.
const PLUGIN: &str = "plugins/geminicli-mcp";

/// A JSON file of the workspace, parsed.
fn json(path: &str) -> Value {
    let text =
        std::fs::read_to_string(workspace().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A text file of the workspace.
fn text(path: &str) -> String {
    std::fs::read_to_string(workspace().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The prefix Claude Code gives the tools of the plugin's one server:
/// `mcp__plugin_<plugin>_<server>__`.
fn tool_prefix() -> String {
    let plugin = json(&format!("{PLUGIN}/.claude-plugin/plugin.json"));
    let mcp = json(&format!("{PLUGIN}/.mcp.json"));
    let servers = mcp["mcpServers"].as_object().unwrap();
    assert_eq!(servers.len(), 1, "{mcp}");
    let server = servers.keys().next().unwrap();
    format!(
        "mcp__plugin_{}_{server}__",
        plugin["name"].as_str().unwrap()
    )
}

/// The ```json blocks of a Markdown text that parse as JSON (indented ones too: a block in a
/// list item).
fn json_blocks(markdown: &str) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut open: Option<String> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed == "```json" => open = Some(String::new()),
            Some(block) if trimmed == "```" => {
                blocks.extend(serde_json::from_str(block).ok());
                open = None;
            }
            Some(block) => {
                block.push_str(trimmed);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn the_plugin_carries_the_crates_version_and_the_marketplace_lists_it() {
    let plugin = json(&format!("{PLUGIN}/.claude-plugin/plugin.json"));
    assert_eq!(plugin["name"], "geminicli-mcp");
    assert_eq!(plugin["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(plugin["repository"], env!("CARGO_PKG_REPOSITORY"));
    assert_eq!(plugin["license"], env!("CARGO_PKG_LICENSE"));

    let market = json(".claude-plugin/marketplace.json");
    let listed = market["plugins"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{market}");
    assert_eq!(listed[0]["name"], plugin["name"]);
    assert_eq!(listed[0]["source"], format!("./{PLUGIN}"));
    assert_eq!(listed[0]["description"], plugin["description"]);
    // A version in the listing would win over plugin.json's and go stale.
    assert!(listed[0].get("version").is_none(), "{market}");
}

#[test]
fn the_plugins_server_is_the_npm_packages_command_as_the_docs_show_it() {
    let mcp = json(&format!("{PLUGIN}/.mcp.json"));
    let server = &mcp["mcpServers"]["gemini"];
    assert_eq!(server["command"], "npx");
    assert_eq!(server["args"], serde_json::json!(["-y", "geminicli-mcp"]));
    // npx runs the package's bin of the same name: the npm package must keep both.
    let npm = text("packaging/npm/build.mjs");
    assert!(
        npm.contains("'geminicli-mcp': {") && npm.contains("binaries: ['geminicli-mcp']"),
        "packaging/npm/build.mjs no longer builds the package geminicli-mcp with that command"
    );
    // docs/clients.md quotes the file whole, in a JSON block of its own.
    let docs = text("docs/clients.md");
    let quoted = json_blocks(&docs).into_iter().any(|block| block == mcp);
    assert!(
        quoted,
        "docs/clients.md does not quote {PLUGIN}/.mcp.json as it is:\n{mcp:#}"
    );
    let readme = text("README.md");
    assert!(
        readme.contains(
            "claude plugin install geminicli-mcp --marketplace geminicli-mcp/geminicli-mcp"
        ),
        "README.md has no line that installs the plugin"
    );
}

#[test]
fn the_command_and_the_eval_cases_name_the_plugins_own_tools() {
    let prefix = tool_prefix();
    let tools: Vec<String> = json(&format!("{PLUGIN}/evals/mocks/gemini/_tools.json"))["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let mut named = Vec::new();
    for file in [
        format!("{PLUGIN}/commands/review.md"),
        format!("{PLUGIN}/evals/review-change/case.yaml"),
        format!("{PLUGIN}/evals/one-line-question/case.yaml"),
    ] {
        let body = text(&file);
        let found: Vec<&str> = body
            .split(|c: char| !(c.is_ascii_alphanumeric() || "_-".contains(c)))
            .filter(|w| w.starts_with("mcp__"))
            .collect();
        assert!(!found.is_empty(), "{file} names no tool");
        for name in found {
            let tool = name.strip_prefix(prefix.as_str()).unwrap_or_else(|| {
                panic!("{file}: {name} is not a tool of the plugin's server ({prefix}…)")
            });
            assert!(
                tools.iter().any(|t| t == tool),
                "{file}: no tool {tool} in {tools:?}"
            );
            named.push(tool.to_string());
        }
    }
    // Each mocked tool's canned answer is a tool of the server.
    for entry in std::fs::read_dir(workspace().join(PLUGIN).join("evals/mocks/gemini")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(tool) = name.strip_suffix(".md") {
            assert!(
                tools.iter().any(|t| t == tool),
                "mock {name}: no such tool in {tools:?}"
            );
        }
    }
    assert!(named.iter().any(|t| t == "gemini_prompt_with_context"));
}

/// Set to write the server's `tools/list` into the evals' mock listing instead of comparing.
const WRITE_TOOLS: &str = "GEMINICLI_MCP_WRITE_PLUGIN_TOOLS";

#[test]
fn the_eval_mocks_list_the_servers_tools_as_it_does() {
    // The eval's model sees the mocked server through this listing: it must be the server's.
    let mut server = crate::server::Harness::start_with(&[], "2025-11-25");
    let listed = server.rpc("tools/list", None);
    let tools: Vec<Value> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t["name"],
                "description": t["description"],
                "inputSchema": t["inputSchema"],
            })
        })
        .collect();
    let want = serde_json::json!({ "tools": tools });
    let path = format!("{PLUGIN}/evals/mocks/gemini/_tools.json");
    if std::env::var_os(WRITE_TOOLS).is_some() {
        let text = serde_json::to_string_pretty(&want).unwrap() + "\n";
        std::fs::write(workspace().join(&path), text).unwrap();
        return;
    }
    assert!(
        json(&path) == want,
        "{path} is not the server's tools/list; rewrite it with {WRITE_TOOLS}=1 cargo nextest run \
         -p geminicli-mcp -E 'test(=packaging::plugin::the_eval_mocks_list_the_servers_tools_as_it_does)'"
    );
}
