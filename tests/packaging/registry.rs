//! The MCP Registry's description of the server (`server.json` at the root): it validates against
//! the registry's schema, kept beside the release script, and every copy of the server's registry
//! name and the project's address agrees with it. Needs nothing but the workspace, so it is not
//! ignored.

use super::workspace;

/// The committed server.json, parsed.
fn server_json() -> serde_json::Value {
    let text = std::fs::read_to_string(workspace().join("server.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn server_json_validates_against_the_registry_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("packaging/registry/server.schema.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let server = server_json();
    let errors: Vec<String> = validator
        .iter_errors(&server)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        server["$schema"], schema["$id"],
        "the schema server.json names"
    );
}

#[test]
fn server_json_agrees_with_the_crate_and_every_copy_of_its_name() {
    let server = server_json();
    let name = server["name"].as_str().unwrap();
    assert_eq!(server["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(server["repository"]["url"], env!("CARGO_PKG_REPOSITORY"));
    // The registry checks the name in the README of a crate or a PyPI package (the wheel's
    // description is its README), and in the npm package's package.json (mcpName).
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    assert!(
        readme.lines().any(|l| l == format!("mcp-name: {name}")),
        "README.md has no line `mcp-name: {name}`"
    );
    let wheel = std::fs::read_to_string(workspace().join("packaging/pypi/README-geminicli-mcp.md"))
        .unwrap();
    assert!(
        wheel.lines().any(|l| l == format!("mcp-name: {name}")),
        "the wheel's README has no line `mcp-name: {name}`"
    );
    let npm = std::fs::read_to_string(workspace().join("packaging/npm/build.mjs")).unwrap();
    assert!(
        npm.contains(&format!("mcpName: '{name}'")),
        "packaging/npm/build.mjs does not give the npm package mcpName {name}"
    );
    let packages = server["packages"].as_array().unwrap();
    let npm_package = packages
        .iter()
        .find(|p| p["registryType"] == "npm")
        .expect("the npm package");
    assert_eq!(npm_package["identifier"], "geminicli-mcp");
    assert_eq!(npm_package["version"], env!("CARGO_PKG_VERSION"));
    let pypi_package = packages
        .iter()
        .find(|p| p["registryType"] == "pypi")
        .expect("the PyPI package");
    assert_eq!(pypi_package["identifier"], "geminicli-mcp");
    assert_eq!(pypi_package["version"], env!("CARGO_PKG_VERSION"));
    // The bundles' sums are known only at release: packaging/registry/server-json.mjs adds them.
    assert!(
        packages.iter().all(|p| p["registryType"] != "mcpb"),
        "a committed mcpb package would carry a sum no release has"
    );
}
