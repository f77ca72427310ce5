//! The tools a lesson gives the model, found in its sources with syn.
//!
//! The heuristic, in full:
//! 1. Every `ToolSpec::new(name, description, json!({...}))` call in the
//!    lesson's `src/` (outside `#[cfg(test)]`) is one of its tools.
//! 2. Every zero-argument call `module::spec()` (e.g. `bash::spec()`,
//!    `shared::tools::read_file::spec()`) adds the tool whose `ToolSpec::new`
//!    sits in a `fn spec` of a module with that name — the lesson's own
//!    first, else `shared`'s. That is how lessons register the base tools.
//!    A snake_case module that cannot be found still counts, named after the
//!    module and marked unresolved; `Type::spec()` calls are ignored.
//! 3. The name is a string literal or a `const NAME: &str = "…"` of the same
//!    crate; the description is a string literal or the format string of a
//!    `format!`/`concat!`; the input fields are the `properties` and
//!    `required` of the `json!` schema, parsed from the macro's tokens
//!    (values that are Rust expressions are kept as their source text).
//!
//! Tools built any other way (a `ToolSpec { … }` literal, a spec from a
//! file) are not seen.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;

use crate::lessons;
use crate::rust_items::{fingerprint, is_test_only};

/// One tool as the model is told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub inputs: Vec<Input>,
    /// Where its `ToolSpec::new` is: `src/todo.rs` or `shared/src/tools/bash.rs`;
    /// empty when unresolved.
    pub source: String,
    /// The spec's tokens (no doc comments), to tell a changed tool.
    pub fingerprint: String,
}

/// One property of a tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub name: String,
    /// The JSON schema `type`, or empty.
    pub ty: String,
    pub required: bool,
    pub description: String,
}

/// A value of a `json!` macro: JSON, plus Rust expressions kept as text.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    Str(String),
    Array(Vec<Json>),
    /// Keys in source order.
    Object(Vec<(String, Json)>),
    /// A Rust expression: its tokens as text.
    Expr(String),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Parses the tokens of a `json!(…)` call.
pub fn parse_json(tokens: TokenStream) -> Json {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    value(&trees)
}

fn value(trees: &[TokenTree]) -> Json {
    match trees {
        [TokenTree::Group(group)] if group.delimiter() == Delimiter::Brace => {
            let inner: Vec<TokenTree> = group.stream().into_iter().collect();
            let fields = split_commas(&inner)
                .into_iter()
                .map(|entry| {
                    let colon = entry.iter().position(|tree| {
                        matches!(tree, TokenTree::Punct(p) if p.as_char() == ':' && p.spacing() == Spacing::Alone)
                    });
                    match colon {
                        Some(at) => (key(&entry[..at]), value(&entry[at + 1..])),
                        None => (text(&entry), Json::Null),
                    }
                })
                .collect();
            Json::Object(fields)
        }
        [TokenTree::Group(group)] if group.delimiter() == Delimiter::Bracket => {
            let inner: Vec<TokenTree> = group.stream().into_iter().collect();
            Json::Array(
                split_commas(&inner)
                    .iter()
                    .map(|item| value(item))
                    .collect(),
            )
        }
        [TokenTree::Group(group)] if group.delimiter() == Delimiter::Parenthesis => {
            Json::Expr(text(trees))
        }
        [TokenTree::Ident(ident)] if ident == "null" => Json::Null,
        [TokenTree::Ident(ident)] if ident == "true" => Json::Bool(true),
        [TokenTree::Ident(ident)] if ident == "false" => Json::Bool(false),
        [TokenTree::Literal(_)] => literal(trees),
        [TokenTree::Punct(minus), TokenTree::Literal(_)] if minus.as_char() == '-' => {
            match literal(&trees[1..]) {
                Json::Number(n) => Json::Number(format!("-{n}")),
                _ => Json::Expr(text(trees)),
            }
        }
        _ => Json::Expr(text(trees)),
    }
}

fn literal(trees: &[TokenTree]) -> Json {
    let tokens: TokenStream = trees.iter().cloned().collect();
    match syn::parse2::<syn::Lit>(tokens) {
        Ok(syn::Lit::Str(s)) => Json::Str(s.value()),
        Ok(syn::Lit::Int(i)) => Json::Number(i.base10_digits().to_string()),
        Ok(syn::Lit::Float(f)) => Json::Number(f.base10_digits().to_string()),
        Ok(syn::Lit::Bool(b)) => Json::Bool(b.value),
        _ => Json::Expr(text(trees)),
    }
}

fn key(trees: &[TokenTree]) -> String {
    match value(trees) {
        Json::Str(s) => s,
        _ => text(trees),
    }
}

fn text(trees: &[TokenTree]) -> String {
    trees.iter().cloned().collect::<TokenStream>().to_string()
}

/// Splits at top-level commas, dropping a trailing empty part.
fn split_commas(trees: &[TokenTree]) -> Vec<Vec<TokenTree>> {
    let mut parts = vec![Vec::new()];
    for tree in trees {
        match tree {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(Vec::new()),
            other => {
                if let Some(last) = parts.last_mut() {
                    last.push(other.clone());
                }
            }
        }
    }
    parts.retain(|part| !part.is_empty());
    parts
}

/// The input fields of a schema: its `properties`, with `required`.
fn inputs(schema: &Json) -> Vec<Input> {
    let required: Vec<&str> = match schema.get("required") {
        Some(Json::Array(names)) => names.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    let Some(Json::Object(properties)) = schema.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| Input {
            name: name.clone(),
            ty: match property.get("type") {
                Some(Json::Str(ty)) => ty.clone(),
                Some(Json::Array(types)) => types
                    .iter()
                    .filter_map(Json::as_str)
                    .collect::<Vec<_>>()
                    .join(" | "),
                _ => String::new(),
            },
            required: required.contains(&name.as_str()),
            description: property
                .get("description")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect()
}

/// What one crate's sources say about tools.
#[derive(Debug, Default)]
pub struct CrateTools {
    /// Every `ToolSpec::new` found, in file and source order.
    pub specs: Vec<Tool>,
    /// `module name → tool` for specs inside a `fn spec`.
    pub spec_fns: BTreeMap<String, Tool>,
    /// Modules whose `spec()` is called, in order: `bash` for `bash::spec()`.
    pub spec_calls: Vec<String>,
}

/// Scans `sources` (crate-relative path, text). `prefix` is put before each
/// path in [`Tool::source`] (`shared/` for the shared crate).
pub fn scan(sources: &[(String, String)], prefix: &str, crate_name: &str) -> CrateTools {
    let consts = string_consts(sources);
    let mut out = CrateTools::default();
    for (file, text) in sources {
        let Ok(parsed) = syn::parse_file(text) else {
            continue;
        };
        let stem = module_of_file(file);
        let mut visitor = Visitor {
            source: format!("{prefix}{file}"),
            crate_name,
            consts: &consts,
            modules: vec![stem],
            in_spec_fn: false,
            out: &mut out,
        };
        visitor.visit_file(&parsed);
    }
    out
}

/// Scans the `src/` of a crate directory.
pub fn scan_dir(crate_dir: &Path, prefix: &str, crate_name: &str) -> Result<CrateTools> {
    Ok(scan(&lessons::rust_sources(crate_dir)?, prefix, crate_name))
}

/// The tools of a lesson, given its scan and `shared`'s (see the module header).
pub fn lesson_tools(lesson: &CrateTools, shared: &CrateTools) -> Vec<Tool> {
    let mut tools: Vec<Tool> = lesson.specs.clone();
    for module in &lesson.spec_calls {
        let tool = lesson
            .spec_fns
            .get(module)
            .or_else(|| shared.spec_fns.get(module))
            .cloned()
            .unwrap_or_else(|| Tool {
                name: module.clone(),
                description: String::new(),
                inputs: Vec::new(),
                source: String::new(),
                fingerprint: String::new(),
            });
        if !tools.iter().any(|known| known.name == tool.name) {
            tools.push(tool);
        }
    }
    tools
}

/// `bash` for `src/tools/bash.rs`, `tools` for `src/tools/mod.rs`.
fn module_of_file(file: &str) -> String {
    let path = Path::new(file);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem == "mod" || stem == "lib" || stem == "main" {
        path.parent()
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or(stem)
    } else {
        stem
    }
}

/// Every `const NAME: &str = "…"` of the crate, for tool names given by a constant.
fn string_consts(sources: &[(String, String)]) -> BTreeMap<String, String> {
    struct Consts(BTreeMap<String, String>);
    impl<'ast> Visit<'ast> for Consts {
        fn visit_item_const(&mut self, item: &'ast syn::ItemConst) {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &*item.expr
            {
                self.0.insert(item.ident.to_string(), s.value());
            }
        }
    }
    let mut consts = Consts(BTreeMap::new());
    for (_, text) in sources {
        if let Ok(parsed) = syn::parse_file(text) {
            consts.visit_file(&parsed);
        }
    }
    consts.0
}

struct Visitor<'a> {
    source: String,
    crate_name: &'a str,
    consts: &'a BTreeMap<String, String>,
    /// Innermost module name last.
    modules: Vec<String>,
    in_spec_fn: bool,
    out: &'a mut CrateTools,
}

impl Visitor<'_> {
    fn tool(&self, call: &syn::ExprCall) -> Option<Tool> {
        let mut args = call.args.iter();
        let name = match args.next()? {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => s.value(),
            syn::Expr::Path(path) => {
                let ident = path.path.segments.last()?.ident.to_string();
                self.consts.get(&ident).cloned().unwrap_or(ident)
            }
            other => other.to_token_stream().to_string(),
        };
        let description = args.next().map(description).unwrap_or_default();
        let schema = match args.next() {
            Some(syn::Expr::Macro(mac)) if is_json_macro(&mac.mac) => {
                parse_json(mac.mac.tokens.clone())
            }
            _ => Json::Null,
        };
        Some(Tool {
            name,
            description,
            inputs: inputs(&schema),
            source: self.source.clone(),
            fingerprint: fingerprint(call.to_token_stream())
                .replace(self.crate_name, crate::lessons::PLACEHOLDER),
        })
    }
}

fn is_json_macro(mac: &syn::Macro) -> bool {
    mac.path
        .segments
        .last()
        .is_some_and(|seg| seg.ident == "json")
}

/// A description argument: a literal, or the format string of a macro.
fn description(expr: &syn::Expr) -> String {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => s.value(),
        syn::Expr::Macro(mac) => mac
            .mac
            .tokens
            .clone()
            .into_iter()
            .find_map(|tree| syn::parse2::<syn::LitStr>(tree.into_token_stream()).ok())
            .map(|s| s.value())
            .unwrap_or_default(),
        // `"…".to_string()`, `String::from("…")` and the like.
        syn::Expr::MethodCall(call) => description(&call.receiver),
        syn::Expr::Call(call) => call.args.first().map(description).unwrap_or_default(),
        _ => String::new(),
    }
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    /// Macro bodies are tokens to syn; `vec![bash::spec(), …]` and the like
    /// are read as a comma-separated list of expressions when they are one.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        use syn::punctuated::Punctuated;
        if is_json_macro(mac) {
            return;
        }
        if let Ok(exprs) =
            mac.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        {
            for expr in &exprs {
                self.visit_expr(expr);
            }
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.modules.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.modules.pop();
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        let was = self.in_spec_fn;
        self.in_spec_fn = item.sig.ident == "spec";
        syn::visit::visit_item_fn(self, item);
        self.in_spec_fn = was;
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        // A method named `spec` is not a module's spec function.
        let was = self.in_spec_fn;
        self.in_spec_fn = false;
        syn::visit::visit_impl_item_fn(self, item);
        self.in_spec_fn = was;
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(path) = &*call.func {
            let segments: Vec<String> = path
                .path
                .segments
                .iter()
                .map(|seg| seg.ident.to_string())
                .collect();
            match segments.as_slice() {
                [.., ty, new] if ty == "ToolSpec" && new == "new" => {
                    if let Some(tool) = self.tool(call) {
                        if self.in_spec_fn
                            && let Some(module) = self.modules.last()
                        {
                            self.out
                                .spec_fns
                                .entry(module.clone())
                                .or_insert_with(|| tool.clone());
                        }
                        self.out.specs.push(tool);
                    }
                }
                [.., module, spec]
                    if spec == "spec"
                        && call.args.is_empty()
                        && module.starts_with(|c: char| c.is_ascii_lowercase()) =>
                {
                    self.out.spec_calls.push(module.clone());
                }
                _ => {}
            }
        }
        syn::visit::visit_expr_call(self, call);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_macro_tokens_parse_with_order_expressions_and_trailing_commas() {
        let tokens: TokenStream = r#"{
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": r"Where."},
                "limit": {"type": ["integer", "null"], "maximum": MAX, "minimum": -1,},
            },
            "required": ["path"],
        }"#
        .parse()
        .unwrap();
        let schema = parse_json(tokens);
        let limit = schema.get("properties").unwrap().get("limit").unwrap();
        assert_eq!(limit.get("maximum"), Some(&Json::Expr("MAX".into())));
        assert_eq!(limit.get("minimum"), Some(&Json::Number("-1".into())));
        assert_eq!(
            inputs(&schema),
            [
                Input {
                    name: "path".into(),
                    ty: "string".into(),
                    required: true,
                    description: "Where.".into()
                },
                Input {
                    name: "limit".into(),
                    ty: "integer | null".into(),
                    required: false,
                    description: String::new()
                },
            ]
        );
    }

    #[test]
    fn lesson_tools_combine_own_specs_and_base_tools_by_module() {
        let shared = scan(
            &[(
                "src/tools/bash.rs".into(),
                r#"pub fn spec() -> ToolSpec { ToolSpec::new("bash", format!("Run {} now.", 1), json!({"properties": {"command": {"type": "string"}}, "required": ["command"]})) }
                   #[cfg(test)] mod tests { fn x() { ToolSpec::new("fake", "", json!({})); } }"#
                    .into(),
            )],
            "shared/",
            "shared",
        );
        assert_eq!(shared.spec_fns.keys().collect::<Vec<_>>(), ["bash"]);
        let lesson = scan(
            &[
                (
                    "src/hooks.rs".into(),
                    "fn tools() -> Vec<ToolSpec> { vec![bash::spec(), shared::tools::glob::spec(), todo::spec(), Config::spec()] }".into(),
                ),
                (
                    "src/todo.rs".into(),
                    "const NAME: &str = \"todo_write\";\npub fn spec() -> ToolSpec { ToolSpec::new(NAME, \"Keep a list.\".to_string(), json!({})) }".into(),
                ),
            ],
            "",
            "s05_todo",
        );
        let tools = lesson_tools(&lesson, &shared);
        let summary: Vec<(&str, &str, &str)> = tools
            .iter()
            .map(|t| (t.name.as_str(), t.source.as_str(), t.description.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("todo_write", "src/todo.rs", "Keep a list."),
                ("bash", "shared/src/tools/bash.rs", "Run {} now."),
                ("glob", "", ""),
            ]
        );
        assert_eq!(tools[1].inputs[0].name, "command");
    }
}
