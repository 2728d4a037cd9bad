use super::*;
use serde_json::json;

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// The three prompt tools' definitions under the `yolo` ceiling.
fn defined(with_output_schema: bool) -> Vec<Tool> {
    let listing = Listing {
        with_output_schema,
        ceiling: ApprovalMode::Yolo,
    };
    [PROMPT, WITH_CONTEXT, STRUCTURED]
        .iter()
        .map(|d| (d.define)(&listing))
        .collect()
}

fn decoded(kind: Kind, v: Value) -> Result<Call, Failure> {
    decode(kind, Some(&obj(v)), &Policy::default())
}

#[test]
fn decode_happy_paths() {
    let c = decoded(Kind::Prompt, json!({"prompt": "hi", "model": null})).unwrap();
    assert_eq!(c.request.prompt, "hi");
    assert!(c.request.model.is_none());
    let c = decoded(
        Kind::WithContext,
        json!({"prompt": "q", "context": "c", "model": "flash", "workspace": ""}),
    )
    .unwrap();
    assert_eq!(c.request.context.as_deref(), Some("c"));
    assert_eq!(c.request.model.as_deref(), Some("flash"));
    assert_eq!(c.paths.workspace, None, "an empty workspace is not given");
    let c = decoded(
        Kind::Structured,
        json!({"prompt": "q", "schema": {"type": "object"}, "timeout_total_ms": 5}),
    )
    .unwrap();
    assert!(c.schema.is_some());
    assert_eq!(c.deadlines.total, Some(Duration::from_millis(5)));
}

#[test]
fn bad_arguments_are_input_validation() {
    let cases = [
        (Kind::Prompt, json!({})),
        (Kind::Prompt, json!({"prompt": 5})),
        (Kind::Prompt, json!({"prompt": "x", "model": 1})),
        (Kind::WithContext, json!({"prompt": "x"})),
        (Kind::Structured, json!({"prompt": "x"})),
        (Kind::Structured, json!({"prompt": "x", "schema": "{}"})),
        (
            Kind::Prompt,
            json!({"prompt": "x", "include_directories": "a"}),
        ),
        (Kind::Prompt, json!({"prompt": "x", "timeout_total_ms": 0})),
        (Kind::Prompt, json!({"prompt": "x", "approval_mode": "all"})),
        (Kind::Prompt, json!({"prompt": "x", "session_id": "latest"})),
        (
            Kind::Prompt,
            json!({"prompt": "x", "approval_mode": "plan", "permission": "read-only"}),
        ),
    ];
    for (kind, args) in cases {
        let f = decoded(kind, args.clone()).unwrap_err();
        assert!(
            f.first_line()
                .starts_with("[error exit=42] input_validation: "),
            "{args}: {f}"
        );
    }
    let f = decoded(
        Kind::Prompt,
        json!({"prompt": "x", "include_directories": [1]}),
    )
    .unwrap_err();
    assert!(f.message.contains("array of strings"), "{}", f.message);
}

#[test]
fn definitions_advertise_the_reference_contract() {
    let tools = defined(true);
    let names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            GEMINI_PROMPT,
            GEMINI_PROMPT_WITH_CONTEXT,
            GEMINI_PROMPT_STRUCTURED
        ]
    );
    let required = |i: usize| tools[i].input_schema.get("required").cloned().unwrap();
    assert_eq!(required(0), json!(["prompt"]));
    assert_eq!(required(1), json!(["prompt", "context"]));
    assert_eq!(required(2), json!(["prompt", "schema"]));
    for t in &tools {
        assert_eq!(t.input_schema.get("type"), Some(&json!("object")));
        let props = t.input_schema.get("properties").unwrap();
        assert!(props.get("session_id").is_some() && props.get("timeout_total_ms").is_some());
        assert_eq!(
            t.output_schema.as_ref().unwrap().get("type"),
            Some(&json!("object"))
        );
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(a.read_only_hint, Some(false));
        assert_eq!(a.idempotent_hint, Some(false));
        assert_eq!(a.open_world_hint, Some(true));
    }
    assert!(defined(false).iter().all(|t| t.output_schema.is_none()));
}

#[test]
fn the_docs_quote_the_templates() {
    let readme = include_str!("../../../docs/tools.md");
    assert!(
        readme.contains(&format!(
            "```text\n{}\n```",
            crate::structured::CONTEXT_TEMPLATE
        )),
        "docs/tools.md's context block differs from structured::CONTEXT_TEMPLATE"
    );
    assert!(
        readme.contains(&format!(
            "```text\n{}\n```",
            crate::structured::STRUCTURED_INSTRUCTION
        )),
        "docs/tools.md's structured instruction differs from structured::STRUCTURED_INSTRUCTION"
    );
    assert!(
        readme.contains(&format!(
            "```text\n{}\n```",
            crate::structured::REPAIR_TEMPLATE
        )),
        "docs/tools.md's repair prompt differs from structured::REPAIR_TEMPLATE"
    );
}

#[test]
fn the_output_schema_has_one_plain_type_per_field() {
    let schema = Value::Object((*output_schema(true)).clone());
    let text = schema.to_string();
    assert!(
        !text.contains("oneOf") && !text.contains("\"type\":["),
        "{text}"
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let ok =
        json!({"response": "{}", "sessionId": "s", "model": "m", "totalTokens": 3, "json": {}});
    assert!(validator.is_valid(&ok));
    let err = json!({"error": "[error exit=42] input_validation: x", "errorKind": "input_validation", "exitCode": 42, "fix": "f"});
    assert!(validator.is_valid(&err));
    assert!(!validator.is_valid(&json!({"response": 1})));
}

/// Every field a prompt tool's rendered result carries — an answer's (cut, with every option's
/// report), a structured answer's, a failure's with everything a failure can say — is one the
/// schema declares: the result type stays the one description of the result.
#[test]
fn every_field_the_renderer_fills_is_declared() {
    use crate::answers::Answers;
    use crate::error::{ErrorKind, RunFacts};
    use crate::gemini::outcome::Success;
    let answers = Answers::default();
    let render = Render {
        answers: &answers,
        budget: 4096,
        structured: true,
        debug: true,
    };
    let declared = |structured| {
        output_schema(structured)["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default()
    };
    let report = || Report {
        events: Some(vec![json!({"type": "init"})]),
        debug: Some(json!({"argv": []})),
        policy: Some(json!({"fallbacks": []})),
        fallbacks: Vec::new(),
        saved: Some(Ok("/w/a.md".into())),
        repaired: Some(true),
        approvals: vec![json!({"permission": "approved", "decidedBy": "user"})],
        ran_one_shot: Some("the warm backend's agent could not start".into()),
        session_at_risk: Some("the next start may delete this run's session".into()),
        servers_left_out: None,
    };
    let success = |answer: String| Success {
        answer,
        session_id: Some("s".into()),
        model: Some("m".into()),
        stats: Some(json!({"total_tokens": 3})),
        duration: Duration::ZERO,
        exit_code: 0,
    };
    let answer = |text: String, json: Option<Value>| Answer {
        success: success(text),
        json,
        turn: None,
    };
    let cut = render_answer(answer("x\n".repeat(5000), None), &render, report());
    let structured = render_answer(answer("{}".into(), Some(json!({}))), &render, report());
    let mut f = Failure::new(ErrorKind::SchemaMismatch, "no").with_run(RunFacts {
        stderr_tail: "boom".into(),
        partial_response: Some(Arc::new("so far".into())),
        signal: Some(9),
        ..RunFacts::default()
    });
    f.retry_delay_ms = Some(5);
    let f = f.with_invalid(Vec::new(), "raw".into());
    let failed = render.failure_with(&f, &extras(Some("note"), report(), &render));
    for (result, schema) in [(cut, false), (structured, true), (failed, false)] {
        let sc = result.structured_content.expect("structuredContent");
        let keys: Vec<&String> = sc.as_object().expect("object").keys().collect();
        assert!(keys.len() >= 10, "{keys:?}");
        for key in keys {
            assert!(
                declared(schema).contains_key(key),
                "`{key}` is not in the schema"
            );
        }
    }
}

fn render_answer(answer: Answer, render: &Render<'_>, report: Report) -> CallToolResult {
    super::render(answer, true, extras(Some("note"), report, render), render)
}
