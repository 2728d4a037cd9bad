//! Tests of the public API: schema preparation and its limits, extraction and validation.

use rstest::rstest;
use serde_json::{json, Value};

use super::*;

/// Prepares a schema the test expects to be accepted.
fn prepared(schema: Value) -> PreparedSchema {
    Schema::prepare(&schema).unwrap_or_else(|e| panic!("schema refused: {e}"))
}

/// The schema docs/tools.md uses as its example.
fn title_tags() -> PreparedSchema {
    prepared(json!({
        "type": "object",
        "required": ["title", "tags"],
        "properties": {
            "title": { "type": "string" },
            "tags": { "type": "array", "items": { "type": "string" } }
        },
        "additionalProperties": false
    }))
}

/// A schema of nested `not`s, `levels` objects deep.
fn nested(levels: usize) -> Value {
    let text = format!(
        "{}{}",
        "{\"not\":".repeat(levels - 1) + "{",
        "}".repeat(levels)
    );
    serde_json::from_str(&text).expect("nested schema is JSON")
}

#[rstest]
#[case("http://json-schema.org/draft-04/schema#", boon::Draft::V4)]
#[case("http://json-schema.org/draft-06/schema#", boon::Draft::V6)]
#[case("http://json-schema.org/draft-07/schema#", boon::Draft::V7)]
#[case("https://json-schema.org/draft/2019-09/schema", boon::Draft::V2019_09)]
#[case("https://json-schema.org/draft/2020-12/schema", boon::Draft::V2020_12)]
fn every_draft_is_accepted(#[case] uri: &str, #[case] draft: boon::Draft) {
    let schema = prepared(json!({"$schema": uri, "type": "object", "required": ["a"]}));
    assert_eq!(schema.draft(), draft);
    assert!(extract_and_validate(&schema, r#"{"a":1}"#).is_ok());
    assert!(extract_and_validate(&schema, r#"{"b":1}"#).is_err());
}

#[test]
fn the_draft_defaults_to_2020_12() {
    assert_eq!(
        prepared(json!({"type": "string"})).draft(),
        boon::Draft::V2020_12
    );
}

#[test]
fn draft_4_keeps_its_own_semantics() {
    // Draft 4's boolean exclusiveMaximum, gone since draft 6.
    let schema = prepared(json!({
        "$schema": "http://json-schema.org/draft-04/schema#",
        "maximum": 5, "exclusiveMaximum": true
    }));
    assert!(extract_and_validate(&schema, "4").is_ok());
    assert!(extract_and_validate(&schema, "5").is_err());
}

#[test]
fn a_schema_of_exactly_one_mib_is_accepted_and_one_byte_more_is_refused() {
    let overhead = r#"{"description":""}"#.len();
    let at = json!({"description": "x".repeat(MAX_SCHEMA_BYTES - overhead)});
    assert_eq!(at.to_string().len(), MAX_SCHEMA_BYTES);
    assert!(Schema::prepare(&at).is_ok());
    let over = json!({"description": "x".repeat(MAX_SCHEMA_BYTES - overhead + 1)});
    assert_eq!(Schema::prepare(&over).unwrap_err(), SchemaError::TooLarge);
}

#[test]
fn ten_thousand_nodes_are_accepted_and_one_more_is_refused() {
    // The root object and the allOf array are two nodes.
    let at = json!({"allOf": vec![json!({}); MAX_SCHEMA_NODES - 2]});
    assert!(Schema::prepare(&at).is_ok());
    let over = json!({"allOf": vec![json!({}); MAX_SCHEMA_NODES - 1]});
    assert_eq!(
        Schema::prepare(&over).unwrap_err(),
        SchemaError::TooManyNodes
    );
}

#[test]
fn sixty_four_levels_are_accepted_and_sixty_five_are_refused() {
    let schema = prepared(nested(MAX_SCHEMA_DEPTH));
    // An even number of `not`s: 63 of them around `{}` reject everything, which proves the whole
    // chain was compiled.
    assert!(extract_and_validate(&schema, "1").is_err());
    assert_eq!(
        Schema::prepare(&nested(MAX_SCHEMA_DEPTH + 1)).unwrap_err(),
        SchemaError::TooDeep
    );
}

#[rstest]
#[case(json!({"properties": {"a": {"pattern": "^(?=x)a$"}}}), "/properties/a/pattern")]
#[case(json!({"properties": {"a": {"pattern": "(?<!b)a"}}}), "/properties/a/pattern")]
#[case(json!({"items": {"pattern": "^(a)\\1$"}}), "/items/pattern")]
#[case(json!({"pattern": "(ab|cd){20000}"}), "/pattern")]
#[case(json!({"anyOf": [{}, {"pattern": "\\k<n>(?<n>a)"}]}), "/anyOf/1/pattern")]
fn a_pattern_the_engine_cannot_compile_is_refused_with_its_pointer(
    #[case] schema: Value,
    #[case] pointer: &str,
) {
    match Schema::prepare(&schema) {
        Err(SchemaError::Pattern { pointer: got, .. }) => assert_eq!(got, pointer),
        other => panic!("expected a pattern refusal, got {other:?}"),
    }
    let message = Schema::prepare(&schema).unwrap_err().to_string();
    assert!(message.contains(pointer), "{message}");
}

#[test]
fn a_bad_pattern_property_is_refused_with_its_pointer() {
    let err = Schema::prepare(&json!({"patternProperties": {"^a(?=x)": {}}})).unwrap_err();
    match err {
        SchemaError::Pattern { pointer, .. } => assert_eq!(pointer, "/patternProperties/^a(?=x)"),
        other => panic!("expected a pattern refusal, got {other:?}"),
    }
}

#[test]
fn a_referenced_pattern_is_refused_where_it_is_written() {
    let schema = json!({
        "$defs": {"p": {"pattern": "(?=x)"}},
        "properties": {"a": {"$ref": "#/$defs/p"}}
    });
    match Schema::prepare(&schema) {
        Err(SchemaError::Pattern { pointer, .. }) => assert_eq!(pointer, "/$defs/p/pattern"),
        other => panic!("expected a pattern refusal, got {other:?}"),
    }
}

#[test]
fn an_unknown_meta_schema_is_refused_by_name() {
    let err = Schema::prepare(&json!({"$schema": "https://example.com/my-meta"})).unwrap_err();
    assert_eq!(
        err,
        SchemaError::UnknownMetaSchema {
            uri: "https://example.com/my-meta".to_owned()
        }
    );
}

#[rstest]
#[case("https://example.com/schema.json")]
#[case("file:///etc/passwd")]
#[case("http://json-schema.org/draft-07/schema#/definitions/other")]
fn references_outside_the_document_are_refused(#[case] uri: &str) {
    let err = Schema::prepare(&json!({"$ref": uri})).unwrap_err();
    assert!(
        matches!(err, SchemaError::RemoteRef { .. }),
        "{uri}: {err:?}"
    );
}

#[test]
fn local_references_work() {
    let schema = prepared(json!({
        "$defs": {"name": {"type": "string", "pattern": "^[a-z]+$"}},
        "properties": {"n": {"$ref": "#/$defs/name"}}
    }));
    assert!(extract_and_validate(&schema, r#"{"n":"abc"}"#).is_ok());
    let failure = extract_and_validate(&schema, r#"{"n":"ABC"}"#).unwrap_err();
    assert_eq!(failure.errors[0].instance_path, "/n");
}

#[rstest]
#[case(json!({"properties": {"a": {"type": 12}}}), "/properties/a/type")]
#[case(json!({"properties": {"a": {"type": "strin"}}}), "/properties/a/type")]
#[case(json!({"items": {"minLength": -1}}), "/items/minLength")]
#[case(json!({"required": "a"}), "/required")]
fn a_schema_invalid_under_its_meta_schema_names_where(#[case] schema: Value, #[case] at: &str) {
    match Schema::prepare(&schema) {
        Err(SchemaError::Invalid { pointer, .. }) => assert_eq!(pointer, at),
        other => panic!("expected an invalid-schema refusal, got {other:?}"),
    }
}

#[test]
fn boolean_schemas_are_schemas() {
    assert!(extract_and_validate(&prepared(json!(true)), "{}").is_ok());
    assert!(extract_and_validate(&prepared(json!(false)), "{}").is_err());
}

#[test]
fn a_prepared_schema_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PreparedSchema>();
}

#[rstest]
#[case(json!({"type": "string", "format": "email"}))]
#[case(json!({"type": "string", "format": "regex"}))]
#[case(json!({"$schema": "http://json-schema.org/draft-07/schema#", "format": "date"}))]
#[case(json!({"format": "ipv4", "pattern": "^not"}))]
fn format_is_an_annotation(#[case] schema: Value) {
    let schema = prepared(schema);
    assert!(extract_and_validate(&schema, r#""not (an email""#).is_ok());
}

#[test]
fn keywords_used_as_property_names_stay_property_names() {
    let schema = prepared(json!({
        "properties": {
            "format": {"type": "string", "pattern": "^[a-z]+$"},
            "pattern": {"type": "integer"}
        },
        "required": ["format", "pattern"]
    }));
    assert!(extract_and_validate(&schema, r#"{"format": "json", "pattern": 1}"#).is_ok());
    let failure =
        extract_and_validate(&schema, r#"{"format": "JSON", "pattern": "x"}"#).unwrap_err();
    let paths: Vec<&str> = failure
        .errors
        .iter()
        .map(|i| i.instance_path.as_str())
        .collect();
    assert!(
        paths.contains(&"/format") && paths.contains(&"/pattern"),
        "{paths:?}"
    );
}

#[test]
fn a_pattern_in_data_is_not_compiled() {
    // `const`, `enum` and `default` hold data: a lookaround there is no pattern.
    let schema = prepared(json!({
        "const": {"pattern": "(?=x)"},
        "default": {"pattern": "(?<!y)"}
    }));
    assert!(extract_and_validate(&schema, r#"{"pattern": "(?=x)"}"#).is_ok());
}

#[test]
fn class_escapes_are_ascii_as_in_ecma_262() {
    // `\w` is 63 characters, not Unicode's hundreds of thousands: 256 of them compile well under
    // the limit.
    let schema = prepared(json!({"pattern": "^\\w{1,256}$", "maxLength": 300}));
    assert!(extract_and_validate(&schema, r#""abc_123""#).is_ok());
    assert!(extract_and_validate(&schema, r#""abcé""#).is_err());
    assert!(extract_and_validate(&prepared(json!({"pattern": "^\\d+$"})), r#""١٢""#).is_err());
}

#[test]
fn a_deep_answer_under_a_recursive_schema_is_validated_from_a_small_stack() {
    // The validator's recursion at serde_json's nesting limit takes more than a blocking thread's
    // 2 MiB in a debug build: it runs on a thread of its own.
    let schema = prepared(json!({
        "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "$ref": "#/$defs/node"
    }));
    let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
    let bad = format!("{}1{}", "[".repeat(127), "]".repeat(127));
    let (ok, err) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            (
                extract_and_validate(&schema, &deep).is_ok(),
                extract_and_validate(&schema, &bad).is_err(),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(ok && err);
}

#[rstest]
#[case::bare(r#"{"title":"t","tags":["a"]}"#)]
#[case::prose_around("Sure! Here it is:\n{\"title\": \"t\", \"tags\": [\"a\"]}\nHope this helps.")]
#[case::json_fence("```json\n{\"title\": \"t\", \"tags\": [\"a\"]}\n```")]
#[case::plain_fence("Result:\n```\n{\"title\": \"t\", \"tags\": [\"a\"]}\n```\nDone.")]
#[case::citation_first("As shown in [1], the answer is {\"title\": \"t\", \"tags\": [\"a\"]}.")]
#[case::broken_fence_then_good_json(
    "```json\n{\"title\": 't'}\n```\nCorrected: {\"title\": \"t\", \"tags\": [\"a\"]}"
)]
#[case::failing_fence_then_good_span(
    "```json\n{\"title\": 5}\n```\nOops: {\"title\": \"t\", \"tags\": [\"a\"]}"
)]
#[case::prose_brackets_around(
    "[note: the object is {\"title\": \"t\", \"tags\": [\"a\"]} as asked]"
)]
#[case::quote_in_prose("It's \"done\": {\"title\": \"t\", \"tags\": [\"a\"]}")]
fn the_first_candidate_that_validates_wins(#[case] response: &str) {
    let ok = extract_and_validate(&title_tags(), response).expect("answer accepted");
    assert_eq!(ok.canonical, r#"{"title":"t","tags":["a"]}"#);
    assert_eq!(ok.value, json!({"title": "t", "tags": ["a"]}));
}

#[rstest]
#[case(json!({"type": "string"}), "  \"blue\"\n", "\"blue\"")]
#[case(json!({"type": "integer"}), "42", "42")]
#[case(json!({"type": "number"}), "```json\n1.50\n```", "1.5")]
#[case(json!({"type": "boolean"}), "true", "true")]
#[case(json!({"type": "array"}), "See [1].", "[1]")]
fn any_json_value_can_be_the_answer(
    #[case] schema: Value,
    #[case] response: &str,
    #[case] canonical: &str,
) {
    let ok = extract_and_validate(&prepared(schema), response).expect("answer accepted");
    assert_eq!(ok.canonical, canonical);
}

#[test]
fn canonical_text_is_what_json_stringify_prints() {
    let schema = prepared(json!({"type": "object"}));
    let ok = extract_and_validate(
        &schema,
        r#"{ "b": 1.0, "a": [1e21, 1e-7, -0, 9007199254740993], "b": "\u00e9\u0001" }"#,
    )
    .unwrap();
    assert_eq!(
        ok.canonical,
        "{\"b\":\"é\\u0001\",\"a\":[1e+21,1e-7,0,9007199254740992]}"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&ok.canonical).unwrap(),
        ok.value
    );
}

#[test]
fn validation_sees_numbers_as_javascript_does() {
    // JSON.parse rounds 2^53+1 to 2^53, so the reference accepts this answer.
    let schema = prepared(json!({"const": 9007199254740992u64}));
    assert!(extract_and_validate(&schema, "9007199254740993").is_ok());
}

#[rstest]
#[case("I cannot answer that.", FailureReason::NoJsonFound)]
#[case("", FailureReason::NoJsonFound)]
#[case("{\"title\": \"t\",", FailureReason::InvalidJson)]
#[case("```json\n{title: 't'}\n```", FailureReason::InvalidJson)]
#[case("Here: {'title': 't'}", FailureReason::InvalidJson)]
#[case("{\"title\": 5, \"tags\": []}", FailureReason::DoesNotValidate)]
#[case("[1] and [2]", FailureReason::DoesNotValidate)]
fn failures_say_which_way_they_failed(#[case] response: &str, #[case] reason: FailureReason) {
    let failure = extract_and_validate(&title_tags(), response).unwrap_err();
    assert_eq!(failure.reason, reason, "{failure:?}");
    assert!(!failure.errors.is_empty());
}

#[test]
fn a_mismatch_reports_each_issue_with_its_instance_path() {
    let failure = extract_and_validate(
        &title_tags(),
        "See [1]: {\"title\": 5, \"tags\": [\"a\", 7], \"extra\": true}",
    )
    .unwrap_err();
    assert_eq!(failure.reason, FailureReason::DoesNotValidate);
    let paths: Vec<&str> = failure
        .errors
        .iter()
        .map(|i| i.instance_path.as_str())
        .collect();
    // The longest span is reported, not the citation.
    assert!(paths.contains(&"/title"), "{paths:?}");
    assert!(paths.contains(&"/tags/1"), "{paths:?}");
    assert!(paths.contains(&""), "{paths:?}");
}

#[test]
fn issues_are_capped_in_number_and_length() {
    let schema = prepared(json!({"type": "array", "items": {"type": "string"}}));
    let answer = serde_json::to_string(&vec![0; 100]).unwrap();
    let failure = extract_and_validate(&schema, &answer).unwrap_err();
    assert_eq!(failure.errors.len(), MAX_ISSUES);

    let schema = prepared(json!({"type": "integer"}));
    let answer = format!("\"{}\"", "x".repeat(10_000));
    let failure = extract_and_validate(&schema, &answer).unwrap_err();
    assert!(failure.errors[0].message.chars().count() <= MAX_ISSUE_MESSAGE_CHARS + 3);
}

/// A schema whose items are tested against a worst-case pattern for backtracking engines.
fn catastrophic() -> PreparedSchema {
    prepared(json!({"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}}))
}

#[test]
fn a_catastrophic_pattern_on_the_longest_allowed_input_returns() {
    let at_limit = "a".repeat(MAX_PATTERN_INPUT_CHARS - 1) + "!";
    let failure =
        extract_and_validate(&catastrophic(), &json!([at_limit]).to_string()).unwrap_err();
    assert_eq!(failure.reason, FailureReason::DoesNotValidate);
    assert!(
        failure.errors[0]
            .message
            .ends_with("does not match pattern '^(a+)+$'"),
        "{}",
        failure.errors[0].message
    );
    let matching = "a".repeat(MAX_PATTERN_INPUT_CHARS);
    assert!(extract_and_validate(&catastrophic(), &json!([matching]).to_string()).is_ok());
}

#[test]
fn a_pattern_input_over_the_limit_fails_validation() {
    let over = "a".repeat(MAX_PATTERN_INPUT_CHARS + 1);
    let failure = extract_and_validate(&catastrophic(), &json!([over]).to_string()).unwrap_err();
    assert_eq!(failure.reason, FailureReason::DoesNotValidate);
    assert_eq!(failure.errors[0].instance_path, "/0");
    assert!(
        failure.errors[0].message.contains("65536"),
        "{}",
        failure.errors[0].message
    );
}

#[test]
fn the_limit_counts_characters_not_bytes() {
    let at_limit = "é".repeat(MAX_PATTERN_INPUT_CHARS);
    let schema = prepared(json!({"pattern": "^é+$"}));
    assert!(extract_and_validate(&schema, &json!(at_limit).to_string()).is_ok());
}

#[test]
fn a_long_string_no_pattern_looks_at_is_fine() {
    let schema = prepared(json!({"properties": {"p": {"pattern": "^a+$"}}}));
    let long = "b".repeat(MAX_PATTERN_INPUT_CHARS * 8);
    assert!(extract_and_validate(&schema, &json!({"other": long, "p": "aa"}).to_string()).is_ok());
}

#[test]
fn the_pattern_budget_sums_over_a_response() {
    let chunk = "a".repeat(60_000);
    // 4 × 60,000 = 240,000 fits the 262,144-character budget…
    let fits = json!([chunk, chunk, chunk, chunk]).to_string();
    assert!(extract_and_validate(&catastrophic(), &fits).is_ok());
    // …and a fifth string does not.
    let over = json!([chunk, chunk, chunk, chunk, chunk]).to_string();
    let failure = extract_and_validate(&catastrophic(), &over).unwrap_err();
    assert_eq!(failure.errors[0].instance_path, "/4");
    assert!(
        failure.errors[0].message.contains("budget"),
        "{}",
        failure.errors[0].message
    );
    // Each response starts with a fresh budget.
    assert!(extract_and_validate(&catastrophic(), &fits).is_ok());
}

#[test]
fn an_eight_mib_answer_is_handled() {
    let line = "All work and no play makes Jack a dull boy. [x] ";
    let prose = line.repeat(8 * 1024 * 1024 / line.len() + 1);
    let response = format!("{prose}{{\"title\": \"t\", \"tags\": []}}");
    assert!(response.len() >= 8 * 1024 * 1024);
    assert!(extract_and_validate(&title_tags(), &response).is_ok());

    let big = json!({"title": "x".repeat(8 * 1024 * 1024), "tags": []}).to_string();
    let ok = extract_and_validate(&title_tags(), &big).unwrap();
    assert_eq!(ok.canonical.len(), big.len());
}

#[rstest]
// An answer that starts like JSON reports why it is not.
#[case::open_brackets("[".repeat(1 << 20), FailureReason::InvalidJson)]
#[case::open_objects("{\"a\":".repeat(200_000), FailureReason::InvalidJson)]
#[case::open_brackets_in_prose(format!("see {}", "[".repeat(1 << 20)), FailureReason::NoJsonFound)]
// The innermost 127 levels are JSON (serde_json's nesting limit): an array, not the object asked.
#[case::deep_balanced(format!("{}{}", "[".repeat(1 << 20), "]".repeat(1 << 20)), FailureReason::DoesNotValidate)]
#[case::many_spans("[x]".repeat(300_000), FailureReason::InvalidJson)]
#[case::quote_then_brackets(format!("[\"{}", "[".repeat(1 << 20)), FailureReason::InvalidJson)]
#[case::long_list_in_deep_nest(format!("{}{}x{}", "[".repeat(127), "1,".repeat(200_000), "]".repeat(127)), FailureReason::InvalidJson)]
#[case::unterminated_string(format!("{{\"a\": \"{}", "x".repeat(1 << 22)), FailureReason::InvalidJson)]
#[case::many_openings_one_error_far_away(format!("{}x", "{\"a\":[1,".repeat(100_000)), FailureReason::InvalidJson)]
fn hostile_answers_return(#[case] response: String, #[case] reason: FailureReason) {
    let failure = extract_and_validate(&title_tags(), &response).unwrap_err();
    assert_eq!(failure.reason, reason, "{:?}", failure.errors);
}

#[test]
fn json_too_large_to_validate_is_refused_with_its_reason() {
    let schema = prepared(json!({"type": "array"}));
    let over = serde_json::to_string(&vec![1; MAX_ANSWER_VALUES]).unwrap();
    let failure = extract_and_validate(&schema, &over).unwrap_err();
    assert_eq!(failure.reason, FailureReason::TooLarge);
    assert!(
        failure.errors[0].message.contains("1000000"),
        "{:?}",
        failure.errors
    );
    // A smaller candidate after it can still win.
    let ok = extract_and_validate(&schema, &format!("{over} and [2]")).unwrap();
    assert_eq!(ok.canonical, "[2]");
}

#[test]
fn the_earliest_span_that_is_not_json_is_the_one_reported() {
    let failure = extract_and_validate(&title_tags(), "a [[1,] {x}] b {\"t\" 1}").unwrap_err();
    assert_eq!(failure.reason, FailureReason::InvalidJson);
    let expected = serde_json::from_str::<Value>("[[1,] {x}]").unwrap_err();
    assert_eq!(
        failure.errors[0].message,
        format!("invalid JSON: {expected}")
    );
}

/// Pieces that make answers interesting for the extractor: brackets, strings and escapes,
/// numbers, literals, fences, prose.
const PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    ":",
    ",",
    " ",
    "\n",
    "1",
    "-",
    "0",
    ".",
    "e",
    "2.5",
    "a",
    "true",
    "nul",
    "null",
    "\"t\"",
    "\"title\"",
    "\"tags\"",
    "```json\n",
    "```\n",
    "\n```",
    "\\u00e9",
    "\\ud800",
    "\\udc00",
    "x",
    "'",
    "é",
    "1e400",
    "\t",
];

#[test]
fn agrees_with_the_reference_extractor_on_generated_answers() {
    let schemas = [
        title_tags(),
        prepared(json!({})),
        prepared(json!({"type": "array", "items": {"type": "integer"}})),
        prepared(json!({"type": "string"})),
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..40_000 {
        let len = (next() % 24) as usize;
        let answer: String = (0..len)
            .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
            .collect();
        let schema = &schemas[round % schemas.len()];
        let got = extract_and_validate(schema, &answer);
        let expected = reference::extract_and_validate(schema, &answer);
        match (&got, &expected) {
            (Ok(a), Ok(b)) => assert_eq!(a.canonical, b.canonical, "{answer:?}"),
            (Err(a), Err(b)) => assert_eq!(a, b, "{answer:?}"),
            _ => panic!("{answer:?}: {got:?} where the reference gives {expected:?}"),
        }
    }
}

#[rstest]
#[case::lone_surrogate(r#"{"s": "\ud800"}"#)]
#[case::beyond_double(r#"{"n": 1e400}"#)]
fn what_serde_json_cannot_hold_is_invalid_json(#[case] response: &str) {
    let schema = prepared(json!({"type": "object"}));
    let failure = extract_and_validate(&schema, response).unwrap_err();
    assert_eq!(failure.reason, FailureReason::InvalidJson, "{failure:?}");
}

#[test]
fn a_pattern_in_an_unknown_keyword_a_ref_reaches_is_bounded_and_its_format_an_annotation() {
    // Too big for the limits: refused where it is written, though under a keyword the walk does
    // not know.
    let too_big = json!({
        "x-shared": {"p": {"pattern": "(ab|cd){20000}"}},
        "properties": {"a": {"$ref": "#/x-shared/p"}}
    });
    match Schema::prepare(&too_big) {
        Err(SchemaError::Pattern { pointer, .. }) => assert_eq!(pointer, "/x-shared/p/pattern"),
        other => panic!("expected a pattern refusal, got {other:?}"),
    }
    // No regex at all in a keyword's data is no refusal: it may be no schema.
    let data = json!({"x-note": {"pattern": "(unclosed"}, "type": "object"});
    assert!(Schema::prepare(&data).is_ok());
    // Reached through the `$ref`, its `format` stays an annotation and its pattern is checked.
    let reached = json!({
        "x-shared": {"p": {"type": "string", "format": "email", "pattern": "^[a-z]+$"}},
        "properties": {"a": {"$ref": "#/x-shared/p"}}
    });
    let prepared = Schema::prepare(&reached).expect("compiles");
    assert!(prepared.issues(&json!({"a": "plain"}), 10).is_empty());
    let issues = prepared.issues(&json!({"a": "NOT"}), 10);
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].0, "/a");
}
