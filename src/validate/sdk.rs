//! The SDK's own validators, as convo-doctor encodes them: the function
//! validators extract_schemas.py names (`Sem`, read from each release's
//! code) and `DiscriminatedUnionMixin._validate_subtype`'s `kind` dispatch.
//!
//! Long because: each SDK validator encoded once, beside the others it
//! dispatches to.

use super::jv::{Map, Value};
use super::schema::{FnMode, Node, NodeId, Sem};
use super::walker::{type_of, Ctx};

/// `re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()`: `_` before every ASCII
/// capital but the first character, then Python's `str.lower()`.
fn pascal_to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            out.push('_');
        }
        out.push(c);
    }
    out.to_lowercase()
}

/// Python's `not x` for a parsed JSON value (`None` when the key is absent).
fn py_falsy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(Value::Bool(true)) => false,
    }
}

/// `_validate_observability_metadata`'s value rule: a str, bool, int or
/// float, or a list all of str, all of bool, all of int (bools excluded) or
/// all of float (an empty list passes).
fn otel_value(x: &Value) -> bool {
    let is_int = |v: &Value| matches!(v, Value::Number(n) if !n.is_f64());
    let is_float = |v: &Value| matches!(v, Value::Number(n) if n.is_f64());
    match x {
        Value::String(_) | Value::Bool(_) | Value::Number(_) => true,
        Value::Array(a) => {
            a.iter().all(Value::is_string)
                || a.iter().all(|v| matches!(v, Value::Bool(_)))
                || a.iter().all(is_int)
                || a.iter().all(is_float)
        }
        _ => false,
    }
}

impl Ctx<'_> {
    /// An after validator: the inner schema first, then `check` on the
    /// input when the inner schema accepts it (`Some(message)`: refused).
    fn after(
        &mut self,
        inner: Option<NodeId>,
        v: &Value,
        check: impl FnOnce(&Value) -> Option<&'static str>,
    ) {
        let before = self.out.errors.len();
        if let Some(i) = inner {
            self.run(i, v)
        }
        if self.out.errors.len() == before {
            if let Some(msg) = check(v) {
                self.err("value_error", msg);
            }
        }
    }

    /// The old `_validate_subtype` calls `data.pop("kind", None)` on anything.
    pub(super) fn crash(&mut self, v: &Value) {
        match v {
            Value::Array(_) => self.err("TypeError", "pop expected at most 1 argument, got 2"),
            other => self.err(
                "AttributeError",
                format!(
                    "'{}' object has no attribute 'pop'",
                    if other.is_null() {
                        "NoneType"
                    } else {
                        type_of(other)
                    }
                ),
            ),
        }
    }

    pub(super) fn kinds(
        &mut self,
        base: &str,
        choices: &[(String, NodeId)],
        unhashable_ve: bool,
        v: &Value,
    ) {
        let Value::Object(m) = v else {
            if self.s.dum_crash {
                self.crash(v);
            } else {
                self.model_type(base);
            }
            return;
        };
        let kind = match m.get("kind") {
            None | Some(Value::Null) if choices.len() == 1 => Some(choices[0].0.as_str()),
            None | Some(Value::Null) => None,
            Some(Value::String(k)) => Some(k.as_ref()),
            Some(Value::Array(_)) | Some(Value::Object(_)) if unhashable_ve => None,
            Some(Value::Array(_)) | Some(Value::Object(_)) => {
                self.err(
                    "TypeError",
                    format!(
                        "unhashable type: '{}'",
                        type_of(m.get("kind").unwrap_or(&Value::Null))
                    ),
                );
                return;
            }
            Some(_) => None,
        };
        match kind.and_then(|k| choices.iter().find(|(c, _)| c == k)) {
            Some((_, node)) => self.run(*node, v),
            None => {
                let client = kind
                    .filter(|k| k.starts_with("ClientAction_"))
                    .map(String::from);
                // the SDK names the kind: only the empty one it substitutes is
                // repeated here, never a value from the file
                let msg = if matches!(m.get("kind"), None | Some(Value::Null)) {
                    format!("Value error, Unknown kind '' for {base}")
                } else {
                    format!("Value error, Unknown kind for {base}")
                };
                self.err("value_error", msg);
                if let Some(e) = self.out.errors.last_mut() {
                    e.client_kind = client;
                }
            }
        }
    }

    pub(super) fn function(
        &mut self,
        mode: FnMode,
        name: &str,
        sem: &Sem,
        inner: Option<NodeId>,
        v: &Value,
    ) {
        let short = || {
            let short = name.rsplit('.').take(2).collect::<Vec<_>>();
            short.into_iter().rev().collect::<Vec<_>>().join(".")
        };
        // These before validators start `if not isinstance(data, dict): return
        // data`: a non-dict goes to the inner schema unchanged.
        let dict_only = matches!(
            sem,
            Sem::LlmCoerceInputs { .. }
                | Sem::HooksInput(_)
                | Sem::SystemPromptFields
                | Sem::SecurityPromptDefault
                | Sem::DecryptMcpConfig
                | Sem::PopulateAgent
                | Sem::LegacyMcpServers
        );
        if dict_only && !v.is_object() {
            if let Some(i) = inner {
                self.run(i, v)
            }
            return;
        }
        match sem {
            Sem::Pass => {
                if let Some(i) = inner {
                    self.run(i, v)
                }
            }
            Sem::Sequence => {
                if v.is_string() {
                    self.err(
                        "sequence_str",
                        "'str' instances are not allowed as a Sequence value",
                    );
                } else if let Some(i) = inner {
                    self.run(i, v)
                }
            }
            Sem::NotRootSentinel => {
                let before = self.out.errors.len();
                if let Some(i) = inner {
                    self.run(i, v)
                }
                if self.out.errors.len() == before && v.as_str() == Some("__root__") {
                    self.err(
                        "value_error",
                        "Value error, Event id may not equal reserved sentinel '__root__'",
                    );
                }
            }
            Sem::DropKeys(keys) => match (v, inner) {
                (Value::Object(m), Some(i)) if keys.iter().any(|k| m.contains_key(k)) => {
                    let mut m2: Map = m.clone();
                    for k in keys {
                        m2.remove(k);
                    }
                    self.run(i, &Value::Object(m2));
                }
                (_, Some(i)) => self.run(i, v),
                _ => {}
            },
            Sem::ContentCoerce => match (v, inner) {
                (Value::String(_), _) => {}
                (Value::Null, Some(i)) => self.run(i, &Value::Array(vec![])),
                (_, Some(i)) => self.run(i, v),
                _ => {}
            },
            Sem::NormalizeStatus(aliases) => {
                let Some(i) = inner else { return };
                match v {
                    Value::String(t) => {
                        let norm = t.trim().to_lowercase().replace(['-', ' '], "_");
                        let cand = Value::String(norm.clone().into());
                        let o = self.trial(i, &cand);
                        if o.is_valid() {
                            return;
                        }
                        let mapped = aliases
                            .get(&norm)
                            .map(|a| Value::String(a.clone().into()))
                            .unwrap_or_else(|| v.clone());
                        self.run(i, &mapped);
                    }
                    _ => self.run(i, v),
                }
            }
            Sem::ResolveKind { kinds, null } => match v {
                Value::Null if *null => {}
                Value::String(k) => {
                    let known = match &self.s.nodes[*kinds] {
                        Node::Kinds { choices, .. } => choices.iter().any(|(c, _)| c == k),
                        _ => false,
                    };
                    if !known {
                        let base = match &self.s.nodes[*kinds] {
                            Node::Kinds { base, .. } => base.as_str(),
                            _ => "?",
                        };
                        self.err(
                            "value_error",
                            format!("Value error, Unknown kind for {base}"),
                        );
                    }
                }
                _ => self.err(
                    "assertion_error",
                    "Assertion failed, the value is not a kind name",
                ),
            },
            Sem::Tags(max) => match v {
                Value::Null => {}
                Value::Object(m) => {
                    for (k, x) in m {
                        // re.match(r"^[a-z0-9]+$"): `$` also matches before a final newline
                        let key = k.strip_suffix('\n').unwrap_or(k);
                        if key.is_empty()
                            || !key
                                .bytes()
                                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                        {
                            self.err(
                                "value_error",
                                "Value error, Tag key is invalid: keys must be lowercase alphanumeric only",
                            );
                            return;
                        }
                        let len = match x {
                            Value::String(t) => t.chars().count(),
                            Value::Array(a) => a.len(),
                            Value::Object(o) => o.len(),
                            other => {
                                self.err(
                                    "TypeError",
                                    format!(
                                        "object of type '{}' has no len()",
                                        if other.is_null() {
                                            "NoneType"
                                        } else {
                                            type_of(other)
                                        }
                                    ),
                                );
                                return;
                            }
                        };
                        if len > *max {
                            self.err(
                                "value_error",
                                format!("Value error, Tag value exceeds maximum length of {max} characters"),
                            );
                            return;
                        }
                    }
                    if let Some(i) = inner {
                        self.run(i, v)
                    }
                }
                other => self.err(
                    "AttributeError",
                    format!("'{}' object has no attribute 'items'", type_of(other)),
                ),
            },
            Sem::NonDictPass => match (v, inner) {
                (Value::Object(_), _) => self.unjudged(&short()),
                (_, Some(i)) => self.run(i, v),
                _ => {}
            },
            Sem::LlmCoerceInputs { idle_default } => {
                let Value::Object(m) = v else { return };
                let model = match m.get("model") {
                    x if py_falsy(x) => {
                        self.err("value_error", "Value error, model must be specified in LLM");
                        return;
                    }
                    Some(Value::String(s)) => s.as_ref(),
                    Some(other) => {
                        self.err(
                            "AttributeError",
                            format!("'{}' object has no attribute 'startswith'", type_of(other)),
                        );
                        return;
                    }
                    None => unreachable!("None is falsy"),
                };
                let mut d = m.clone();
                if *idle_default && !d.contains_key("stream_idle_timeout") {
                    let t = d.get("timeout").cloned().unwrap_or(Value::from(300));
                    d.insert("stream_idle_timeout".into(), t);
                }
                if model.starts_with("azure") && py_falsy(d.get("api_version")) {
                    d.insert("api_version".into(), Value::from("2024-12-01-preview"));
                }
                if model.starts_with("openai/")
                    && matches!(
                        d.get("base_url").and_then(Value::as_str),
                        Some("https://api.openai.com" | "https://api.openai.com/")
                    )
                {
                    d.insert("base_url".into(), Value::Null);
                }
                if let Some(i) = inner {
                    self.run(i, &Value::Object(d))
                }
            }
            Sem::HooksInput(fields) => {
                let Value::Object(m) = v else { return };
                let data = match m.get("hooks") {
                    None => m,
                    Some(Value::Object(h)) => h,
                    Some(other) => {
                        let t = if other.is_null() {
                            "NoneType"
                        } else {
                            type_of(other)
                        };
                        self.err(
                            "AttributeError",
                            format!("'{t}' object has no attribute 'items'"),
                        );
                        return;
                    }
                };
                let mut norm = Map::new();
                for (k, x) in data {
                    let snake = pascal_to_snake(k);
                    if snake != *k && !fields.contains(&snake) {
                        self.err("value_error", "Value error, Unknown event type");
                        return;
                    }
                    if norm.contains_key(&snake) {
                        self.err("value_error", "Value error, Duplicate hook event");
                        return;
                    }
                    norm.insert(snake.into(), x.clone());
                }
                if let Some(i) = inner {
                    self.run(i, &Value::Object(norm))
                }
            }
            Sem::NullToEmptyDict => match (v, inner) {
                (Value::Null, Some(i)) => self.run(i, &Value::Object(Map::new())),
                (_, Some(i)) => self.run(i, v),
                _ => {}
            },
            Sem::SystemPromptFields => {
                let Value::Object(m) = v else { return };
                let mut d = m.clone();
                if d.get("security_policy_filename") == Some(&Value::Null) {
                    d.insert("security_policy_filename".into(), Value::from(""));
                }
                let inline = !matches!(d.get("system_prompt"), None | Some(Value::Null));
                let custom = d
                    .get("system_prompt_filename")
                    .is_some_and(|f| f.as_str() != Some("system_prompt.j2"));
                if inline && custom {
                    self.err("value_error", "Value error, Cannot set both 'system_prompt' and a non-default 'system_prompt_filename'. Use one or the other.");
                    return;
                }
                if let Some(i) = inner {
                    self.run(i, &Value::Object(d))
                }
            }
            Sem::SecurityPromptDefault => {
                let Value::Object(m) = v else { return };
                let mut d = m.clone();
                let mut kw = match d.get("system_prompt_kwargs") {
                    Some(Value::Object(k)) => k.clone(),
                    _ => Map::new(),
                };
                if !kw.contains_key("llm_security_analyzer") {
                    kw.insert("llm_security_analyzer".into(), Value::Bool(true));
                }
                d.insert("system_prompt_kwargs".into(), Value::Object(kw));
                if let Some(i) = inner {
                    self.run(i, &Value::Object(d))
                }
            }
            Sem::DecryptMcpConfig => {
                let Value::Object(m) = v else { return };
                let mut d = m.clone();
                match d.remove("encrypted_mcp_config") {
                    None => match d.get("mcp_config") {
                        None | Some(Value::Null) => {}
                        Some(Value::Object(c)) => {
                            if mcp_decrypt_would_raise(c) {
                                // raises only if the server has a cipher
                                self.unjudged(&short());
                            }
                        }
                        Some(_) => {
                            self.err(
                                "value_error",
                                "Value error, mcp_config must be a dictionary when provided",
                            );
                            return;
                        }
                    },
                    Some(Value::String(_)) => self.unjudged(&short()),
                    Some(_) => {
                        self.err(
                            "value_error",
                            "Value error, encrypted_mcp_config must be a string when provided",
                        );
                        return;
                    }
                }
                if let Some(i) = inner {
                    self.run(i, &Value::Object(d))
                }
            }
            Sem::SpanName(max) => match v {
                Value::Null => {}
                Value::String(t) if !t.is_empty() => {
                    // re.match(r"^[A-Za-z0-9._:/-]+$"): `$` also matches before a final newline
                    let body = t.strip_suffix('\n').unwrap_or(t);
                    if t.chars().count() > *max {
                        self.err(
                            "value_error",
                            format!("Value error, Observability span name exceeds maximum length of {max} characters"),
                        );
                    } else if body.is_empty()
                        || !body
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b))
                    {
                        self.err("value_error", "Value error, Observability span name may only contain letters, numbers, dots, underscores, colons, slashes, and hyphens");
                    } else if let Some(i) = inner {
                        self.run(i, v)
                    }
                }
                _ => self.err(
                    "value_error",
                    "Value error, Observability span name must be a non-empty string",
                ),
            },
            Sem::ObsTags => match v {
                Value::Null => {}
                Value::Array(a) => {
                    if a.iter().all(|t| t.as_str().is_some_and(|s| !s.is_empty())) {
                        if let Some(i) = inner {
                            self.run(i, v)
                        }
                    } else {
                        self.err(
                            "value_error",
                            "Value error, Observability tags must be non-empty strings",
                        );
                    }
                }
                _ => self.err("value_error", "Value error, Observability tags must be a list"),
            },
            Sem::ObsMetadata => match v {
                Value::Null => {}
                Value::Object(m) => {
                    for (k, x) in m {
                        if k.is_empty() {
                            self.err(
                                "value_error",
                                "Value error, Observability metadata keys must be non-empty strings",
                            );
                            return;
                        }
                        if !otel_value(x) {
                            self.err("value_error", "Value error, Observability metadata value must be a scalar or a homogeneous sequence of strings, booleans, integers, or floats");
                            return;
                        }
                    }
                    if let Some(i) = inner {
                        self.run(i, v)
                    }
                }
                _ => self.err(
                    "value_error",
                    "Value error, Observability metadata must be a dictionary",
                ),
            },
            Sem::ObjectSchema => self.after(inner, v, |v| {
                let Value::Object(m) = v else { return None };
                (m.get("type").and_then(Value::as_str) != Some("object"))
                    .then_some("Value error, ClientToolSpec.parameters must be an object JSON Schema")
            }),
            Sem::RepoPath => self.after(inner, v, |v| match v.as_str() {
                Some(p) if p.starts_with('/') => {
                    Some("Value error, repo_path must be relative, not absolute")
                }
                Some(p) if p.split('/').any(|c| c == "..") => {
                    Some("Value error, repo_path cannot contain '..' (parent directory traversal)")
                }
                _ => None,
            }),
            Sem::RefForRefBase => self.after(inner, v, |v| {
                let Value::Object(m) = v else { return None };
                let ref_missing = matches!(m.get("ref"), None | Some(Value::Null));
                (m.get("base").and_then(Value::as_str) == Some("ref") && ref_missing)
                    .then_some("Value error, A `ref` base needs a `ref`")
            }),
            Sem::RejectValue(bad) => self.after(inner, v, |v| {
                (v == bad).then_some("Value error, the SDK's validator refuses this value")
            }),
            Sem::PopulateAgent => {
                let Value::Object(m) = v else { return };
                let given = |k: &str| !matches!(m.get(k), None | Some(Value::Null));
                let (profile, agent, settings) = (
                    given("agent_profile_id"),
                    given("agent"),
                    given("agent_settings"),
                );
                if profile && (agent || settings) {
                    self.err("value_error", "Value error, `agent_profile_id` is mutually exclusive with `agent` and `agent_settings`");
                    return;
                }
                if !profile && !agent && settings {
                    // the agent is built from the settings: not encoded
                    self.unjudged(&short());
                    return;
                }
                let mut d = m.clone();
                if let (false, Some(Value::Object(a))) = (profile, m.get("agent")) {
                    if !a.contains_key("kind") && a.contains_key("llm") {
                        let mut a2 = a.clone();
                        a2.insert("kind".into(), Value::from("Agent"));
                        d.insert("agent".into(), Value::Object(a2));
                    }
                }
                if let Some(i) = inner {
                    self.run(i, &Value::Object(d))
                }
            }
            Sem::RequireAgent => self.after(inner, v, |v| {
                let Value::Object(m) = v else { return None };
                let absent = |k: &str| matches!(m.get(k), None | Some(Value::Null));
                (absent("agent") && absent("agent_profile_id") && absent("agent_settings"))
                    .then_some("Value error, One of `agent`, `agent_settings`, or `agent_profile_id` must be provided")
            }),
            Sem::LegacyMcpServers => {
                let Value::Object(m) = v else { return };
                let config_none = matches!(m.get("mcp_config"), None | Some(Value::Null));
                let servers = m.get("mcp_servers").filter(|s| !s.is_null());
                match (config_none, servers, inner) {
                    (true, Some(s), Some(i)) => {
                        let mut d = m.clone();
                        d.insert("mcp_config".into(), s.clone());
                        self.run(i, &Value::Object(d))
                    }
                    (_, _, Some(i)) => self.run(i, v),
                    _ => {}
                }
            }
            Sem::Opaque => match (mode, inner) {
                (FnMode::After, Some(i)) => {
                    let o = self.trial(i, v);
                    let ok = o.is_valid();
                    self.merge(o);
                    if ok {
                        self.unjudged(&short());
                    }
                }
                _ => self.unjudged(&short()),
            },
        }
    }
}

/// Whether 1.29.3's `_decrypt_mcp_secret_values` raises on this `mcp_config`
/// (it runs only when the server has a cipher): `mcpServers` present and not
/// a dict, or a server, or a server's `env`/`headers`, not a dict.
fn mcp_decrypt_would_raise(config: &Map) -> bool {
    match config.get("mcpServers") {
        None => false,
        Some(Value::Object(servers)) => servers.iter().any(|(_, server)| match server {
            Value::Object(s) => ["env", "headers"]
                .iter()
                .any(|k| s.get(k).is_some_and(|x| !x.is_object())),
            _ => true,
        }),
        Some(_) => true,
    }
}
