//! Embeds the web UI: every file under `../ui/` becomes an entry of `UI_ASSETS` (path relative
//! to `ui/`, bytes), compiled into the binary so `serve` needs no files and no network at run
//! time (`src/http/ui.rs` serves them).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    // A file added to (or removed from) any folder changes that folder's mtime.
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.is_file() {
            out.push(path);
        }
    }
}

fn main() {
    let ui = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui");
    let mut found = Vec::new();
    files(&ui, &mut found);
    found.sort();
    let mut code = String::from("/// The web UI's files: (path under `ui/`, contents).\n");
    code.push_str("pub static UI_ASSETS: &[(&str, &[u8])] = &[\n");
    for path in &found {
        println!("cargo:rerun-if-changed={}", path.display());
        let rel = path
            .strip_prefix(&ui)
            .expect("a file found under ui/")
            .to_string_lossy()
            .replace('\\', "/");
        let abs = path.canonicalize().expect("an existing file");
        writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.display().to_string()
        )
        .expect("writing to a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("ui_assets.rs"), code).expect("writing ui_assets.rs");
}
