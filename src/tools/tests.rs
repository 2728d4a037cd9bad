use super::*;
use crate::config::policy::Toolsets;

fn config(toolsets: &str, acp: bool) -> Config {
    let mut config = Config::default();
    config.policy.toolsets = Toolsets::parse(toolsets).0;
    config.acp.enabled = acp;
    config
}

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

#[test]
fn each_declaration_defines_the_tool_it_names_once() {
    let listing = Listing {
        with_output_schema: true,
        ceiling: ApprovalMode::Yolo,
    };
    for (i, d) in TOOLS.iter().enumerate() {
        assert_eq!(
            (d.define)(&listing).name,
            d.name,
            "the definition of {}",
            d.name
        );
        let twins: Vec<_> = TOOLS[i + 1..]
            .iter()
            .filter(|o| o.name == d.name || o.route == d.route)
            .map(|o| o.name)
            .collect();
        assert!(twins.is_empty(), "{} declared again as {twins:?}", d.name);
    }
}

#[test]
fn a_set_lists_its_tools_and_only_they_route() {
    let default = config("", false);
    assert_eq!(
        names(&list(&default, true)),
        [
            prompt::GEMINI_PROMPT,
            prompt::GEMINI_PROMPT_WITH_CONTEXT,
            prompt::GEMINI_PROMPT_STRUCTURED,
            READ_ANSWER
        ]
    );
    assert!(find(sessions::GEMINI_LIST_MODELS, &default).is_none());
    assert!(find(agent::GEMINI, &default).is_none());
    let all = config("sessions,models,jobs", true);
    assert_eq!(list(&all, true).len(), TOOLS.len());
    for d in TOOLS {
        assert_eq!(find(d.name, &all).map(|f| f.route), Some(d.route));
    }
}

#[test]
fn the_jobs_allow_list_is_the_tools_that_run_long() {
    let core = [
        prompt::GEMINI_PROMPT,
        prompt::GEMINI_PROMPT_WITH_CONTEXT,
        prompt::GEMINI_PROMPT_STRUCTURED,
    ];
    assert_eq!(runnable(&config("jobs", false)), core);
    let with_acp = runnable(&config("jobs", true));
    assert_eq!(with_acp[..3], core);
    assert_eq!(with_acp[3..], [agent::GEMINI]);
}

#[test]
fn the_catalogue_names_every_tool_with_its_set() {
    let catalogue = catalogue();
    let listed: Vec<(&str, &str)> = catalogue["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(!t["description"].as_str().unwrap().is_empty());
            (t["name"].as_str().unwrap(), t["toolset"].as_str().unwrap())
        })
        .collect();
    let declared: Vec<(&str, &str)> = TOOLS.iter().map(|d| (d.name, d.set.name())).collect();
    assert_eq!(listed, declared);
}

fn decoded(name: &str, arguments: serde_json::Value) -> Result<Call, crate::error::Failure> {
    let config = config("sessions,models,jobs", true);
    let tool = find(name, &config).unwrap();
    decode(tool, arguments.as_object(), &config.policy)
}

#[test]
fn what_the_server_decides_on_is_read_from_the_one_decode() {
    let call = decoded(
        prompt::GEMINI_PROMPT,
        serde_json::json!({"prompt": "p", "approval_mode": "ask", "idempotency_key": "k"}),
    )
    .unwrap();
    assert!(call.asks());
    assert_eq!(call.idempotency_key(), Some("k"));
    let call = decoded(
        agent::GEMINI,
        serde_json::json!({"prompt": "p", "approval_mode": "ask", "idempotency_key": "g"}),
    )
    .unwrap();
    assert!(call.asks() && call.tool.runs_long);
    assert_eq!(call.idempotency_key(), Some("g"));
    let call = decoded(prompt::GEMINI_PROMPT, serde_json::json!({"prompt": "p"})).unwrap();
    assert!(!call.asks() && call.idempotency_key().is_none());
    // A key of the wrong type is the tool's own argument error, not "no key".
    let f = decoded(
        prompt::GEMINI_PROMPT,
        serde_json::json!({"prompt": "p", "idempotency_key": 7}),
    )
    .unwrap_err();
    assert!(f.message.contains("idempotency_key"), "{}", f.message);
    let call = decoded(jobs::GEMINI_WAIT, serde_json::json!({"job_ids": ["a"]})).unwrap();
    assert!(matches!(call.job(), Some(jobs::JobCall::Wait(w)) if w.job_ids == ["a"]));
}

/// A tool added to the registry alone fails here until its docs say what it does: its set's
/// page (docs/acp.md for the `acp` set, docs/tools.md for the others) and the README's list of
/// tools name it.
#[test]
fn every_tool_is_documented() {
    let readme = include_str!("../../README.md");
    let tools_md = include_str!("../../docs/tools.md");
    let acp_md = include_str!("../../docs/acp.md");
    let mut missing = Vec::new();
    for d in TOOLS {
        let quoted = format!("`{}`", d.name);
        let (page, doc) = match d.set {
            Set::Acp => ("docs/acp.md", acp_md),
            _ => ("docs/tools.md", tools_md),
        };
        if !doc.contains(&quoted) {
            missing.push(format!("{} in {page}", d.name));
        }
        if !readme.contains(&quoted) {
            missing.push(format!("{} in README.md", d.name));
        }
    }
    assert!(missing.is_empty(), "tools not documented: {missing:?}");
}
