//! Errors a caller can tell apart (rule 16 of [`crate::check`]).
//!
//! A function that fails with a `String` or a `Box<dyn Error>` hands its
//! caller a sentence: the caller can show it, but cannot ask which failure
//! it was without matching on the wording. So library code (`shared/src`
//! and every lesson's `src/`) says what went wrong with a type of its own,
//! a `thiserror` enum or struct whose text is the sentence; `anyhow` stays
//! at the edges (binaries, xtask, tests). This module finds the two shapes
//! in the types a file writes down: `Result<T, String>` (any path ending in
//! `Result` with `String` as its error) and `Box<dyn … Error …>` (a boxed
//! trait object one of whose bounds is an `Error` trait). Code under
//! `#[cfg(test)]` is a test's, and is left alone; a file that does not
//! parse is the compiler's to report.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::visit::{self, Visit};
use syn::{GenericArgument, PathArguments, Type, TypeParamBound};

use crate::lessons;

/// One type written where a typed error belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntypedError {
    /// The file, repository-relative.
    pub file: String,
    /// Where in it: the item (function, struct, enum, type alias) whose
    /// signature or body writes it.
    pub item: String,
    /// The type as written, tokens joined by spaces.
    pub written: String,
}

/// Every untyped error in `shared/src` and the lessons' `src/`, in file
/// order.
pub fn find(root: &Path) -> Result<Vec<UntypedError>> {
    let mut dirs = vec![root.join("shared/src")];
    for lesson in lessons::discover(root)? {
        dirs.push(root.join(&lesson.dir).join("src"));
    }
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&dir, &mut files)?;
    }
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let Ok(parsed) = syn::parse_file(&text) else {
            continue;
        };
        let relative = file.strip_prefix(root).unwrap_or(&file);
        let mut finder = Finder {
            file: relative.to_string_lossy().replace('\\', "/"),
            items: Vec::new(),
            found: &mut found,
        };
        finder.visit_file(&parsed);
    }
    Ok(found)
}

/// The `.rs` files below `dir`, if it exists.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry
            .with_context(|| format!("listing {}", dir.display()))?
            .path();
        if path.is_dir() {
            rust_files(&path, files)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

struct Finder<'a> {
    file: String,
    /// The items the visit is inside, outermost first.
    items: Vec<String>,
    found: &'a mut Vec<UntypedError>,
}

impl Finder<'_> {
    fn report(&mut self, ty: &Type) {
        let written = quote::quote!(#ty).to_string();
        self.found.push(UntypedError {
            file: self.file.clone(),
            item: self.items.join("::"),
            written,
        });
    }

    fn inside(&mut self, name: String, visit: impl FnOnce(&mut Self)) {
        self.items.push(name);
        visit(self);
        self.items.pop();
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test_only(&item.attrs) {
            visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test_only(&item.attrs) {
            self.inside(item.sig.ident.to_string(), |me| {
                visit::visit_item_fn(me, item)
            });
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test_only(&item.attrs) {
            self.inside(item.sig.ident.to_string(), |me| {
                visit::visit_impl_item_fn(me, item)
            });
        }
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        self.inside(item.sig.ident.to_string(), |me| {
            visit::visit_trait_item_fn(me, item)
        });
    }

    fn visit_item_struct(&mut self, item: &'ast syn::ItemStruct) {
        self.inside(item.ident.to_string(), |me| {
            visit::visit_item_struct(me, item)
        });
    }

    fn visit_item_enum(&mut self, item: &'ast syn::ItemEnum) {
        self.inside(item.ident.to_string(), |me| {
            visit::visit_item_enum(me, item)
        });
    }

    fn visit_item_type(&mut self, item: &'ast syn::ItemType) {
        self.inside(item.ident.to_string(), |me| {
            visit::visit_item_type(me, item)
        });
    }

    fn visit_type(&mut self, ty: &'ast Type) {
        if is_string_result(ty) || is_boxed_error(ty) {
            self.report(ty);
        }
        visit::visit_type(self, ty);
    }
}

/// `#[cfg(test)]` (or `#[test]`) on an item.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("test")
            || (attr.path().is_ident("cfg")
                && attr
                    .parse_args::<syn::Ident>()
                    .is_ok_and(|ident| ident == "test"))
    })
}

/// The generic arguments of a path type's last segment, if it is `name`.
fn arguments<'a>(ty: &'a Type, name: &str) -> Option<Vec<&'a GenericArgument>> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    match &last.arguments {
        PathArguments::AngleBracketed(args) => Some(args.args.iter().collect()),
        _ => Some(Vec::new()),
    }
}

/// `Result<T, String>`, whatever path leads to `Result`.
fn is_string_result(ty: &Type) -> bool {
    let Some(args) = arguments(ty, "Result") else {
        return false;
    };
    matches!(
        args.as_slice(),
        [_, GenericArgument::Type(error)] if arguments(error, "String").is_some_and(|a| a.is_empty())
    )
}

/// `Box<dyn Error>`, `Box<dyn std::error::Error + Send + Sync>`, …
fn is_boxed_error(ty: &Type) -> bool {
    let Some(args) = arguments(ty, "Box") else {
        return false;
    };
    let [GenericArgument::Type(Type::TraitObject(object))] = args.as_slice() else {
        return false;
    };
    object.bounds.iter().any(|bound| {
        matches!(bound, TypeParamBound::Trait(t)
            if t.path.segments.last().is_some_and(|s| s.ident == "Error"))
    })
}
