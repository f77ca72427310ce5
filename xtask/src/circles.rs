//! Import circles between the files of one crate (rule 14 of
//! [`crate::check`]).
//!
//! A file stands above what it imports: `lead.rs` runs teammates, so it
//! uses `teammate.rs`, and nothing in `teammate.rs` may use `lead.rs` back.
//! When two files name each other, neither can be read first, and a change
//! to either may break the other; the cure is to move what both need into
//! a file below them. This module finds such circles, so that none comes
//! back once they are gone.
//!
//! Each crate of the workspace (`shared`, `xtask`, every lesson, every
//! example) is read from its roots (`src/lib.rs`, `src/main.rs`,
//! `src/bin/*.rs`) along its `mod` declarations (`x.rs` or `x/mod.rs`, or
//! the file a `#[path]` names), and every path that leads into the crate is
//! resolved to a file, the way the compiler would: `use crate::…`,
//! `use super::…`, `self::…`, a child module or an imported name at the
//! start of a path, and the same paths written inline
//! (`super::tools::recipients(…)`), in code and in the arguments of macros
//! like `format!` that take expressions. A file points at another when it
//! takes a name from it: from the file that defines it, or from the module
//! that the path names it in (`crate::settings::PermissionRules` is taken
//! from `settings/mod.rs`, whatever child defines it there). Not an import:
//!
//! * a re-export (`pub use …`, of any visibility) by itself: a folder's
//!   `mod.rs` hands its children's names on; its own code that uses one
//!   does import it;
//! * a reference from a module to one of its ancestors (`super::…` up to
//!   its folder's `mod.rs`, `crate::…` to `lib.rs`): a child is a part of
//!   its parent, as `mod tests` is a part of its file;
//! * a reference inside one file, and anything under `#[cfg(test)]`, which
//!   is no part of the crate that others build on.
//!
//! So a circle reported is one between a crate's parts. What this does not
//! see: two children of one folder that reach each other only through the
//! folder's re-exports (`super::Name`), since the path names the folder;
//! and paths the module tree does not explain (other crates, local
//! variables, what a macro generates). A file that does not parse is the
//! compiler's to report and is skipped here.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Expr, Item, Token, UseTree, Visibility};

use crate::lessons;

/// One circle: files that import each other in a loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The crate's directory, repository-relative (`crates/s15_agent_teams`).
    pub krate: String,
    /// The files in order, crate-relative, the first again at the end.
    pub files: Vec<String>,
    /// For each step, the names the file takes from the next one.
    pub names: Vec<Vec<String>>,
    /// Other files tangled into the same knot that this loop does not pass.
    pub also: Vec<String>,
}

impl Circle {
    /// `src/a.rs -> src/b.rs -> src/a.rs (X, y; Z)`.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self.names.iter().map(|names| names.join(", ")).collect();
        let mut out = format!("{} ({})", self.files.join(" -> "), names.join("; "));
        if !self.also.is_empty() {
            out.push_str(&format!(", tangled with {} too", self.also.join(", ")));
        }
        out
    }
}

/// Every circle of every crate under `root`, crate by crate.
pub fn circles(root: &Path) -> Result<Vec<Circle>> {
    let mut out = Vec::new();
    for dir in crate_dirs(root)? {
        let krate = lessons::relative_path(root, &dir);
        for entry in crate_roots(&dir)? {
            let tree = Tree::read(&entry)?;
            for mut circle in tree.circles() {
                circle.krate = krate.clone();
                for file in circle.files.iter_mut().chain(circle.also.iter_mut()) {
                    *file = lessons::relative_path(&dir, Path::new(file));
                }
                // A binary and its library may share files (`#[path]`):
                // one report of a circle is enough.
                if !out.contains(&circle) {
                    out.push(circle);
                }
            }
        }
    }
    Ok(out)
}

/// The directories of the workspace's crates: `root/*` and `root/*/*` with
/// a `Cargo.toml` and a `src/`, in order.
fn crate_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut pending = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !path.is_dir() || name.starts_with('.') || name == "target" {
                continue;
            }
            if path.join("Cargo.toml").is_file() && path.join("src").is_dir() {
                out.push(path.clone());
            }
            if depth == 0 {
                pending.push((path, 1));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The root files of a crate directory's targets under `src/`.
fn crate_roots(dir: &Path) -> Result<Vec<PathBuf>> {
    let src = dir.join("src");
    let mut out: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src.join(name))
        .filter(|path| path.is_file())
        .collect();
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A name brought into a module by `use`.
#[derive(Debug, Clone)]
struct Import {
    /// The path as written, from the module that holds the `use`.
    path: Vec<String>,
}

/// One module: a file, or an inline `mod x { … }` inside one.
#[derive(Debug, Default)]
struct Module {
    file: usize,
    parent: Option<usize>,
    /// Where the files of its `mod x;` children are looked for.
    dir: PathBuf,
    children: BTreeMap<String, usize>,
    /// Names its own items define (functions, types, constants, …).
    items: BTreeSet<String>,
    imports: BTreeMap<String, Import>,
    globs: Vec<Vec<String>>,
    /// Paths that take a name: its code's, and its own `use`s' (not its
    /// re-exports').
    uses: Vec<Vec<String>>,
}

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Module(usize),
    Item(usize, String),
}

/// A crate's module tree, with what each module names.
#[derive(Debug, Default)]
struct Tree {
    files: Vec<PathBuf>,
    modules: Vec<Module>,
}

/// How deep a chain of imports and re-exports is followed.
const MAX_DEPTH: usize = 32;

impl Tree {
    /// Reads the crate whose root file is `root`, following its `mod`
    /// declarations.
    fn read(root: &Path) -> Result<Tree> {
        let mut tree = Tree::default();
        let dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut pending = vec![(root.to_path_buf(), None, String::new(), dir)];
        while let Some((path, parent, name, dir)) = pending.pop() {
            let file = tree.files.len();
            tree.files.push(path.clone());
            let module = tree.modules.len();
            tree.modules.push(Module {
                file,
                parent,
                dir,
                ..Module::default()
            });
            if let Some(parent) = parent {
                tree.modules[parent].children.insert(name, module);
            }
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            // A file that does not parse is the compiler's to report.
            let Ok(parsed) = syn::parse_file(&text) else {
                continue;
            };
            let mut declared = Vec::new();
            tree.module_items(module, &parsed.items, &mut declared);
            for (parent, name, file, dir) in declared {
                pending.push((file, Some(parent), name, dir));
            }
        }
        Ok(tree)
    }

    /// Records what `items` (the body of `module`) define, import and use;
    /// the `mod x;` files they declare go to `declared`.
    fn module_items(
        &mut self,
        module: usize,
        items: &[Item],
        declared: &mut Vec<(usize, String, PathBuf, PathBuf)>,
    ) {
        for item in items {
            if is_test_only(item) {
                continue;
            }
            match item {
                Item::Mod(item) => {
                    let name = item.ident.to_string();
                    let dir = self.modules[module].dir.clone();
                    if let Some((_, content)) = &item.content {
                        let child = self.modules.len();
                        self.modules.push(Module {
                            file: self.modules[module].file,
                            parent: Some(module),
                            dir: dir.join(&name),
                            ..Module::default()
                        });
                        self.modules[module].children.insert(name, child);
                        self.module_items(child, content, declared);
                    } else if let Some(file) = module_file(item, &dir, &name) {
                        let child_dir = if file.file_name().is_some_and(|f| f == "mod.rs") {
                            file.parent().map(Path::to_path_buf).unwrap_or_default()
                        } else {
                            file.with_extension("")
                        };
                        declared.push((module, name, file, child_dir));
                    }
                }
                Item::Use(item) => {
                    let public = !matches!(item.vis, Visibility::Inherited);
                    self.use_item(module, &item.tree, public);
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[module].items.insert(name);
                    }
                    let mut paths = Paths::default();
                    paths.visit_item(other);
                    self.add_paths(module, paths);
                }
            }
        }
    }

    /// A `use` item of `module`: its names become imports (a re-export's
    /// too, since code may name them), and, unless it is a re-export, each
    /// path it imports is a use.
    fn use_item(&mut self, module: usize, tree: &UseTree, public: bool) {
        let mut flat = Vec::new();
        flatten(tree, &mut Vec::new(), &mut flat);
        for (name, path) in flat {
            let this = &mut self.modules[module];
            match name {
                Some(name) => {
                    if !public && path.last() != Some(&"self".to_string()) {
                        this.uses.push(path.clone());
                    }
                    let path = if path.last().is_some_and(|last| last == "self") {
                        path[..path.len() - 1].to_vec()
                    } else {
                        path
                    };
                    if name != "_" {
                        this.imports.insert(name, Import { path });
                    }
                }
                None => {
                    // A glob: `use super::*`.
                    this.globs.push(path);
                }
            }
        }
    }

    /// The paths found in a module's code; `use` items nested in functions
    /// import into the module, a slight widening that only adds names.
    fn add_paths(&mut self, module: usize, paths: Paths) {
        for tree in &paths.uses {
            self.use_item(module, tree, false);
        }
        self.modules[module].uses.extend(paths.paths);
    }

    /// Where `path`, written in `from`, leads; `None` for what the crate
    /// does not define (another crate, a local variable).
    fn resolve(&self, from: usize, path: &[String], depth: usize) -> Option<Target> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (first, rest) = path.split_first()?;
        let mut current = match first.as_str() {
            "crate" => 0,
            "self" => from,
            "super" => self.modules[from].parent?,
            // The module's own names, its imports followed.
            name => match self.lookup(from, name, true, depth + 1)? {
                Target::Module(module) => module,
                item => return Some(item),
            },
        };
        for segment in rest {
            match segment.as_str() {
                "super" => current = self.modules[current].parent?,
                "self" => {}
                // Another module's names: one it imports (re-exports) is
                // taken from it.
                name => match self.lookup(current, name, false, depth + 1) {
                    Some(Target::Module(module)) => current = module,
                    // `Type::new`: the type's file.
                    Some(item) => return Some(item),
                    // A name it imports, or one the tree did not see (made
                    // by a macro): it is still that module's.
                    None => return Some(Target::Item(current, name.to_string())),
                },
            }
        }
        Some(Target::Module(current))
    }

    /// What `name` means inside `module`: a child, its own item, or, when
    /// `imports` is set, an import (followed to where it leads) or a name
    /// of a glob import.
    fn lookup(&self, module: usize, name: &str, imports: bool, depth: usize) -> Option<Target> {
        if depth > MAX_DEPTH {
            return None;
        }
        let this = &self.modules[module];
        if let Some(&child) = this.children.get(name) {
            return Some(Target::Module(child));
        }
        if this.items.contains(name) {
            return Some(Target::Item(module, name.to_string()));
        }
        if !imports {
            return None;
        }
        if let Some(import) = this.imports.get(name) {
            return self.resolve(module, &import.path, depth + 1);
        }
        for glob in &this.globs {
            if let Some(Target::Module(source)) = self.resolve(module, glob, depth + 1)
                && source != module
                && let Some(target) = self.lookup(source, name, false, depth + 1)
            {
                return Some(target);
            }
        }
        None
    }

    /// Whether `ancestor` contains `module` (its parent, or further up).
    fn is_ancestor(&self, ancestor: usize, module: usize) -> bool {
        let mut at = self.modules[module].parent;
        while let Some(parent) = at {
            if parent == ancestor {
                return true;
            }
            at = self.modules[parent].parent;
        }
        false
    }

    /// The file graph: for each file, the files it takes names from, with
    /// the names.
    fn edges(&self) -> BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>> {
        let mut edges: BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>> = BTreeMap::new();
        for (id, module) in self.modules.iter().enumerate() {
            for path in &module.uses {
                if let Some(Target::Item(target, name)) = self.resolve(id, path, 0) {
                    let to = self.modules[target].file;
                    if to != module.file && !self.is_ancestor(target, id) {
                        edges
                            .entry(module.file)
                            .or_default()
                            .entry(to)
                            .or_default()
                            .insert(name);
                    }
                }
            }
            // A glob import from another file takes what it needs of it.
            for glob in &module.globs {
                if let Some(Target::Module(source)) = self.resolve(id, glob, 0) {
                    let to = self.modules[source].file;
                    if to != module.file && !self.is_ancestor(source, id) {
                        edges
                            .entry(module.file)
                            .or_default()
                            .entry(to)
                            .or_default()
                            .insert("*".to_string());
                    }
                }
            }
        }
        edges
    }

    /// The circles of the file graph: one per knot of files that reach
    /// each other (a strongly connected component), as the shortest loop
    /// through its first file.
    fn circles(&self) -> Vec<Circle> {
        let edges = self.edges();
        let name = |file: usize| self.files[file].to_string_lossy().into_owned();
        let mut out = Vec::new();
        for knot in knots(self.files.len(), &edges) {
            if knot.len() < 2 {
                continue;
            }
            let mut by_name: Vec<usize> = knot.clone();
            by_name.sort_by_key(|&file| name(file));
            let start = by_name[0];
            let Some(loop_) = shortest_loop(start, &knot, &edges) else {
                continue;
            };
            let names = loop_
                .windows(2)
                .map(|step| {
                    edges
                        .get(&step[0])
                        .and_then(|to| to.get(&step[1]))
                        .map(|names| names.iter().cloned().collect())
                        .unwrap_or_default()
                })
                .collect();
            let also = by_name
                .iter()
                .filter(|file| !loop_.contains(file))
                .map(|&file| name(file))
                .collect();
            out.push(Circle {
                krate: String::new(),
                files: loop_.iter().map(|&file| name(file)).collect(),
                names,
                also,
            });
        }
        out.sort_by(|a, b| a.files.cmp(&b.files));
        out
    }
}

/// The file a `mod name;` declared in a module whose children live in
/// `dir` stands in: its `#[path]`, else `dir/name.rs` or `dir/name/mod.rs`.
fn module_file(item: &syn::ItemMod, dir: &Path, name: &str) -> Option<PathBuf> {
    for attr in &item.attrs {
        if attr.path().is_ident("path")
            && let syn::Meta::NameValue(value) = &attr.meta
            && let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(path),
                ..
            }) = &value.value
        {
            // Relative to the directory of the file that declares it; an
            // inline module's own directory is not modelled.
            return Some(dir.join(path.value())).filter(|path| path.is_file());
        }
    }
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|path| path.is_file())
}

/// Whether `item` is compiled for tests alone (`#[cfg(test)]`).
fn is_test_only(item: &Item) -> bool {
    let attrs = match item {
        Item::Const(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        Item::Fn(item) => &item.attrs,
        Item::Impl(item) => &item.attrs,
        Item::Mod(item) => &item.attrs,
        Item::Static(item) => &item.attrs,
        Item::Struct(item) => &item.attrs,
        Item::Trait(item) => &item.attrs,
        Item::Type(item) => &item.attrs,
        Item::Use(item) => &item.attrs,
        _ => return false,
    };
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// The name an item defines in its module's namespace, if any.
fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(item) => &item.ident,
        Item::Enum(item) => &item.ident,
        Item::ExternCrate(item) => &item.ident,
        Item::Fn(item) => &item.sig.ident,
        Item::Macro(item) => item.ident.as_ref()?,
        Item::Static(item) => &item.ident,
        Item::Struct(item) => &item.ident,
        Item::Trait(item) => &item.ident,
        Item::TraitAlias(item) => &item.ident,
        Item::Type(item) => &item.ident,
        Item::Union(item) => &item.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// A use tree as (name it binds, full path) pairs; a glob binds no name.
fn flatten(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) => {
            let ident = name.ident.to_string();
            let mut path = prefix.clone();
            path.push(ident.clone());
            // `use a::b::{self}` binds `b`.
            let bound = if ident == "self" {
                prefix.last().cloned().unwrap_or(ident)
            } else {
                ident
            };
            out.push((Some(bound), path));
        }
        UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            path.push(rename.ident.to_string());
            out.push((Some(rename.rename.to_string()), path));
        }
        UseTree::Glob(_) => out.push((None, prefix.clone())),
        UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, out);
            }
        }
    }
}

/// The paths an item's code names, and the `use` items inside it.
#[derive(Default)]
struct Paths {
    paths: Vec<Vec<String>>,
    uses: Vec<UseTree>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.paths.push(
                path.segments
                    .iter()
                    .map(|segment| segment.ident.to_string())
                    .collect(),
            );
        }
        visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.uses.push(item.tree.clone());
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // `format!`, `vec!`, `assert_eq!` and the like take expressions.
        if let Ok(args) = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            for expr in &args {
                self.visit_expr(expr);
            }
        }
        visit::visit_macro(self, mac);
    }
}

/// The strongly connected components of the graph on `count` nodes
/// (Tarjan's algorithm, iterative so a deep crate cannot overflow).
fn knots(
    count: usize,
    edges: &BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>,
) -> Vec<Vec<usize>> {
    let successors = |node: usize| -> Vec<usize> {
        edges
            .get(&node)
            .map(|to| to.keys().copied().collect())
            .unwrap_or_default()
    };
    let mut index = vec![usize::MAX; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for start in 0..count {
        if index[start] != usize::MAX {
            continue;
        }
        // (node, its successors, how many of them were visited)
        let mut work = vec![(start, successors(start), 0)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some((node, succ, at)) = work.last_mut() {
            let node = *node;
            if *at < succ.len() {
                let to = succ[*at];
                *at += 1;
                if index[to] == usize::MAX {
                    index[to] = next;
                    low[to] = next;
                    next += 1;
                    stack.push(to);
                    on_stack[to] = true;
                    work.push((to, successors(to), 0));
                } else if on_stack[to] {
                    low[node] = low[node].min(index[to]);
                }
                continue;
            }
            work.pop();
            if let Some((parent, _, _)) = work.last() {
                low[*parent] = low[*parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut knot = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    knot.push(member);
                    if member == node {
                        break;
                    }
                }
                out.push(knot);
            }
        }
    }
    out
}

/// The shortest loop from `start` back to it, inside `knot` (breadth
/// first, successors in order, so the answer is always the same).
fn shortest_loop(
    start: usize,
    knot: &[usize],
    edges: &BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>,
) -> Option<Vec<usize>> {
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &to in edges.get(&node).map(|to| to.keys()).into_iter().flatten() {
            if !knot.contains(&to) {
                continue;
            }
            if to == start {
                let mut loop_ = vec![start, node];
                let mut at = node;
                while at != start {
                    at = *came_from.get(&at)?;
                    loop_.push(at);
                }
                // Built backwards: start, node, …, start.
                loop_.reverse();
                return Some(loop_);
            }
            if let Entry::Vacant(entry) = came_from.entry(to) {
                entry.insert(node);
                queue.push_back(to);
            }
        }
    }
    None
}
