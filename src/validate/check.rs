//! pydantic v2's Python-mode lax validation of parsed JSON, node by node.
//! Error types and messages are pydantic's; no message ever quotes a value
//! from the file (only locations, types and the schema's own constants).

use super::jv::{Map, Value};

use super::schema::{Extra, FnMode, Node, NodeId, Schema, Sem};

/// One validation error, as pydantic reports it (`loc: msg [type=...]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VError {
    /// pydantic's `loc`, joined with `.`.
    pub loc: String,
    /// pydantic's error type (`missing`, `extra_forbidden`, ...), or a Python
    /// exception name when the SDK's validator crashes instead.
    pub kind: &'static str,
    pub msg: String,
    /// An unknown `ClientAction_*` kind (registered from meta.json's
    /// `client_tools` at run time, so not in the extracted schema).
    pub client_kind: Option<String>,
}

impl VError {
    /// The Python exception the SDK raises for it: `ValidationError`, or the
    /// exception an SDK validator crashes with (old `_validate_subtype`).
    pub fn exception(&self) -> &'static str {
        match self.kind {
            k @ ("AttributeError" | "TypeError" | "KeyError") => k,
            _ => "ValidationError",
        }
    }
}

impl std::fmt::Display for VError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.loc.is_empty() {
            write!(f, "{} [type={}]", self.msg, self.kind)
        } else {
            // a loc holds the file's own keys: clipped like any quoted name
            let loc = crate::text::clip(&self.loc, crate::text::QUOTE_MAX);
            write!(f, "{loc}: {} [type={}]", self.msg, self.kind)
        }
    }
}

/// The verdict on one document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub errors: Vec<VError>,
    /// Places (loc and validator) whose function validator is not encoded:
    /// accepted here, but convo-doctor cannot judge them.
    pub unjudged: Vec<(String, String)>,
}

impl Outcome {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

const MAX_DEPTH: usize = 300;

/// One step of a `loc`, kept unformatted until an error needs it (most
/// validations raise none, so no segment is ever allocated).
enum Seg<'s> {
    /// A field, tag or class name from the schema.
    Name(&'s str),
    /// A list or tuple index.
    Idx(usize),
    /// A key from the file (a dict key, an extra key).
    Owned(String),
}

impl std::fmt::Display for Seg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Seg::Name(s) => f.write_str(s),
            Seg::Idx(i) => write!(f, "{i}"),
            Seg::Owned(s) => f.write_str(s),
        }
    }
}

struct Ctx<'s> {
    s: &'s Schema,
    /// pydantic renders the messages for a JSON input (`model_validate_json`:
    /// events) differently from a Python one (the state).
    json: bool,
    loc: Vec<Seg<'s>>,
    out: Outcome,
    depth: usize,
}

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

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "None",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_serde().to_string(),
    }
}

/// pydantic's "'a', 'b' or 'c'".
fn expected_list(vals: &[Value]) -> String {
    let parts: Vec<String> = vals.iter().map(show).collect();
    match parts.len() {
        0 => String::new(),
        1 => parts[0].clone(),
        n => format!("{} or {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

impl<'s> Ctx<'s> {
    fn loc_string(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for (i, seg) in self.loc.iter().enumerate() {
            if i > 0 {
                out.push('.');
            }
            let _ = write!(out, "{seg}");
        }
        out
    }

    fn err(&mut self, kind: &'static str, msg: impl Into<String>) {
        self.out.errors.push(VError {
            loc: self.loc_string(),
            kind,
            msg: msg.into(),
            client_kind: None,
        });
    }

    fn unjudged(&mut self, what: &str) {
        let loc = self.loc_string();
        if !self
            .out
            .unjudged
            .iter()
            .any(|(l, w)| *l == loc && w == what)
        {
            self.out.unjudged.push((loc, what.to_string()));
        }
    }

    fn at(&mut self, seg: Seg<'s>, id: NodeId, v: &Value) {
        self.loc.push(seg);
        self.run(id, v);
        self.loc.pop();
    }

    /// Validate `v` against `id` in a scratch outcome; (ok, outcome).
    fn trial(&mut self, id: NodeId, v: &Value) -> Outcome {
        let saved = std::mem::take(&mut self.out);
        self.run(id, v);
        std::mem::replace(&mut self.out, saved)
    }

    fn merge(&mut self, o: Outcome) {
        self.out.errors.extend(o.errors);
        for u in o.unjudged {
            if !self.out.unjudged.contains(&u) {
                self.out.unjudged.push(u);
            }
        }
    }

    fn run(&mut self, id: NodeId, v: &Value) {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.unjudged("nesting beyond the validator's depth");
        } else {
            self.node(id, v);
        }
        self.depth -= 1;
    }

    fn node(&mut self, id: NodeId, v: &Value) {
        let s = self.s;
        match &s.nodes[id] {
            Node::Any => {}
            Node::Pending => self.unjudged("unresolved definition"),
            Node::None => {
                if !v.is_null() {
                    self.err("none_required", "Input should be None");
                }
            }
            Node::Bool => {
                if let Err((k, m)) = scalar::bool(v) {
                    self.err(k, m);
                }
            }
            Node::Int(b) => match scalar::int(v) {
                Err((k, m)) => self.err(k, m),
                Ok(n) => self.bounds(b, n),
            },
            Node::Float(b) => match scalar::float(v) {
                Err((k, m)) => self.err(k, m),
                Ok(n) => self.bounds(b, n),
            },
            Node::Str {
                min,
                max,
                strict: _,
                pattern,
            } => match v {
                Value::String(t) => {
                    if *pattern {
                        self.unjudged("string pattern or transform");
                        return;
                    }
                    let n = t.chars().count();
                    if let Some(m) = min.filter(|m| n < *m) {
                        let unit = if m == 1 { "character" } else { "characters" };
                        self.err(
                            "string_too_short",
                            format!("String should have at least {m} {unit}"),
                        );
                    }
                    if let Some(m) = max.filter(|m| n > *m) {
                        let unit = if m == 1 { "character" } else { "characters" };
                        self.err(
                            "string_too_long",
                            format!("String should have at most {m} {unit}"),
                        );
                    }
                }
                _ => self.err("string_type", "Input should be a valid string"),
            },
            Node::Bytes => {
                if !v.is_string() {
                    self.err("bytes_type", "Input should be a valid bytes");
                }
            }
            Node::Decimal => self.unjudged("decimal"),
            Node::Literal(vals) => {
                if !vals.iter().any(|e| scalar::literal_eq(e, v)) {
                    self.err(
                        "literal_error",
                        format!("Input should be {}", expected_list(vals)),
                    );
                }
            }
            Node::Enum { values, sub } => {
                if !values.iter().any(|e| scalar::enum_eq(e, v, sub)) {
                    self.err("enum", format!("Input should be {}", expected_list(values)));
                }
            }
            Node::Datetime => {
                if let Err((k, m)) = scalar::datetime(v) {
                    self.err(k, m);
                }
            }
            Node::Uuid => {
                if let Err((k, m)) = scalar::uuid(v) {
                    self.err(k, m);
                }
            }
            Node::Date | Node::Time | Node::Timedelta | Node::Url => {
                self.unjudged("date/time/url type")
            }
            Node::Callable => self.err("callable_type", "Input should be callable"),
            Node::IsInstance(cls) => {
                // the Python types json.loads produces: dict, list, str, int,
                // float, bool, None
                let ok = match cls.as_str() {
                    "object" => true,
                    "Sequence" | "Collection" | "Iterable" | "Reversible" | "Container"
                    | "Sized" => {
                        v.is_array()
                            || v.is_string()
                            || v.is_object() && cls != "Sequence" && cls != "Reversible"
                    }
                    "MutableSequence" | "list" => v.is_array(),
                    "Mapping" | "MutableMapping" | "dict" => v.is_object(),
                    "Hashable" => !(v.is_array() || v.is_object()),
                    "str" => v.is_string(),
                    _ => false,
                };
                if !ok {
                    self.err(
                        "is_instance_of",
                        format!("Input should be an instance of {cls}"),
                    );
                }
            }
            Node::List { item, min, max } => match v {
                Value::Array(a) => {
                    if let Some(it) = item {
                        for (i, x) in a.iter().enumerate() {
                            self.at(Seg::Idx(i), *it, x);
                        }
                    }
                    if let Some(m) = min.filter(|m| a.len() < *m) {
                        self.err(
                            "too_short",
                            format!(
                                "List should have at least {m} item{} after validation, not {}",
                                if m == 1 { "" } else { "s" },
                                a.len()
                            ),
                        );
                    }
                    if let Some(m) = max.filter(|m| a.len() > *m) {
                        self.err(
                            "too_long",
                            format!(
                                "List should have at most {m} item{} after validation, not {}",
                                if m == 1 { "" } else { "s" },
                                a.len()
                            ),
                        );
                    }
                }
                _ => self.array_type("list_type", "list"),
            },
            Node::Set { item } => match v {
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        if x.is_array() || x.is_object() {
                            self.loc.push(Seg::Idx(i));
                            self.err("TypeError", format!("unhashable type: '{}'", type_of(x)));
                            self.loc.pop();
                        } else if let Some(it) = item {
                            self.at(Seg::Idx(i), *it, x);
                        }
                    }
                }
                _ => self.array_type("set_type", "set"),
            },
            Node::Tuple { items, variadic } => match v {
                Value::Array(a) => self.tuple(items, *variadic, a),
                _ => self.array_type("tuple_type", "tuple"),
            },
            Node::Dict { key, value } => match v {
                Value::Object(m) => {
                    for (k, x) in m {
                        if let Some(kn) = key {
                            let kv = Value::String(k.clone());
                            self.loc.push(Seg::Owned(format!("{k}.[key]")));
                            self.run(*kn, &kv);
                            self.loc.pop();
                        }
                        if let Some(vn) = value {
                            self.at(Seg::Owned(k.to_string()), *vn, x);
                        }
                    }
                }
                _ => self.dict_type(),
            },
            Node::Nullable(inner) => {
                if !v.is_null() {
                    self.run(*inner, v);
                }
            }
            Node::Chain(steps) => {
                for &st in steps {
                    let before = self.out.errors.len();
                    self.run(st, v);
                    if self.out.errors.len() > before {
                        break;
                    }
                }
            }
            Node::Union(choices) => self.union(choices, v),
            Node::Tagged { field, choices } => {
                let Value::Object(m) = v else {
                    self.err(
                        "model_attributes_type",
                        "Input should be a valid dictionary or object to extract fields from",
                    );
                    return;
                };
                match m.get(field.as_str()) {
                    None => {
                        if field == "kind" {
                            // the SDK's `kind_of` discriminator: obj["kind"]
                            self.err("KeyError", "'kind'");
                        } else {
                            self.err(
                                "union_tag_not_found",
                                format!("Unable to extract tag using discriminator '{field}'"),
                            );
                        }
                    }
                    Some(tag) => {
                        let tag_s = tag.as_str();
                        match choices.iter().find(|(k, _)| Some(k.as_str()) == tag_s) {
                            Some((k, c)) => self.at(Seg::Name(k), *c, v),
                            None => {
                                let names: Vec<String> =
                                    choices.iter().map(|(k, _)| format!("'{k}'")).collect();
                                self.err("union_tag_invalid", format!("Input tag found using '{field}' does not match any of the expected tags: {}", names.join(", ")));
                            }
                        }
                    }
                }
            }
            Node::Kinds {
                base,
                choices,
                unhashable_value_error,
            } => self.kinds(base, choices, *unhashable_value_error, v),
            Node::Model {
                name,
                fields,
                extra,
                extras,
                dum,
                kind_alias,
                custom_init,
                init_str,
            } => {
                let Value::Object(m) = v else {
                    if *dum && s.dum_crash {
                        self.crash(v);
                    } else if name == "dict" {
                        self.dict_type();
                    } else {
                        self.model_type(name);
                    }
                    return;
                };
                if *custom_init {
                    self.unjudged("a custom __init__");
                    return;
                }
                let mut skip_kind = false;
                if *dum && !*kind_alias {
                    match m.get("kind") {
                        None => {}
                        Some(Value::String(k)) if k == name => skip_kind = true,
                        Some(_) => {
                            self.err("assertion_error", "Assertion failed, ");
                            return;
                        }
                    }
                }
                if *dum && *kind_alias {
                    self.unjudged("a model with a field aliased `kind`");
                    return;
                }
                // the class's own __init__(*, key, **kwargs) passes str(key) on
                let inited;
                let m = if init_str.is_empty() {
                    m
                } else {
                    let mut m2 = m.clone();
                    for k in init_str {
                        match m2.get_mut(k) {
                            Some(x) => {
                                if !x.is_string() {
                                    *x = Value::String(x.py_str().into());
                                }
                            }
                            None => {
                                self.err(
                                    "TypeError",
                                    format!("{name}.__init__() missing 1 required keyword-only argument: '{k}'"),
                                );
                                return;
                            }
                        }
                    }
                    inited = m2;
                    &inited
                };
                for f in fields {
                    let hit = m.get_key_value(f.key.as_str()).or_else(|| {
                        f.by_name
                            .then(|| m.get_key_value(f.name.as_str()))
                            .flatten()
                    });
                    match hit {
                        // the key found is the field's alias or its name
                        Some((k, x)) => {
                            let seg = if *k == f.key { &f.key } else { &f.name };
                            self.at(Seg::Name(seg), f.node, x)
                        }
                        None if f.required => {
                            self.loc.push(Seg::Name(&f.key));
                            self.err("missing", "Field required");
                            self.loc.pop();
                        }
                        None => {}
                    }
                }
                if *extra != Extra::Ignore {
                    for (k, x) in m {
                        if skip_kind && k == "kind" {
                            continue;
                        }
                        let known = fields
                            .iter()
                            .any(|f| f.key == *k || (f.by_name && f.name == *k));
                        if known {
                            continue;
                        }
                        match (extra, extras) {
                            (Extra::Forbid, _) => {
                                self.loc.push(Seg::Owned(k.to_string()));
                                self.err("extra_forbidden", "Extra inputs are not permitted");
                                self.loc.pop();
                            }
                            (_, Some(xs)) => self.at(Seg::Owned(k.to_string()), *xs, x),
                            _ => {}
                        }
                    }
                }
            }
            Node::Fn {
                mode,
                name,
                sem,
                inner,
            } => self.function(*mode, name, sem, *inner, v),
        }
    }

    fn model_type(&mut self, name: &str) {
        let msg = if self.json {
            "Input should be an object".to_string()
        } else {
            format!("Input should be a valid dictionary or instance of {name}")
        };
        self.err("model_type", msg);
    }

    fn dict_type(&mut self) {
        let msg = if self.json {
            "Input should be an object"
        } else {
            "Input should be a valid dictionary"
        };
        self.err("dict_type", msg);
    }

    fn array_type(&mut self, kind: &'static str, what: &str) {
        let msg = if self.json {
            "Input should be a valid array".to_string()
        } else {
            format!("Input should be a valid {what}")
        };
        self.err(kind, msg);
    }

    /// pydantic's label of a union member in `loc` (a model's class name, a
    /// scalar's type name).
    fn label(&self, mut id: NodeId) -> Option<&'s str> {
        let s: &'s Schema = self.s;
        for _ in 0..8 {
            match &s.nodes[id] {
                Node::Model { name, .. } => return Some(name),
                Node::Fn { inner: Some(i), .. } => id = *i,
                Node::Chain(steps) if steps.len() == 1 => id = steps[0],
                Node::Str { .. } => return Some("str"),
                Node::Int(_) => return Some("int"),
                Node::Float(_) => return Some("float"),
                Node::Bool => return Some("bool"),
                Node::None => return Some("none"),
                _ => return None,
            }
        }
        None
    }

    /// The old `_validate_subtype` calls `data.pop("kind", None)` on anything.
    fn crash(&mut self, v: &Value) {
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

    fn kinds(&mut self, base: &str, choices: &[(String, NodeId)], unhashable_ve: bool, v: &Value) {
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

    fn function(&mut self, mode: FnMode, name: &str, sem: &Sem, inner: Option<NodeId>, v: &Value) {
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

    fn tuple(&mut self, items: &[NodeId], variadic: Option<usize>, a: &[Value]) {
        match variadic {
            None => {
                for (i, x) in a.iter().enumerate() {
                    match items.get(i) {
                        Some(&n) => self.at(Seg::Idx(i), n, x),
                        None => {
                            self.err(
                                "too_long",
                                format!(
                                    "Tuple should have at most {} item{} after validation, not {}",
                                    items.len(),
                                    if items.len() == 1 { "" } else { "s" },
                                    a.len()
                                ),
                            );
                            return;
                        }
                    }
                }
                if a.len() < items.len() {
                    self.loc.push(Seg::Idx(a.len()));
                    self.err("missing", "Field required");
                    self.loc.pop();
                }
            }
            Some(var) => {
                // items[..var] fixed, items[var] repeats, items[var+1..] fixed tail
                let head = var;
                let tail = items.len().saturating_sub(var + 1);
                if a.len() < head + tail {
                    self.loc.push(Seg::Idx(a.len()));
                    self.err("missing", "Field required");
                    self.loc.pop();
                    return;
                }
                for (i, x) in a.iter().enumerate() {
                    let n = if i < head {
                        items[i]
                    } else if i >= a.len() - tail {
                        items[var + 1 + (i - (a.len() - tail))]
                    } else {
                        items[var]
                    };
                    self.at(Seg::Idx(i), n, x);
                }
            }
        }
    }

    fn union(&mut self, choices: &[NodeId], v: &Value) {
        let mut first_fail: Option<Outcome> = None;
        let mut unjudged_ok: Option<Outcome> = None;
        for &c in choices {
            let label = self.label(c);
            if let Some(l) = label {
                self.loc.push(Seg::Name(l));
            }
            let o = self.trial(c, v);
            if label.is_some() {
                self.loc.pop();
            }
            if o.is_valid() {
                if o.unjudged.is_empty() {
                    return;
                }
                unjudged_ok.get_or_insert(o);
            } else if first_fail.is_none() {
                first_fail = Some(o);
            }
        }
        if let Some(o) = unjudged_ok {
            self.merge(o);
            return;
        }
        if let Some(o) = first_fail {
            // pydantic lists every member's errors; the first member's are kept
            self.merge(o);
        } else {
            self.err("union", "Input does not match any member of the union");
        }
    }

    fn bounds(&mut self, b: &super::schema::Bounds, n: f64) {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let fmt = |x: f64| {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{}", x as i64)
            } else {
                format!("{x}")
            }
        };
        if let Some(x) = b.gt.filter(|x| !matches!(n.partial_cmp(x), Some(Greater))) {
            self.err(
                "greater_than",
                format!("Input should be greater than {}", fmt(x)),
            );
        }
        if let Some(x) =
            b.ge.filter(|x| !matches!(n.partial_cmp(x), Some(Greater | Equal)))
        {
            self.err(
                "greater_than_equal",
                format!("Input should be greater than or equal to {}", fmt(x)),
            );
        }
        if let Some(x) = b.lt.filter(|x| !matches!(n.partial_cmp(x), Some(Less))) {
            self.err("less_than", format!("Input should be less than {}", fmt(x)));
        }
        if let Some(x) =
            b.le.filter(|x| !matches!(n.partial_cmp(x), Some(Less | Equal)))
        {
            self.err(
                "less_than_equal",
                format!("Input should be less than or equal to {}", fmt(x)),
            );
        }
        if let Some(x) = b.multiple_of.filter(|x| *x != 0.0 && (n % *x) != 0.0) {
            self.err(
                "multiple_of",
                format!("Input should be a multiple of {}", fmt(x)),
            );
        }
    }
}

impl Schema {
    /// Validate `v` from node `root`.
    pub fn validate(&self, root: NodeId, v: &Value, json: bool) -> Outcome {
        let mut c = Ctx {
            s: self,
            json,
            loc: Vec::new(),
            out: Outcome::default(),
            depth: 0,
        };
        c.run(root, v);
        c.out
    }
}

/// Scalar coercions of pydantic's lax Python mode, on JSON values
/// (checked against real pydantic by fixtures/coercions.json).
pub mod scalar {
    use super::super::jv::Value;

    pub type E = (&'static str, &'static str);

    pub fn bool(v: &Value) -> Result<bool, E> {
        const BAD: E = (
            "bool_parsing",
            "Input should be a valid boolean, unable to interpret input",
        );
        match v {
            Value::Bool(b) => Ok(*b),
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(0), _) => Ok(false),
                (Some(1), _) => Ok(true),
                (Some(_), _) => Err(BAD),
                (None, Some(0.0)) => Ok(false),
                (None, Some(1.0)) => Ok(true),
                _ => Err(BAD),
            },
            Value::String(s) => match s.to_ascii_lowercase().as_str() {
                "0" | "off" | "f" | "false" | "n" | "no" => Ok(false),
                "1" | "on" | "t" | "true" | "y" | "yes" => Ok(true),
                _ => Err(BAD),
            },
            _ => Err(("bool_type", "Input should be a valid boolean")),
        }
    }

    pub fn int(v: &Value) -> Result<f64, E> {
        const FRACT: E = (
            "int_from_float",
            "Input should be a valid integer, got a number with a fractional part",
        );
        const PARSE: E = (
            "int_parsing",
            "Input should be a valid integer, unable to parse string as an integer",
        );
        match v {
            Value::Bool(b) => Ok(*b as i64 as f64),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Ok(i as f64)
                } else if let Some(u) = n.as_u64() {
                    Ok(u as f64)
                } else {
                    let f = n.as_f64().unwrap_or(f64::NAN);
                    if !f.is_finite() {
                        Err(("finite_number", "Input should be a finite number"))
                    } else if f.fract() != 0.0 {
                        Err(FRACT)
                    } else {
                        Ok(f)
                    }
                }
            }
            Value::String(s) => parse_int_str(s).ok_or(PARSE),
            _ => Err(("int_type", "Input should be a valid integer")),
        }
    }

    /// pydantic-core's `str -> int`: optional sign, ASCII digits (with single
    /// underscores between digits), surrounding white space, and an optional
    /// fractional part of zeros.
    fn parse_int_str(s: &str) -> Option<f64> {
        let t = s.trim();
        let t = match t.split_once('.') {
            Some((a, b)) if b.chars().all(|c| c == '0') => a,
            Some(_) => return None,
            None => t,
        };
        let (neg, digits) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        if digits.is_empty()
            || digits.starts_with('_')
            || digits.ends_with('_')
            || digits.contains("__")
            || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        {
            return None;
        }
        let clean: String = digits.chars().filter(|c| *c != '_').collect();
        let n: f64 = clean.parse().ok()?;
        Some(if neg { -n } else { n })
    }

    pub fn float(v: &Value) -> Result<f64, E> {
        match v {
            Value::Bool(b) => Ok(*b as i64 as f64),
            Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => parse_float_str(s).ok_or((
                "float_parsing",
                "Input should be a valid number, unable to parse string as a number",
            )),
            _ => Err(("float_type", "Input should be a valid number")),
        }
    }

    /// Python's `float(str)`: white space around, `_` only between digits,
    /// `inf`/`infinity`/`nan` in any case.
    fn parse_float_str(s: &str) -> Option<f64> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        let body = lower.trim_start_matches(['+', '-']);
        if matches!(body, "inf" | "infinity" | "nan") {
            return Some(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        if t.is_empty()
            || !t
                .bytes()
                .all(|b| b.is_ascii_digit() || b"+-.eE_".contains(&b))
        {
            return None;
        }
        let b = t.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if c == b'_' {
                let prev = i.checked_sub(1).map(|j| b[j]);
                let next = b.get(i + 1).copied();
                if !(prev.is_some_and(|p| p.is_ascii_digit())
                    && next.is_some_and(|n| n.is_ascii_digit()))
                {
                    return None;
                }
            }
        }
        t.replace('_', "").parse::<f64>().ok()
    }

    /// `Literal[...]`: Python equality with pydantic's type discipline (a
    /// bool never matches an int literal, an int never a str one).
    pub fn literal_eq(expected: &Value, v: &Value) -> bool {
        let num = |x: &Value| match x {
            Value::Bool(b) => Some(*b as i64 as f64),
            Value::Number(n) => n.as_f64(),
            _ => None,
        };
        match (expected, v) {
            (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
                num(expected) == num(v)
            }
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Null, Value::Null) => true,
            _ => false,
        }
    }

    /// An enum member by value (lax Python mode): an int or float enum
    /// coerces the input first (`"1"` is member 1), a str enum does not.
    pub fn enum_eq(expected: &Value, v: &Value, sub: &str) -> bool {
        let coerced = match sub {
            "int" => int(v).ok(),
            "float" => float(v).ok(),
            _ => None,
        };
        match coerced {
            Some(n) => expected.as_f64() == Some(n),
            None => literal_eq(expected, v),
        }
    }

    /// speedate's unix timestamp: seconds, or milliseconds beyond 2e10,
    /// between the years 1 and 9999.
    fn timestamp_ok(f: f64) -> bool {
        let secs = if f.abs() > 2e10 { f / 1000.0 } else { f };
        f.is_finite() && (-62_135_596_800.0..=253_402_300_799.0).contains(&secs)
    }

    fn numeric_str(s: &str) -> Option<f64> {
        let body = s.strip_prefix(['+', '-']).unwrap_or(s);
        let (int, frac) = body.split_once('.').unwrap_or((body, "0"));
        if int.is_empty() || !digits(int.as_bytes()) || !digits(frac.as_bytes()) {
            return None;
        }
        s.parse().ok()
    }

    pub fn datetime(v: &Value) -> Result<(), E> {
        const PARSE: E = (
            "datetime_from_date_parsing",
            "Input should be a valid datetime or date",
        );
        match v {
            Value::Number(n) => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if timestamp_ok(f) {
                    Ok(())
                } else {
                    Err(("datetime_parsing", "Input should be a valid datetime"))
                }
            }
            Value::String(s) => {
                if iso_datetime(s) || iso_date(s) || numeric_str(s).is_some_and(timestamp_ok) {
                    Ok(())
                } else {
                    Err(PARSE)
                }
            }
            _ => Err(("datetime_type", "Input should be a valid datetime")),
        }
    }

    fn digits(b: &[u8]) -> bool {
        !b.is_empty() && b.iter().all(u8::is_ascii_digit)
    }

    fn num2(b: &[u8]) -> u32 {
        b.iter().fold(0, |a, d| a * 10 + (d - b'0') as u32)
    }

    fn iso_date(s: &str) -> bool {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return false;
        }
        if !(digits(&b[0..4]) && digits(&b[5..7]) && digits(&b[8..10])) {
            return false;
        }
        let (y, m, d) = (num2(&b[0..4]), num2(&b[5..7]), num2(&b[8..10]));
        crate::clock::valid_date(y, m, d)
    }

    /// speedate's RFC 3339 / ISO 8601 datetime: `YYYY-MM-DD[Tt _]HH:MM[:SS[.f{1,}]]`
    /// then an optional `Z`/`z` or `±HH[:]MM`.
    fn iso_datetime(s: &str) -> bool {
        let b = s.as_bytes();
        if b.len() < 16 || !iso_date(&s[..10]) || !matches!(b[10], b'T' | b't' | b' ' | b'_') {
            return false;
        }
        let r = &b[11..];
        if r.len() < 5 || !digits(&r[0..2]) || r[2] != b':' || !digits(&r[3..5]) {
            return false;
        }
        if num2(&r[0..2]) > 23 || num2(&r[3..5]) > 59 {
            return false;
        }
        let mut i = 5;
        if r.len() > i && r[i] == b':' {
            if r.len() < i + 3 || !digits(&r[i + 1..i + 3]) || num2(&r[i + 1..i + 3]) > 59 {
                return false;
            }
            i += 3;
            if r.len() > i && (r[i] == b'.' || r[i] == b',') {
                let start = i + 1;
                let mut j = start;
                while j < r.len() && r[j].is_ascii_digit() {
                    j += 1;
                }
                if j == start {
                    return false;
                }
                i = j;
            }
        }
        let tz = &r[i..];
        match tz {
            [] | [b'Z'] | [b'z'] => true,
            [s, h1, h2, b':', m1, m2] | [s, h1, h2, m1, m2] if *s == b'+' || *s == b'-' => {
                digits(&[*h1, *h2, *m1, *m2]) && num2(&[*h1, *h2]) < 24 && num2(&[*m1, *m2]) < 60
            }
            _ => false,
        }
    }

    pub fn uuid(v: &Value) -> Result<(), E> {
        let Value::String(s) = v else {
            return Err((
                "uuid_type",
                "UUID input should be a string, bytes or UUID object",
            ));
        };
        let t = s.strip_prefix("urn:uuid:").unwrap_or(s);
        let t = t
            .strip_prefix('{')
            .and_then(|x| x.strip_suffix('}'))
            .unwrap_or(t);
        let hex: Vec<u8> = t.bytes().filter(|b| *b != b'-').collect();
        let shape_ok = match t.len() {
            32 => !t.contains('-'),
            36 => {
                let b = t.as_bytes();
                b[8] == b'-'
                    && b[13] == b'-'
                    && b[18] == b'-'
                    && b[23] == b'-'
                    && t.bytes().filter(|b| *b == b'-').count() == 4
            }
            _ => false,
        };
        if shape_ok && hex.len() == 32 && hex.iter().all(u8::is_ascii_hexdigit) {
            Ok(())
        } else {
            Err((
                "uuid_parsing",
                "Input should be a valid UUID, invalid character",
            ))
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
