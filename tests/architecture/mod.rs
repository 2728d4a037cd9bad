//! The workspace's module structure: no import circle between the files of any package; the
//! server's imports run only down its layers ([`LAYERS`]); rmcp's types stop at the tools.
//!
//! Every crate root (`lib.rs`, `main.rs`, `bin/*.rs`) is parsed with `syn`; its module tree is
//! followed through `mod` declarations, and every path a file names — `use` trees, paths in
//! types and expressions, and `crate::`/`super::`/`self::` token runs inside macro calls — becomes
//! an arrow to the file of the deepest module the path reaches. A module's own `mod child;`
//! declaration is not an arrow; `child::item` used in the parent is. Code behind `#[cfg(test)]`
//! is left out: unit tests may reach across the layers. A circle (a strongly connected set of
//! two or more files) fails the test, which prints each circle with the names behind each arrow;
//! an arrow from a room of one layer to a room of a higher one fails the layer test, which names
//! it the same way, as it does a room that no layer lists.

mod cli_inputs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// One file-backed module: its path in the crate (`["gemini", "process"]`) and its child modules.
struct Module {
    file: PathBuf,
    /// Child module name → index in `Crate::modules` (inline children point into the same file).
    children: BTreeMap<String, usize>,
    parent: Option<usize>,
}

/// A crate's module tree, built from its root file.
struct Crate {
    modules: Vec<Module>,
    /// The parsed file of each file-backed module.
    files: BTreeMap<PathBuf, syn::File>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

fn parse(path: &Path) -> syn::File {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

impl Crate {
    fn load(root: &Path) -> Crate {
        let mut c = Crate {
            modules: Vec::new(),
            files: BTreeMap::new(),
        };
        c.modules.push(Module {
            file: root.to_path_buf(),
            children: BTreeMap::new(),
            parent: None,
        });
        let file = parse(root);
        // A crate root's children live in its own folder (`src/x.rs` for `mod x;` in `src/lib.rs`).
        let dir = root.parent().expect("a root has a folder").to_path_buf();
        c.declare(0, &file.items, &dir);
        c.files.insert(root.to_path_buf(), file);
        c
    }

    /// Registers the `mod` items of module `at`, whose children's files live in `dir`.
    fn declare(&mut self, at: usize, items: &[syn::Item], dir: &Path) {
        for item in items {
            let syn::Item::Mod(m) = item else { continue };
            if is_cfg_test(&m.attrs) {
                continue;
            }
            let name = m.ident.to_string();
            let id = self.modules.len();
            match &m.content {
                Some((_, inner)) => {
                    // An inline module shares its file with its parent.
                    let file = self.modules[at].file.clone();
                    self.modules.push(Module {
                        file,
                        children: BTreeMap::new(),
                        parent: Some(at),
                    });
                    self.modules[at].children.insert(name.clone(), id);
                    self.declare(id, inner, &dir.join(&name));
                }
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    let nested = dir.join(&name).join("mod.rs");
                    let file = if flat.exists() { flat } else { nested };
                    let parsed = parse(&file);
                    self.modules.push(Module {
                        file: file.clone(),
                        children: BTreeMap::new(),
                        parent: Some(at),
                    });
                    self.modules[at].children.insert(name.clone(), id);
                    self.declare(id, &parsed.items, &dir.join(&name));
                    self.files.insert(file, parsed);
                }
            }
        }
    }

    /// The module a path names, read from module `at`: as deep as its segments are modules.
    fn resolve(&self, at: usize, segments: &[String]) -> Option<usize> {
        let (mut current, rest) = match segments.first().map(String::as_str) {
            Some("crate") => (0, &segments[1..]),
            Some("self") => (at, &segments[1..]),
            Some("super") => {
                let mut m = at;
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    m = self.modules[m].parent?;
                    rest = &rest[1..];
                }
                (m, rest)
            }
            Some(first) if self.modules[at].children.contains_key(first) => (at, segments),
            _ => return None,
        };
        for s in rest {
            match self.modules[current].children.get(s) {
                Some(&child) => current = child,
                None => break,
            }
        }
        Some(current)
    }
}

/// Collects the paths named in one module's items (not descending into child modules, which
/// are visited on their own with their own scope).
struct Paths<'a> {
    krate: &'a Crate,
    at: usize,
    /// (target module, the name used) of every path seen.
    found: Vec<(usize, String)>,
}

impl Paths<'_> {
    fn add(&mut self, segments: Vec<String>) {
        if let Some(target) = self.krate.resolve(self.at, &segments) {
            self.found.push((target, segments.join("::")));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut s = prefix.clone();
                if n.ident != "self" {
                    s.push(n.ident.to_string());
                }
                self.add(s);
            }
            syn::UseTree::Rename(r) => {
                let mut s = prefix.clone();
                s.push(r.ident.to_string());
                self.add(s);
            }
            syn::UseTree::Glob(_) => self.add(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// `crate`/`self`/`super` (or a child module's name) followed by `::` inside a macro call.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let flat: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < flat.len() {
            if let TokenTree::Group(g) = &flat[i] {
                self.tokens(g.stream());
                i += 1;
                continue;
            }
            let mut segments = Vec::new();
            let mut j = i;
            while let Some(TokenTree::Ident(id)) = flat.get(j) {
                let colons = matches!(
                    (flat.get(j + 1), flat.get(j + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':'
                );
                segments.push(id.to_string());
                if !colons {
                    break;
                }
                j += 3;
            }
            if segments.len() > 1 {
                self.add(segments);
                i = j.max(i + 1);
            } else {
                i += 1;
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            _ => &[],
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.add(segments);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The items of module `id`: a file's whole item list, or an inline module's content.
fn items_of(krate: &Crate, id: usize) -> Vec<&syn::Item> {
    let file = &krate.files[&krate.modules[id].file];
    // Walk from the file's own module down the inline chain to `id`.
    let mut chain = vec![id];
    let mut m = id;
    while let Some(p) = krate.modules[m].parent {
        if krate.modules[p].file != krate.modules[id].file {
            break;
        }
        chain.push(p);
        m = p;
    }
    chain.reverse();
    let mut items: Vec<&syn::Item> = file.items.iter().collect();
    for pair in chain.windows(2) {
        let name = krate.modules[pair[0]]
            .children
            .iter()
            .find(|(_, &c)| c == pair[1])
            .map(|(n, _)| n.clone())
            .expect("a child of its parent");
        items = items
            .into_iter()
            .find_map(|i| match i {
                syn::Item::Mod(m) if m.ident == name => m.content.as_ref().map(|(_, c)| c),
                _ => None,
            })
            .map(|c| c.iter().collect())
            .unwrap_or_default();
    }
    items
}

/// File → file arrows, with the names behind each.
type Arrows = BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>>;

fn arrows(krate: &Crate) -> Arrows {
    let mut out = Arrows::new();
    for id in 0..krate.modules.len() {
        let mut paths = Paths {
            krate,
            at: id,
            found: Vec::new(),
        };
        for item in items_of(krate, id) {
            paths.visit_item(item);
        }
        let from = &krate.modules[id].file;
        for (target, name) in paths.found {
            let to = &krate.modules[target].file;
            if to != from {
                out.entry(from.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_default()
                    .insert(name);
            }
        }
    }
    out
}

/// The strongly connected sets of two or more files (Tarjan).
fn circles(arrows: &Arrows) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        arrows: &'a Arrows,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.arrows.get(v).into_iter().flat_map(|m| m.keys()) {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                set.push(w.clone());
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                s.out.push(set);
            }
        }
    }
    let mut s = State {
        arrows,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in arrows.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The crate roots of a package's `src` folder.
fn roots(src: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|p| p.exists())
        .collect();
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        bins.sort();
        out.extend(bins);
    }
    out
}

/// Every circle of the package whose sources are in `src`, described for a reader.
fn circles_in(src: &Path) -> Vec<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let show = |p: &Path| p.strip_prefix(workspace).unwrap_or(p).display().to_string();
    let mut report = Vec::new();
    for root in roots(src) {
        let krate = Crate::load(&root);
        let arrows = arrows(&krate);
        for set in circles(&arrows) {
            let mut lines = vec![format!(
                "a circle of {} files: {}",
                set.len(),
                set.iter().map(|p| show(p)).collect::<Vec<_>>().join(", ")
            )];
            for from in &set {
                for (to, names) in arrows.get(from).into_iter().flatten() {
                    if set.contains(to) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        lines.push(format!(
                            "  {} -> {}: {}",
                            show(from),
                            show(to),
                            names.join(", ")
                        ));
                    }
                }
            }
            report.push(lines.join("\n"));
        }
    }
    report
}

#[test]
fn no_import_circle_between_files_of_any_package() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    for package in [".", "fake-gemini", "conformance"] {
        report.extend(circles_in(&workspace.join(package).join("src")));
    }
    assert!(
        report.is_empty(),
        "import circles (each arrow names what the first file takes from the second):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_check_sees_a_circle_and_its_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("outer")).expect("src");
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).expect("write");
    write("lib.rs", "pub mod a;\npub mod b;\npub mod outer;\n");
    write(
        "a.rs",
        "use crate::b::Thing;\npub fn f() -> Thing { Thing }\n",
    );
    write(
        "b.rs",
        "pub struct Thing;\npub fn g() { tracing::debug!(\"{}\", crate::a::f()); }\n",
    );
    write(
        "outer/mod.rs",
        "pub mod inner;\npub fn h() { inner::deep(); }\n#[cfg(test)]\nmod tests { use crate::a::f; }\n",
    );
    write(
        "outer/inner.rs",
        "pub fn deep() {}\npub fn up() { super::h() }\n",
    );
    let found = circles_in(&src);
    assert_eq!(found.len(), 2, "{found:#?}");
    let all = found.join("\n");
    assert!(
        all.contains("a.rs -> ") && all.contains("crate::b::Thing"),
        "{all}"
    );
    assert!(
        all.contains("crate::a::f"),
        "a path inside a macro call counts: {all}"
    );
    assert!(
        all.contains("inner::deep") && all.contains("super::h"),
        "{all}"
    );

    // Without the arrows back up there is no circle; a test module's import is not an arrow.
    write("b.rs", "pub struct Thing;\n");
    write("outer/inner.rs", "pub fn deep() {}\n");
    assert!(circles_in(&src).is_empty(), "{:#?}", circles_in(&src));
}

/// The server's layers, top first; each names its rooms (a folder under `src/`, or a file's
/// stem). An import may go down the order or stay in its layer, never up: the MCP layer (every
/// rmcp type but the tools' results) above the tools, the tools above the run of a call, that
/// above the backends, those above what a run reports and asks through (no protocol in it),
/// that above the settings, and the ground floor under everything.
const LAYERS: &[(&str, &[&str])] = &[
    ("entry", &["main", "lib", "serving"]),
    (
        "MCP",
        &[
            "http",
            "server",
            "transport",
            "tasks",
            "held",
            "forms",
            "logging",
        ],
    ),
    ("tools", &["tools", "prompts", "render", "roots", "answers"]),
    ("run", &["run", "doctor", "save"]),
    ("backends", &["acp", "oneshot"]),
    ("the CLI", &["gemini", "policy"]),
    ("what a run reports and asks", &["progress", "ask"]),
    // An error kind's fix may name the setting to raise, through its item.
    ("failures", &["error", "structured"]),
    ("settings", &["config"]),
    (
        "ground",
        &["names", "deadline", "sync", "approval", "setup", "fd_limit"],
    ),
];

/// Layers whose rooms stand side by side and import nothing of each other: the two backends.
const APART: &[&str] = &["backends"];

/// The layers through which rmcp's types may pass: the protocol stops at the tools.
const PROTOCOL_LAYERS: usize = 3;

/// The room of a file under `src`: its folder, or its stem.
fn room(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    match first {
        Some(name) if rel.components().count() > 1 => name,
        _ => rel
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
    }
}

/// Every arrow that runs up [`LAYERS`], and every room no layer names, described for a reader.
fn layer_breaches(src: &Path, layers: &[(&str, &[&str])]) -> Vec<String> {
    let layer = |room: &str| layers.iter().position(|(_, rooms)| rooms.contains(&room));
    let mut report = Vec::new();
    for root in roots(src).into_iter().filter(|r| r.ends_with("lib.rs")) {
        let krate = Crate::load(&root);
        for (from, tos) in arrows(&krate) {
            let from_room = room(src, &from);
            let Some(from_layer) = layer(&from_room) else {
                report.push(format!("{from_room} is in no layer"));
                continue;
            };
            for (to, names) in tos {
                let to_room = room(src, &to);
                match layer(&to_room) {
                    None => report.push(format!("{to_room} is in no layer")),
                    Some(to_layer) if to_layer < from_layer => report.push(format!(
                        "{from_room} ({}) imports up from {to_room} ({}): {}",
                        layers[from_layer].0,
                        layers[to_layer].0,
                        names.into_iter().collect::<Vec<_>>().join(", ")
                    )),
                    Some(to_layer)
                        if to_layer == from_layer
                            && from_room != to_room
                            && APART.contains(&layers[from_layer].0) =>
                    {
                        report.push(format!(
                            "{from_room} imports its side-by-side {to_room} ({}): {}",
                            layers[from_layer].0,
                            names.into_iter().collect::<Vec<_>>().join(", ")
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
    }
    report.sort();
    report.dedup();
    report
}

#[test]
fn the_server_imports_only_down_its_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = layer_breaches(&src, LAYERS);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn the_layer_check_sees_an_import_up_and_a_room_in_no_layer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("low")).expect("src");
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).expect("write");
    write("lib.rs", "pub mod high;\npub mod low;\n");
    write("high.rs", "pub fn h() { crate::low::deep::l() }\n");
    write("low/mod.rs", "pub mod deep;\n");
    write("low/deep.rs", "pub fn l() {}\n");
    let layers: &[(&str, &[&str])] = &[("top", &["lib", "high"]), ("bottom", &["low"])];
    assert!(layer_breaches(&src, layers).is_empty());

    write(
        "low/deep.rs",
        "pub fn l() {}\npub fn up() { crate::high::h() }\n",
    );
    assert_eq!(
        layer_breaches(&src, layers),
        ["low (bottom) imports up from high (top): crate::high::h"]
    );
    let side: &[(&str, &[&str])] = &[("backends", &["lib", "high", "low"])];
    assert_eq!(
        layer_breaches(&src, side),
        [
            "high imports its side-by-side low (backends): crate::low::deep::l",
            "low imports its side-by-side high (backends): crate::high::h",
        ],
        "rooms side by side import nothing of each other"
    );
    let unplaced: &[(&str, &[&str])] = &[("top", &["lib"]), ("bottom", &["low"])];
    assert!(layer_breaches(&src, unplaced)
        .iter()
        .any(|l| l == "high is in no layer"));
}

/// A wing's name (its folder under `src/`) and its floors, top first: each a name and its rooms.
type Wing = (
    &'static str,
    &'static [(&'static str, &'static [&'static str])],
);

/// The floors inside a wing (a folder of `src/`), top first, as [`LAYERS`] orders the crate's
/// rooms: each floor names its rooms, a file's stem or a folder under the wing (`mod` is the wing's
/// own `mod.rs`, or `x.rs` beside a folder `x/`). An import from one room of a wing to another runs
/// down or stays on its floor, never up; a wing's room in no floor fails the test as well.
const FLOORS: &[Wing] = &[
    (
        "acp",
        &[
            ("the backend", &["mod"]),
            ("agents, sessions and prompts", &["pool"]),
            ("one agent's JSON-RPC", &["client"]),
            ("the ACP messages", &["wire"]),
            (
                "where the Gemini CLI departs from the schema",
                &["departures"],
            ),
        ],
    ),
    (
        "acp/pool",
        &[
            ("the two uses", &["prompt", "warm"]),
            ("the pool", &["mod"]),
            ("a turn and a load's replay", &["turn", "replay"]),
            ("what a turn folds and where it runs", &["fold", "slots"]),
            ("a call and an agent's key", &["call", "agent"]),
        ],
    ),
    (
        "gemini",
        &[
            ("the wing", &["mod"]),
            (
                "what starts the CLI and waits on it",
                &["launch", "gate", "auth", "mcp_probe", "history"],
            ),
            (
                "what a start is made of",
                &[
                    "command",
                    "environment",
                    "process",
                    "mcp_servers",
                    "retention",
                    "telemetry",
                ],
            ),
            (
                "the CLI's program, sessions and settings",
                &["resolve", "session", "settings"],
            ),
            (
                "what is handed to the CLI and read of its end",
                &["inputs", "outcome"],
            ),
        ],
    ),
    (
        "gemini/process",
        &[
            ("supervision", &["mod"]),
            (
                "the tree, its command line and its pipes",
                &["tree", "argv", "capture"],
            ),
            ("trees killed if the server dies", &["watchdog"]),
            (
                "what the watchdog reads and removes",
                &["sweep", "tmp", "status"],
            ),
        ],
    ),
    (
        "oneshot",
        &[
            ("an attempt", &["mod"]),
            ("its end classified", &["classify"]),
            ("stream-json", &["events"]),
        ],
    ),
    (
        "tools",
        &[
            ("the registry", &["mod"]),
            ("the jobs set", &["jobs"]),
            ("the acp set", &["agent"]),
            ("the prompt and sessions sets", &["prompt", "sessions"]),
            ("arguments decoded", &["args"]),
            ("what a tool is declared with", &["decl"]),
        ],
    ),
];

/// The room of `file` inside the wing `wing` (a folder under `src`), if the file is in it.
fn inner_room(src: &Path, wing: &str, file: &Path) -> Option<String> {
    let base = src.join(wing);
    if file == base.with_extension("rs") {
        return Some("mod".into());
    }
    let rel = file.strip_prefix(&base).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    Some(first.strip_suffix(".rs").unwrap_or(&first).to_owned())
}

/// Every arrow inside a wing of `floors` that runs up its floors, every room of a wing no floor
/// names and every room a floor names that the wing lacks, described for a reader with the files.
fn floor_breaches(src: &Path, floors: &[Wing]) -> Vec<String> {
    let show = |p: &Path| p.strip_prefix(src).unwrap_or(p).display().to_string();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let krate = Crate::load(&src.join("lib.rs"));
    let arrows = arrows(&krate);
    let mut report = Vec::new();
    for &(wing, wing_floors) in floors {
        let floor = |room: &str| {
            wing_floors
                .iter()
                .position(|(_, rooms)| rooms.contains(&room))
        };
        // A wing's unit tests (`tests.rs`, `#[cfg(test)]`) stand on no floor.
        let present: BTreeSet<String> = files
            .iter()
            .filter_map(|f| inner_room(src, wing, f))
            .filter(|room| room != "tests")
            .collect();
        for room in &present {
            if floor(room).is_none() {
                report.push(format!("{wing}: {room} is in no floor"));
            }
        }
        for (_, rooms) in wing_floors {
            for room in rooms.iter().filter(|r| !present.contains(**r)) {
                report.push(format!("{wing}: {room} is listed but not in src/{wing}"));
            }
        }
        for (from, tos) in &arrows {
            let Some(from_room) = inner_room(src, wing, from) else {
                continue;
            };
            for (to, names) in tos {
                let Some(to_room) = inner_room(src, wing, to) else {
                    continue;
                };
                let (Some(up), Some(down)) = (floor(&to_room), floor(&from_room)) else {
                    continue;
                };
                if up < down {
                    report.push(format!(
                        "{wing}: {from_room} ({}) imports up from {to_room} ({}): {} -> {}: {}",
                        wing_floors[down].0,
                        wing_floors[up].0,
                        show(from),
                        show(to),
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
    report.sort();
    report.dedup();
    report
}

#[test]
fn the_rooms_inside_a_wing_import_only_down_its_floors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = floor_breaches(&src, FLOORS);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn the_floor_check_sees_an_import_up_a_room_in_no_floor_and_a_room_gone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("wing/deep")).expect("src");
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).expect("write");
    write("lib.rs", "pub mod wing;\n");
    write(
        "wing/mod.rs",
        "pub mod high;\npub mod low;\npub mod deep;\n",
    );
    write("wing/high.rs", "pub fn h() { super::low::l() }\n");
    write("wing/low.rs", "pub fn l() {}\n");
    write("wing/deep/mod.rs", "pub fn d() { crate::wing::low::l() }\n");
    write("wing/tests.rs", "use super::high::h;\n");
    let floors: &[Wing] = &[(
        "wing",
        &[
            ("top", &["mod", "high"]),
            ("middle", &["deep"]),
            ("bottom", &["low"]),
        ],
    )];
    assert_eq!(floor_breaches(&src, floors), Vec::<String>::new());

    write(
        "wing/low.rs",
        "pub fn l() {}\npub fn up() { super::deep::d() }\n",
    );
    let found = floor_breaches(&src, floors);
    assert_eq!(
        found,
        ["wing: low (bottom) imports up from deep (middle): wing/low.rs -> wing/deep/mod.rs: super::deep::d"],
        "the failure names the rooms, their floors and the files"
    );
    let unplaced: &[Wing] = &[(
        "wing",
        &[("top", &["mod", "high", "gone"]), ("bottom", &["low"])],
    )];
    assert_eq!(
        floor_breaches(&src, unplaced),
        [
            "wing: deep is in no floor",
            "wing: gone is listed but not in src/wing"
        ]
    );
}

/// Every room listed more than once in `layers`, or more than once among one wing's `floors`.
fn listed_twice(layers: &[(&str, &[&str])], floors: &[Wing]) -> Vec<String> {
    let twice = |rooms: Vec<&str>, what: &str| {
        let mut seen = BTreeSet::new();
        rooms
            .into_iter()
            .filter(|r| !seen.insert(*r))
            .map(|r| format!("{r} is listed twice in {what}"))
            .collect::<Vec<_>>()
    };
    let mut out = twice(
        layers
            .iter()
            .flat_map(|(_, rooms)| rooms.iter().copied())
            .collect(),
        "LAYERS",
    );
    for (wing, wing_floors) in floors {
        out.extend(twice(
            wing_floors
                .iter()
                .flat_map(|(_, rooms)| rooms.iter().copied())
                .collect(),
            &format!("the floors of {wing}"),
        ));
    }
    out
}

#[test]
fn each_room_is_listed_once() {
    let twice = listed_twice(LAYERS, FLOORS);
    assert!(twice.is_empty(), "{twice:?}");
    assert_eq!(
        listed_twice(
            &[("top", &["a", "b"]), ("bottom", &["b"])],
            &[("w", &[("top", &["x"]), ("bottom", &["x", "y"])])]
        ),
        [
            "b is listed twice in LAYERS",
            "x is listed twice in the floors of w"
        ],
        "the check sees a room in two layers and one in two floors"
    );
}

/// The files below [`PROTOCOL_LAYERS`] that name rmcp outside their tests.
fn protocol_below_the_tools(src: &Path, layers: &[(&str, &[&str])]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        if file.ends_with("tests.rs") || file.components().any(|c| c.as_os_str() == "tests") {
            continue;
        }
        let room = room(src, &file);
        let deep = layers
            .iter()
            .position(|(_, rooms)| rooms.contains(&room.as_str()))
            .is_some_and(|at| at >= PROTOCOL_LAYERS);
        let text = std::fs::read_to_string(&file).expect("read");
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        if deep && code.contains("rmcp::") {
            found.push(
                file.strip_prefix(src)
                    .unwrap_or(&file)
                    .display()
                    .to_string(),
            );
        }
    }
    found.sort();
    found
}

/// Every `.rs` file under `path` (or `path` itself), in name order.
fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for e in entries {
            rust_files(&e, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

#[test]
fn the_protocol_stops_at_the_tools() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = protocol_below_the_tools(&src, LAYERS);
    assert!(
        found.is_empty(),
        "rmcp below the tools layer (make the MCP layer hand it down as a plain type): {found:?}"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("config")).expect("dir");
    std::fs::write(dir.path().join("config/mod.rs"), "use rmcp::model::Tool;\n").expect("write");
    std::fs::write(dir.path().join("server.rs"), "use rmcp::model::Tool;\n").expect("write");
    assert_eq!(
        protocol_below_the_tools(dir.path(), LAYERS),
        ["config/mod.rs"],
        "the check sees a deep file that names rmcp, and lets the MCP layer"
    );
}

/// Most lines a file of the server's `src/` may hold: past it a file holds more than one concern
/// (split it by concern; a module's unit tests go in its own `tests.rs`).
const MAX_FILE_LINES: usize = 800;

/// The files under `src` longer than `max` lines, with their lengths.
fn long_files(src: &Path, max: usize) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).expect("read").lines().count();
            (n > max).then(|| format!("{} ({n} lines)", f.strip_prefix(src).unwrap().display()))
        })
        .collect()
}

#[test]
fn no_file_of_the_server_is_over_800_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let long = long_files(&src, MAX_FILE_LINES);
    assert!(long.is_empty(), "split by concern: {long:?}");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("short.rs"), "fn a() {}\n".repeat(3)).expect("write");
    std::fs::write(dir.path().join("long.rs"), "fn a() {}\n".repeat(4)).expect("write");
    assert_eq!(
        long_files(dir.path(), 3),
        ["long.rs (4 lines)"],
        "the check sees a file one line over"
    );
}
