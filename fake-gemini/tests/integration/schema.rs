//! The committed JSON Schema of the scenario format is generated from the Rust types.
//! Regenerate with `FAKE_GEMINI_WRITE_SCHEMA=1 cargo nextest run -p fake-gemini schema`.

#[test]
fn committed_schema_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenario.schema.json");
    let generated = fake_gemini::scenario::json_schema();
    if std::env::var_os("FAKE_GEMINI_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "scenario.schema.json is stale: regenerate it (see this test's doc)"
    );
}

#[test]
fn every_builtin_round_trips_through_the_types() {
    for (name, src) in fake_gemini::scenario::BUILTINS {
        let s = fake_gemini::scenario::parse(name, src).unwrap();
        let again = fake_gemini::scenario::parse(name, &toml::to_string(&s).unwrap()).unwrap();
        assert_eq!(s, again, "{name}");
    }
}

#[test]
fn the_readme_catalogue_lists_every_builtin() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    for (name, _) in fake_gemini::scenario::BUILTINS {
        assert!(
            readme.contains(&format!("| `{name}` |")),
            "README catalogue lacks `{name}`"
        );
    }
}
