//! The compact schema of `data/schemas/<v>.json`, compiled into an arena of
//! nodes (definitions resolved to indices once).
//!
//! Long because: the compiled schema's node types and their compiler are one
//! format.

use std::collections::HashMap;

use serde_json::{Map, Value};

pub type NodeId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    Forbid,
    Ignore,
    Allow,
}

#[derive(Debug)]
pub struct Field {
    pub name: String,
    /// The key the SDK reads (the validation alias, else the name).
    pub key: String,
    pub node: NodeId,
    pub required: bool,
    /// `validate_by_name`: the name is accepted besides the alias.
    pub by_name: bool,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Bounds {
    pub ge: Option<f64>,
    pub gt: Option<f64>,
    pub le: Option<f64>,
    pub lt: Option<f64>,
    pub multiple_of: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FnMode {
    Before,
    After,
    Wrap,
    Plain,
}

/// What a function validator does (see SEMANTICS in extract_schemas.py).
#[derive(Debug)]
pub enum Sem {
    /// Never rejects what its inner schema accepts.
    Pass,
    /// `sequence_validator`: a `str` is not a Sequence here.
    Sequence,
    /// `Event._reject_reserved_id`: the id may not be `"__root__"`.
    NotRootSentinel,
    /// `handle_deprecated_model_fields`: these keys are dropped from a dict.
    DropKeys(Vec<String>),
    /// `Message._coerce_content`: null -> [], a str -> [TextContent].
    ContentCoerce,
    /// `TaskItem._normalize_status`.
    NormalizeStatus(HashMap<String, String>),
    /// `ToolDefinition._val_action_type` / `_val_observation_type`: a str must
    /// be a kind of this `Kinds` node (`resolve_kind`), `null` when allowed.
    ResolveKind { kinds: NodeId, null: bool },
    /// `_validate_tags`: keys `^[a-z0-9]+$`, values of `len()` at most this.
    Tags(usize),
    /// A before validator that returns a non-dict unchanged (its first
    /// statement) and reshapes a dict in ways not encoded.
    NonDictPass,
    /// `LLM._coerce_inputs`: `model` required and a str, then defaults
    /// (`stream_idle_timeout` from `timeout` when `idle_default`).
    LlmCoerceInputs { idle_default: bool },
    /// `HookConfig._normalize_hooks_input`: the `hooks` wrapper, PascalCase
    /// keys (which must name one of these fields) to snake_case.
    HooksInput(Vec<String>),
    /// `Tool.validate_params`: `null` -> `{}`, anything else unchanged.
    NullToEmptyDict,
    /// `AgentBase._validate_system_prompt_fields`.
    SystemPromptFields,
    /// `Agent._add_security_prompt_as_default`.
    SecurityPromptDefault,
    /// `AgentBase._decrypt_mcp_config` (1.29.3): `encrypted_mcp_config`
    /// dropped (a non-str is an error; a str is decrypted only with the
    /// server's cipher: not judged), a non-dict `mcp_config` an error.
    DecryptMcpConfig,
    /// `_validate_observability_span_name`: null -> "conversation"; a
    /// non-empty str of at most this many characters of `[A-Za-z0-9._:/-]`.
    SpanName(usize),
    /// `_validate_observability_tags`: null -> []; a list of non-empty strs.
    ObsTags,
    /// `_validate_observability_metadata`: null -> {}; non-empty keys; each
    /// value a scalar or a list all of str, bool, int or float.
    ObsMetadata,
    /// `ClientToolSpec._validate_object_schema`: `parameters["type"] == "object"`.
    ObjectSchema,
    /// `PluginSource.validate_repo_path`: relative, no `..` component.
    RepoPath,
    /// `ConversationWorktreeOptions._ref_for_ref_base`: base "ref" needs a ref.
    RefForRefBase,
    /// An after validator that refuses one value of its (validated) field.
    RejectValue(super::jv::Value<'static>),
    /// `StartConversationRequest._populate_agent_from_settings`.
    PopulateAgent,
    /// `StartConversationRequest._require_agent`.
    RequireAgent,
    /// `AgentDefinition._accept_legacy_mcp_servers`: `mcp_servers` stands
    /// for a missing `mcp_config`.
    LegacyMcpServers,
    /// Not encoded: "cannot judge".
    Opaque,
}

#[derive(Debug)]
pub enum Node {
    Any,
    None,
    Bool,
    Int(Bounds),
    Float(Bounds),
    Str {
        min: Option<usize>,
        max: Option<usize>,
        strict: bool,
        pattern: bool,
    },
    Bytes,
    Literal(Vec<super::jv::Value<'static>>),
    Enum {
        values: Vec<super::jv::Value<'static>>,
        /// pydantic's `sub_type`: `str`, `int`, `float` or empty.
        sub: String,
    },
    Datetime,
    Date,
    Time,
    Timedelta,
    Uuid,
    Url,
    Decimal,
    Callable,
    List {
        item: Option<NodeId>,
        min: Option<usize>,
        max: Option<usize>,
    },
    Set {
        item: Option<NodeId>,
    },
    Tuple {
        items: Vec<NodeId>,
        variadic: Option<usize>,
    },
    Dict {
        key: Option<NodeId>,
        value: Option<NodeId>,
    },
    Nullable(NodeId),
    Union(Vec<NodeId>),
    Tagged {
        field: String,
        choices: Vec<(String, NodeId)>,
    },
    Model {
        name: String,
        fields: Vec<Field>,
        extra: Extra,
        extras: Option<NodeId>,
        /// A concrete `DiscriminatedUnionMixin`: `kind` is popped and must be
        /// absent or its own name.
        dum: bool,
        kind_alias: bool,
        /// pydantic calls the class's own `__init__(**data)`: not judged.
        custom_init: bool,
        /// An `__init__` read and encoded: these keyword-only arguments are
        /// required (`TypeError` when missing) and passed on as `str(value)`.
        init_str: Vec<String>,
    },
    /// `_validate_subtype` on an abstract base: dispatch by `kind`.
    Kinds {
        base: String,
        /// An unhashable `kind` is a `ValueError` (a `resolve_kind` override)
        /// rather than the mixin's `TypeError`.
        unhashable_value_error: bool,
        choices: Vec<(String, NodeId)>,
    },
    Fn {
        mode: FnMode,
        name: String,
        sem: Sem,
        inner: Option<NodeId>,
    },
    Chain(Vec<NodeId>),
    IsInstance(String),
    /// Placeholder while compiling a definition.
    Pending,
}

#[derive(Debug)]
pub struct Schema {
    pub nodes: Vec<Node>,
    pub event_root: NodeId,
    pub state_root: NodeId,
    /// meta.json's `StoredConversation`.
    pub meta_root: NodeId,
    /// `StoredConversation` validates its fields from JSON (no model-level
    /// before validator hands them on as Python data): pydantic's messages.
    pub meta_json: bool,
    /// `_validate_subtype` on a non-object: pydantic's error (`handler`) or
    /// an AttributeError/TypeError (`crash`, releases before the guard).
    pub dum_crash: bool,
}

struct Compiler<'a> {
    defs: &'a Map<String, Value>,
    def_ids: HashMap<&'a str, NodeId>,
    nodes: Vec<Node>,
}

fn obj<'v>(v: &'v Value, what: &str) -> Result<&'v Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("{what} is not an object"))
}

fn num(m: &Map<String, Value>, k: &str) -> Option<f64> {
    m.get(k).and_then(Value::as_f64)
}

fn usize_of(m: &Map<String, Value>, k: &str) -> Option<usize> {
    m.get(k).and_then(Value::as_u64).map(|n| n as usize)
}

impl<'a> Compiler<'a> {
    fn push(&mut self, n: Node) -> NodeId {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    fn def(&mut self, name: &str) -> Result<NodeId, String> {
        if let Some(&id) = self.def_ids.get(name) {
            return Ok(id);
        }
        let (k, v) = self
            .defs
            .get_key_value(name)
            .ok_or_else(|| format!("reference to unknown definition `{name}`"))?;
        let id = self.push(Node::Pending);
        self.def_ids.insert(k.as_str(), id);
        let node = self.build(v)?;
        self.nodes[id] = node;
        Ok(id)
    }

    fn node(&mut self, v: &Value) -> Result<NodeId, String> {
        let m = obj(v, "a schema node")?;
        if m.get("t").and_then(Value::as_str) == Some("ref") {
            let r = m
                .get("r")
                .and_then(Value::as_str)
                .ok_or("a ref without `r`")?;
            return self.def(r);
        }
        let n = self.build(v)?;
        Ok(self.push(n))
    }

    fn opt_node(&mut self, m: &Map<String, Value>, k: &str) -> Result<Option<NodeId>, String> {
        m.get(k).map(|v| self.node(v)).transpose()
    }

    fn choices(&mut self, m: &Map<String, Value>) -> Result<Vec<(String, NodeId)>, String> {
        let c = obj(m.get("c").ok_or("missing `c`")?, "`c`")?;
        let mut out = Vec::with_capacity(c.len());
        for (k, v) in c {
            out.push((k.clone(), self.node(v)?));
        }
        Ok(out)
    }

    fn build(&mut self, v: &Value) -> Result<Node, String> {
        let m = obj(v, "a schema node")?;
        let t = m
            .get("t")
            .and_then(Value::as_str)
            .ok_or("a schema node without a type `t`")?;
        let bounds = || Bounds {
            ge: num(m, "ge"),
            gt: num(m, "gt"),
            le: num(m, "le"),
            lt: num(m, "lt"),
            multiple_of: num(m, "multiple_of"),
        };
        Ok(match t {
            "ref" => {
                // a ref as a definition body (an alias of another definition)
                let id = self.node(v)?;
                Node::Chain(vec![id])
            }
            "any" => Node::Any,
            "none" => Node::None,
            "bool" => Node::Bool,
            "int" => Node::Int(bounds()),
            "float" => Node::Float(bounds()),
            "str" => Node::Str {
                min: usize_of(m, "min_length"),
                max: usize_of(m, "max_length"),
                strict: m.get("strict").and_then(Value::as_bool).unwrap_or(false),
                pattern: m.contains_key("pattern")
                    || m.contains_key("strip_whitespace")
                    || m.contains_key("to_lower")
                    || m.contains_key("to_upper"),
            },
            "bytes" => Node::Bytes,
            "decimal" => Node::Decimal,
            "lit" => Node::Literal(
                m.get("v")
                    .and_then(Value::as_array)
                    .ok_or("a literal without values")?
                    .iter()
                    .map(super::jv::Value::owned)
                    .collect(),
            ),
            "enum" => Node::Enum {
                values: m
                    .get("v")
                    .and_then(Value::as_array)
                    .ok_or("an enum without values")?
                    .iter()
                    .map(super::jv::Value::owned)
                    .collect(),
                sub: m
                    .get("sub")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            },
            "datetime" => Node::Datetime,
            "date" => Node::Date,
            "time" => Node::Time,
            "timedelta" => Node::Timedelta,
            "uuid" => Node::Uuid,
            "url" | "multi-host-url" => Node::Url,
            "callable" => Node::Callable,
            "list" => Node::List {
                item: self.opt_node(m, "i")?,
                min: usize_of(m, "min_length"),
                max: usize_of(m, "max_length"),
            },
            "set" | "frozenset" => Node::Set {
                item: self.opt_node(m, "i")?,
            },
            "tuple" => {
                let items = m
                    .get("i")
                    .and_then(Value::as_array)
                    .ok_or("a tuple without items")?
                    .iter()
                    .map(|x| self.node(x))
                    .collect::<Result<Vec<_>, _>>()?;
                Node::Tuple {
                    items,
                    variadic: usize_of(m, "var"),
                }
            }
            "dict" => Node::Dict {
                key: self.opt_node(m, "k")?,
                value: self.opt_node(m, "v")?,
            },
            "nullable" => Node::Nullable(self.node(m.get("s").ok_or("nullable without `s`")?)?),
            "union" => Node::Union(
                m.get("c")
                    .and_then(Value::as_array)
                    .ok_or("a union without choices")?
                    .iter()
                    .map(|x| self.node(x))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            "chain" => Node::Chain(
                m.get("s")
                    .and_then(Value::as_array)
                    .ok_or("a chain without steps")?
                    .iter()
                    .map(|x| self.node(x))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            "tagged" => Node::Tagged {
                field: m
                    .get("d")
                    .and_then(Value::as_str)
                    .ok_or("a tagged union without a discriminator")?
                    .to_string(),
                choices: self.choices(m)?,
            },
            "kinds" => Node::Kinds {
                unhashable_value_error: m.get("unhashable").and_then(Value::as_str)
                    == Some("ValueError"),
                base: m
                    .get("base")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
                choices: self.choices(m)?,
            },
            "is" => Node::IsInstance(
                m.get("cls")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
            ),
            "model" => {
                let extra = match m.get("x").and_then(Value::as_str).unwrap_or("ignore") {
                    "forbid" => Extra::Forbid,
                    "allow" => Extra::Allow,
                    "ignore" => Extra::Ignore,
                    other => return Err(format!("unknown extra policy `{other}`")),
                };
                let by_name = m.get("byname").and_then(Value::as_bool).unwrap_or(false);
                let mut fields = Vec::new();
                for f in m
                    .get("f")
                    .and_then(Value::as_array)
                    .ok_or("a model without fields")?
                {
                    let f = f.as_array().ok_or("a model field is not a list")?;
                    let name = f
                        .first()
                        .and_then(Value::as_str)
                        .ok_or("a model field without a name")?;
                    let node = self.node(f.get(1).ok_or("a model field without a schema")?)?;
                    let required = f.get(2).and_then(Value::as_bool).unwrap_or(true);
                    let key = f.get(3).and_then(Value::as_str).unwrap_or(name);
                    fields.push(Field {
                        name: name.to_string(),
                        key: key.to_string(),
                        node,
                        required,
                        by_name,
                    });
                }
                Node::Model {
                    name: m
                        .get("n")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    fields,
                    extra,
                    extras: self.opt_node(m, "xs")?,
                    dum: m.contains_key("dum"),
                    kind_alias: m.contains_key("kind_alias"),
                    custom_init: m.contains_key("custom_init"),
                    init_str: m
                        .get("init")
                        .and_then(|i| i.get("kwonly_str"))
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|k| k.as_str().map(String::from))
                                .collect()
                        })
                        .unwrap_or_default(),
                }
            }
            "fn" => {
                let mode = match m.get("m").and_then(Value::as_str) {
                    Some("before") => FnMode::Before,
                    Some("after") => FnMode::After,
                    Some("wrap") => FnMode::Wrap,
                    Some("plain") => FnMode::Plain,
                    _ => return Err("a function validator without a mode".into()),
                };
                let sem = match m.get("sem").and_then(Value::as_str).unwrap_or("opaque") {
                    "pass" => Sem::Pass,
                    "sequence" => Sem::Sequence,
                    "not_root_sentinel" => Sem::NotRootSentinel,
                    "content_coerce" => Sem::ContentCoerce,
                    "drop_keys" => Sem::DropKeys(strings(m, "keys")),
                    "normalize_status" => Sem::NormalizeStatus(
                        m.get("aliases")
                            .and_then(Value::as_object)
                            .map(|a| {
                                a.iter()
                                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    "resolve_kind" => Sem::ResolveKind {
                        kinds: self.node(m.get("kinds").ok_or("resolve_kind without kinds")?)?,
                        null: m.get("null").and_then(Value::as_bool).unwrap_or(false),
                    },
                    "nondict_pass" => Sem::NonDictPass,
                    "llm_coerce_inputs" => Sem::LlmCoerceInputs {
                        idle_default: m
                            .get("idle_default")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    },
                    "system_prompt_fields" => Sem::SystemPromptFields,
                    "null_to_empty_dict" => Sem::NullToEmptyDict,
                    "hooks_input" => Sem::HooksInput(strings(m, "fields")),
                    "security_prompt_default" => Sem::SecurityPromptDefault,
                    "decrypt_mcp_config" => Sem::DecryptMcpConfig,
                    "span_name" => {
                        Sem::SpanName(m.get("max").and_then(Value::as_u64).unwrap_or(128) as usize)
                    }
                    "obs_tags" => Sem::ObsTags,
                    "obs_metadata" => Sem::ObsMetadata,
                    "object_schema" => Sem::ObjectSchema,
                    "repo_path" => Sem::RepoPath,
                    "ref_for_ref_base" => Sem::RefForRefBase,
                    "reject_value" => Sem::RejectValue(super::jv::Value::owned(
                        m.get("value").ok_or("reject_value without a value")?,
                    )),
                    "populate_agent" => Sem::PopulateAgent,
                    "require_agent" => Sem::RequireAgent,
                    "legacy_mcp_servers" => Sem::LegacyMcpServers,
                    "tags" => {
                        Sem::Tags(m.get("max").and_then(Value::as_u64).unwrap_or(256) as usize)
                    }
                    _ => Sem::Opaque,
                };
                Node::Fn {
                    mode,
                    name: m
                        .get("f")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    sem,
                    inner: self.opt_node(m, "s")?,
                }
            }
            other => return Err(format!("unknown schema node type `{other}`")),
        })
    }
}

impl Schema {
    /// The node of field `name` of the model at `root` (seen through the
    /// function validators around it).
    pub fn field(&self, root: NodeId, name: &str) -> Option<NodeId> {
        let mut id = root;
        for _ in 0..16 {
            match &self.nodes[id] {
                Node::Fn { inner: Some(i), .. } => id = *i,
                Node::Chain(steps) if steps.len() == 1 => id = steps[0],
                Node::Model { fields, .. } => {
                    return fields.iter().find(|f| f.name == name).map(|f| f.node)
                }
                _ => return None,
            }
        }
        None
    }

    /// Compile a `data/schemas/<v>.json` text. Errors are one line.
    pub fn parse(text: &str) -> Result<Schema, String> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
        let root = obj(&root, "the schema file")?;
        let empty = Map::new();
        let defs = match root.get("defs") {
            Some(d) => obj(d, "`defs`")?,
            None => &empty,
        };
        let roots = obj(root.get("roots").ok_or("no `roots`")?, "`roots`")?;
        let mut c = Compiler {
            defs,
            def_ids: HashMap::new(),
            nodes: Vec::new(),
        };
        let event_root = c.node(roots.get("event").ok_or("no `roots.event`")?)?;
        let state_root = c.node(roots.get("state").ok_or("no `roots.state`")?)?;
        let meta_root = c.node(roots.get("meta").ok_or("no `roots.meta`")?)?;
        // compile the definitions nothing reaches too, so a corrupt file fails here
        for name in defs.keys() {
            c.def(name)?;
        }
        if c.nodes.iter().any(|n| matches!(n, Node::Pending)) {
            return Err("a definition refers only to itself".into());
        }
        Ok(Schema {
            nodes: c.nodes,
            event_root,
            state_root,
            meta_root,
            meta_json: root.get("meta_mode").and_then(Value::as_str) == Some("json"),
            dum_crash: root.get("dum_non_object").and_then(Value::as_str) == Some("crash"),
        })
    }
}

/// The strings of the array at `key` of a schema node (none when absent).
fn strings(m: &Map<String, Value>, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}
