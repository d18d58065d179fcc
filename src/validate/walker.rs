//! pydantic v2's Python-mode lax validation of parsed JSON, node by node:
//! the generic walker over the compiled schema (models, unions, lists,
//! dicts...). Scalars are judged by [`super::scalar`], the SDK's own
//! validators (function validators, the `kind` dispatch) by [`super::sdk`].
//! Error types and messages are pydantic's; no message ever quotes a value
//! from the file (only locations, types and the schema's own constants).
//!
//! Long because: pydantic's walk over models, unions, lists and dicts is one
//! recursive rule set.

use super::jv::Value;
use super::outcome::{Outcome, VError};
use super::scalar;
use super::schema::{Extra, Node, NodeId, Schema};

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

pub(super) struct Ctx<'s> {
    pub(super) s: &'s Schema,
    /// pydantic renders the messages for a JSON input (`model_validate_json`:
    /// events) differently from a Python one (the state).
    json: bool,
    loc: Vec<Seg<'s>>,
    pub(super) out: Outcome,
    depth: usize,
}

pub(super) fn type_of(v: &Value) -> &'static str {
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

    pub(super) fn err(&mut self, kind: &'static str, msg: impl Into<String>) {
        self.out.errors.push(VError {
            loc: self.loc_string(),
            kind,
            msg: msg.into(),
            client_kind: None,
        });
    }

    pub(super) fn unjudged(&mut self, what: &str) {
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
    pub(super) fn trial(&mut self, id: NodeId, v: &Value) -> Outcome {
        let saved = std::mem::take(&mut self.out);
        self.run(id, v);
        std::mem::replace(&mut self.out, saved)
    }

    pub(super) fn merge(&mut self, o: Outcome) {
        self.out.errors.extend(o.errors);
        for u in o.unjudged {
            if !self.out.unjudged.contains(&u) {
                self.out.unjudged.push(u);
            }
        }
    }

    pub(super) fn run(&mut self, id: NodeId, v: &Value) {
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

    pub(super) fn model_type(&mut self, name: &str) {
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
}

impl<'s> Ctx<'s> {
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
