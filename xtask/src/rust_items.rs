//! The Rust items of a lesson crate, found by parsing its sources with syn:
//! types, functions, traits, constants and their kinds, so that a generated
//! page can say which were added, removed or changed since the previous
//! lesson. Also the crate's doc header and the lesson's title.
//!
//! An item is named by the file it is in and its path inside that file
//! (`ToolRegistry::register`, `tests::helper`), which is what a reader looks
//! for; module paths would need name resolution for nothing. Items under
//! `#[cfg(test)]` are left out: they test the lesson, they are not it.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Attribute, ImplItem, Item, Visibility};

use crate::lessons::PLACEHOLDER;

/// One item of a crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RustItem {
    /// Crate-relative file, e.g. `src/dispatch.rs`.
    pub file: String,
    /// Path inside the file, e.g. `ToolRegistry::register`.
    pub name: String,
    /// `fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `impl`, …
    pub kind: &'static str,
    /// Declared `pub` (any `pub(...)` counts).
    pub public: bool,
    /// The item's tokens without doc comments, with the crate name
    /// normalised: two items are "the same" when their fingerprints are.
    pub fingerprint: String,
}

impl RustItem {
    /// How the pages show the item: `pub fn ToolRegistry::register`.
    pub fn label(&self) -> String {
        let vis = if self.public { "pub " } else { "" };
        format!("{vis}{} {}", self.kind, self.name)
    }
}

/// Every item of the crate's `sources` (path, text), keyed by (file, name, kind).
pub fn items(
    sources: &[(String, String)],
    crate_name: &str,
) -> Result<BTreeMap<(String, String, &'static str), RustItem>> {
    let mut out = BTreeMap::new();
    for (file, text) in sources {
        let parsed = syn::parse_file(text).with_context(|| format!("parsing {file}"))?;
        let mut walker = Walker {
            file,
            crate_name,
            out: &mut out,
        };
        walker.items(&parsed.items, "");
    }
    Ok(out)
}

struct Walker<'a> {
    file: &'a str,
    crate_name: &'a str,
    out: &'a mut BTreeMap<(String, String, &'static str), RustItem>,
}

impl Walker<'_> {
    fn push(&mut self, name: String, kind: &'static str, vis: &Visibility, tokens: TokenStream) {
        let fingerprint = fingerprint(tokens).replace(self.crate_name, PLACEHOLDER);
        let item = RustItem {
            file: self.file.to_string(),
            name,
            kind,
            public: !matches!(vis, Visibility::Inherited),
            fingerprint,
        };
        self.out
            .insert((item.file.clone(), item.name.clone(), item.kind), item);
    }

    fn items(&mut self, items: &[Item], prefix: &str) {
        for item in items {
            self.item(item, prefix);
        }
    }

    fn item(&mut self, item: &Item, prefix: &str) {
        let name = |ident: &syn::Ident| format!("{prefix}{ident}");
        let tokens = item.to_token_stream();
        match item {
            Item::Fn(f) if !is_test_only(&f.attrs) => {
                self.push(name(&f.sig.ident), "fn", &f.vis, tokens)
            }
            Item::Struct(s) if !is_test_only(&s.attrs) => {
                self.push(name(&s.ident), "struct", &s.vis, tokens)
            }
            Item::Enum(e) if !is_test_only(&e.attrs) => {
                self.push(name(&e.ident), "enum", &e.vis, tokens)
            }
            Item::Union(u) if !is_test_only(&u.attrs) => {
                self.push(name(&u.ident), "union", &u.vis, tokens)
            }
            Item::Trait(t) if !is_test_only(&t.attrs) => {
                self.push(name(&t.ident), "trait", &t.vis, tokens)
            }
            Item::Type(t) if !is_test_only(&t.attrs) => {
                self.push(name(&t.ident), "type", &t.vis, tokens)
            }
            Item::Const(c) if !is_test_only(&c.attrs) => {
                self.push(name(&c.ident), "const", &c.vis, tokens)
            }
            Item::Static(s) if !is_test_only(&s.attrs) => {
                self.push(name(&s.ident), "static", &s.vis, tokens)
            }
            Item::Macro(m) if !is_test_only(&m.attrs) => {
                if let Some(ident) = &m.ident {
                    self.push(name(ident), "macro", &Visibility::Inherited, tokens);
                }
            }
            Item::Mod(m) if !is_test_only(&m.attrs) => {
                if let Some((_, inner)) = &m.content {
                    self.items(inner, &format!("{}::", name(&m.ident)));
                }
            }
            Item::Impl(imp) if !is_test_only(&imp.attrs) => self.impl_block(imp, prefix),
            _ => {}
        }
    }

    /// An impl block: the block itself (for trait impls), then each
    /// associated item as `Type::item`.
    fn impl_block(&mut self, imp: &syn::ItemImpl, prefix: &str) {
        let self_ty = type_name(&imp.self_ty);
        let trait_public = imp.trait_.is_some();
        if let Some((path, _)) = &imp.trait_ {
            let trait_name = path
                .segments
                .last()
                .map(|seg| seg.ident.to_string())
                .unwrap_or_default();
            // The header alone: the methods are items of their own.
            let mut header = imp.clone();
            header.items.clear();
            self.push(
                format!("{prefix}{trait_name} for {self_ty}"),
                "impl",
                &Visibility::Inherited,
                header.to_token_stream(),
            );
        }
        for inner in &imp.items {
            let (ident, kind, vis, attrs) = match inner {
                ImplItem::Fn(f) => (&f.sig.ident, "fn", &f.vis, &f.attrs),
                ImplItem::Const(c) => (&c.ident, "const", &c.vis, &c.attrs),
                ImplItem::Type(t) => (&t.ident, "type", &t.vis, &t.attrs),
                _ => continue,
            };
            if is_test_only(attrs) {
                continue;
            }
            // A trait's methods are as visible as the trait; show them plain.
            let vis = if trait_public {
                &Visibility::Inherited
            } else {
                vis
            };
            self.push(
                format!("{prefix}{self_ty}::{ident}"),
                kind,
                vis,
                inner.to_token_stream(),
            );
        }
    }
}

/// `Foo` for `Foo<T>`, `crate::x::Foo` or `&Foo`; the tokens otherwise.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) => path
            .path
            .segments
            .last()
            .map(|seg| seg.ident.to_string())
            .unwrap_or_default(),
        syn::Type::Reference(reference) => type_name(&reference.elem),
        other => other.to_token_stream().to_string(),
    }
}

/// Whether an item only exists in test builds (`#[cfg(test)]`, `#[test]`).
pub fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        if attr.path().is_ident("test") {
            return true;
        }
        attr.path().is_ident("cfg")
            && attr
                .meta
                .require_list()
                .is_ok_and(|list| list.tokens.to_string().trim() == "test")
    })
}

/// The tokens as one string, without `#[doc = …]` attributes anywhere
/// inside, so that editing a comment does not count as changing the item.
pub fn fingerprint(tokens: TokenStream) -> String {
    strip_docs(tokens).to_string()
}

fn strip_docs(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tree) = iter.next() {
        match tree {
            TokenTree::Punct(ref punct) if punct.as_char() == '#' => {
                // `#[doc …]` or `#![doc …]`: skip the `!` and the bracket group.
                let mut lookahead = iter.clone();
                let bang =
                    matches!(lookahead.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                if bang {
                    lookahead.next();
                }
                if let Some(TokenTree::Group(group)) = lookahead.peek()
                    && is_doc_group(group)
                {
                    lookahead.next();
                    iter = lookahead;
                    continue;
                }
                out.push(tree);
            }
            TokenTree::Group(group) => {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), strip_docs(group.stream()));
                inner.set_span(group.span());
                out.push(TokenTree::Group(inner));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

fn is_doc_group(group: &proc_macro2::Group) -> bool {
    group.delimiter() == proc_macro2::Delimiter::Bracket
        && matches!(group.stream().into_iter().next(), Some(TokenTree::Ident(ident)) if ident == "doc")
}

/// The first line of the crate's `//!` header, without `#` marks:
/// `Lesson 2: tool use`.
pub fn doc_title(lib_rs: &str) -> Option<String> {
    let file = syn::parse_file(lib_rs).ok()?;
    file.attrs.iter().find_map(|attr| {
        if !attr.path().is_ident("doc") {
            return None;
        }
        let syn::Meta::NameValue(nv) = &attr.meta else {
            return None;
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = &nv.value
        else {
            return None;
        };
        let line = s.value();
        let line = line.trim().trim_start_matches('#').trim();
        (!line.is_empty()).then(|| line.to_string())
    })
}

/// The lesson's title from `pub const LESSON: Lesson = Lesson { title: "…", … }`.
pub fn lesson_title(lib_rs: &str) -> Option<String> {
    let file = syn::parse_file(lib_rs).ok()?;
    file.items.iter().find_map(|item| {
        let Item::Const(c) = item else { return None };
        if c.ident != "LESSON" {
            return None;
        }
        let syn::Expr::Struct(s) = &*c.expr else {
            return None;
        };
        s.fields
            .iter()
            .find_map(|field| match (&field.member, &field.expr) {
                (
                    syn::Member::Named(name),
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(title),
                        ..
                    }),
                ) if name == "title" => Some(title.value()),
                _ => None,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Vec<String> {
        items(&[("src/x.rs".into(), src.into())], "s01_a")
            .unwrap()
            .values()
            .map(RustItem::label)
            .collect()
    }

    #[test]
    fn items_include_private_ones_impl_methods_and_inline_modules() {
        let labels = parse(
            "pub struct A; struct B;\n\
             impl A { pub fn new() -> Self { A } fn helper(&self) {} const N: u8 = 1; }\n\
             impl Clone for B { fn clone(&self) -> Self { B } }\n\
             mod inner { pub(crate) enum E { X } }\n\
             #[cfg(test)] mod tests { #[test] fn t() {} }\n\
             use std::fmt;",
        );
        assert_eq!(
            labels,
            [
                "pub struct A",
                "const A::N",
                "fn A::helper",
                "pub fn A::new",
                "struct B",
                "fn B::clone",
                "impl Clone for B",
                "pub enum inner::E",
            ]
        );
    }

    #[test]
    fn doc_comments_do_not_change_a_fingerprint_but_code_does() {
        let a = items(
            &[("f".into(), "/// one\nfn f() { /** x */ let _ = 1; }".into())],
            "c",
        )
        .unwrap();
        let b = items(
            &[("f".into(), "/// two\nfn f() { let _ = 1; }".into())],
            "c",
        )
        .unwrap();
        let c = items(&[("f".into(), "fn f() { let _ = 2; }".into())], "c").unwrap();
        let fp = |m: &BTreeMap<_, RustItem>| m.values().next().unwrap().fingerprint.clone();
        assert_eq!(fp(&a), fp(&b));
        assert_ne!(fp(&b), fp(&c));
    }

    #[test]
    fn titles_come_from_the_doc_header_and_the_lesson_const() {
        let lib = "//! # Lesson 2: tool use\n//!\n//! More.\n\
                   pub const LESSON: Lesson = Lesson { id: \"s02\", title: \"Tool use\", demo_script: \"\" };";
        assert_eq!(doc_title(lib).as_deref(), Some("Lesson 2: tool use"));
        assert_eq!(lesson_title(lib).as_deref(), Some("Tool use"));
        assert_eq!(lesson_title("fn main() {}"), None);
    }
}
