//! The command-line flags a lesson binary accepts, read from the clap
//! attributes of struct fields (`#[arg(...)]`, or the older `#[clap(...)]`)
//! with syn, so the book check can tell a "try it" command that uses a flag
//! the lesson does not have.
//!
//! Rules, as clap applies them to derive fields: a bare `long` is the field
//! name with `_` turned to `-`; `long = "x"` is `x`; a bare `short` is the
//! field name's first letter; `short = 'p'` is `p`; `alias`,
//! `visible_alias`, `short_alias` and `visible_short_alias` add names. A
//! field of type `bool` takes no value; any other type does. `-h`/`--help`
//! always exist, `-V`/`--version` when a `#[command(version)]` asks for it.

use std::collections::BTreeMap;

use syn::visit::Visit;

/// The flags of one binary: name (without dashes) → takes a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub long: BTreeMap<String, bool>,
    pub short: BTreeMap<char, bool>,
}

impl Flags {
    /// Adds the flags found in `sources`.
    pub fn scan(&mut self, sources: &[(String, String)]) {
        self.long.entry("help".into()).or_insert(false);
        self.short.entry('h').or_insert(false);
        for (_, text) in sources {
            if let Ok(file) = syn::parse_file(text) {
                self.visit_file(&file);
            }
        }
    }

    fn field(&mut self, field: &syn::Field) {
        let Some(ident) = &field.ident else { return };
        let field_name = ident.to_string();
        let field_name = field_name.trim_start_matches("r#");
        let takes_value = !is_bool(&field.ty);
        for attr in &field.attrs {
            if !(attr.path().is_ident("arg") || attr.path().is_ident("clap")) {
                continue;
            }
            // Unknown keys (help = …, value_name = …) are skipped, not errors.
            let _ = attr.parse_nested_meta(|meta| {
                let key = meta
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let value = if meta.input.peek(syn::Token![=]) {
                    Some(meta.value()?.parse::<syn::Expr>()?)
                } else if meta.input.peek(syn::token::Paren) {
                    // `value_parser(...)` and the like: skip the group.
                    meta.input.parse::<proc_macro2::TokenTree>()?;
                    None
                } else {
                    None
                };
                match (key.as_str(), value.as_ref().and_then(literal)) {
                    ("long", None) => {
                        self.long.insert(field_name.replace('_', "-"), takes_value);
                    }
                    ("short", None) => {
                        if let Some(c) = field_name.chars().next() {
                            self.short.insert(c, takes_value);
                        }
                    }
                    ("long" | "alias" | "visible_alias", Some(Literal::Str(name))) => {
                        self.long.insert(name, takes_value);
                    }
                    ("short" | "short_alias" | "visible_short_alias", Some(Literal::Char(c))) => {
                        self.short.insert(c, takes_value);
                    }
                    _ => {}
                }
                Ok(())
            });
        }
    }
}

enum Literal {
    Str(String),
    Char(char),
}

fn literal(expr: &syn::Expr) -> Option<Literal> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(Literal::Str(s.value())),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Char(c),
            ..
        }) => Some(Literal::Char(c.value())),
        _ => None,
    }
}

fn is_bool(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(path) if path.path.is_ident("bool"))
}

impl<'ast> Visit<'ast> for Flags {
    fn visit_field(&mut self, field: &'ast syn::Field) {
        self.field(field);
        syn::visit::visit_field(self, field);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        // `#[command(version)]` or `#[command(version = "…")]` adds -V/--version.
        if (attr.path().is_ident("command") || attr.path().is_ident("clap"))
            && attr.meta.require_list().is_ok_and(|list| {
                list.tokens
                    .clone()
                    .into_iter()
                    .any(|tree| tree.to_string() == "version")
            })
        {
            self.long.insert("version".into(), false);
            self.short.insert('V', false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_clap_derive_naming() {
        let mut flags = Flags::default();
        flags.scan(&[(
            "src/cli/args.rs".into(),
            r#"
            #[derive(clap::Args)]
            pub struct CommonArgs {
                /// Model id.
                #[arg(long)]
                pub model: Option<String>,
                #[arg(long)]
                pub demo: bool,
                #[arg(short = 'p', long = "prompt", value_name = "TEXT")]
                pub prompt: Option<String>,
                #[arg(short, long)]
                pub verbose: bool,
                #[arg(long, value_parser(parse_x), alias = "max-turn")]
                pub max_turns: u32,
                /// Not a flag: positional.
                pub file: Option<String>,
            }"#
            .into(),
        )]);
        let long: Vec<(&str, bool)> = flags.long.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            long,
            [
                ("demo", false),
                ("help", false),
                ("max-turn", true),
                ("max-turns", true),
                ("model", true),
                ("prompt", true),
                ("verbose", false),
            ]
        );
        let short: Vec<(char, bool)> = flags.short.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(short, [('h', false), ('p', true), ('v', false)]);
    }
}
