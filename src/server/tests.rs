use serde_json::Value;

use super::*;

#[test]
fn eras_switch_at_the_releases_read() {
    assert_eq!(era(Version::new(1, 36, 1)), Era::Eager);
    assert_eq!(era(Version::new(1, 37, 0)), Era::Catalog);
    assert_eq!(era(Version::new(1, 48, 0)), Era::Catalog);
    assert_eq!(era(Version::new(1, 49, 0)), Era::CatalogUuidName);
}

/// `StoredConversation.model_validate_json` of 1.58.2 and 1.43.1 (the
/// same verdicts) on a real 1.58.2 meta.json with one field replaced, now
/// judged by the extracted model, nested objects included.
#[test]
fn meta_field_types_as_pydantic_says() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/listing/1.58.2/5b99a880a4e45a5cb72780153adc8aba/meta.json"
    );
    let base: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let newest = Version::new(1, 58, 2);
    assert!(meta::valid(&base, newest));
    let table: &[(&str, &str, bool)] = &[
        ("observability_span_name", r#""""#, false),
        ("observability_span_name", r#"null"#, true),
        ("observability_span_name", r#""a b""#, false),
        (
            "observability_span_name",
            &format!("\"{}\"", "x".repeat(129)),
            false,
        ),
        ("observability_span_name", r#""my.span:1/x-y""#, true),
        ("conversation_id", r#""""#, false),
        ("conversation_id", r#""x""#, false),
        ("tags", r#"null"#, true),
        ("tags", r#"{"A": "b"}"#, false),
        ("tags", r#"{"a": 1}"#, false),
        ("confirmation_policy", r#"{}"#, false),
        ("confirmation_policy", r#"null"#, false),
        ("security_analyzer", r#"{}"#, false),
        ("title", r#""""#, true),
        ("title", r#""  ""#, true),
        ("secrets", r#"null"#, false),
        ("secrets", r#"[]"#, false),
        ("observability_metadata", r#"null"#, true),
        ("tool_module_qualnames", r#"null"#, false),
        ("plugins", r#"null"#, true),
        ("client_tools", r#"null"#, false),
        ("max_iterations", r#""5""#, true),
        ("max_iterations", r#"true"#, true),
        ("stuck_detection", r#"0"#, true),
        ("stuck_detection", r#""yes""#, true),
        ("stuck_detection", r#"2"#, false),
        ("required_runtime_credential_bindings", r#"null"#, false),
        ("metrics", r#"{}"#, true),
        ("hook_config", r#"{}"#, true),
        ("initial_message", r#"{}"#, true),
        ("launched_agent_profile", r#"{}"#, false),
    ];
    for (k, json, ok) in table {
        let mut m = base.clone();
        m[*k] = serde_json::from_str(json).unwrap();
        for v in [newest, Version::new(1, 43, 1)] {
            assert_eq!(meta::valid(&m, v), *ok, "{k} = {json} ({v})");
        }
    }
}
