//! The README's "Architecture" section names every file of `src/` and `www/` by its job, so a
//! newcomer finds where a model, a task reader, the probe or a page panel lives. This holds the
//! list to the tree: a file added without a line, or a line left for a file that is gone, fails.
//!
//! The list is bullets, each `- \`FOLDER/\`: …` naming that folder's files in backticks
//! (`` `eval.rs` ``); a bullet may run over several lines.

use std::collections::BTreeSet;
use std::path::Path;

/// The build outputs the page serves but git ignores (scripts/build-wasm.sh writes them).
const BUILT: [&str; 2] = ["www/pkg", "www/pkg-threads"];

fn files_under(root: &Path, folder: &str, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(root.join(folder)).unwrap() {
        let entry = entry.unwrap();
        let path = format!("{folder}/{}", entry.file_name().to_string_lossy());
        if entry.file_type().unwrap().is_dir() {
            if !BUILT.contains(&path.as_str()) {
                files_under(root, &path, out);
            }
        } else {
            out.insert(path);
        }
    }
}

/// The backticked words of `text`.
fn quoted(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// Every file the section lists, as `folder/name`: the backticked names with an extension the
/// tree's files have (so `tokenizer.json` or `torch.save` in a job's words are not files).
fn listed(section: &str, extensions: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut bullets: Vec<String> = Vec::new();
    for line in section.lines() {
        if line.starts_with("- `") {
            bullets.push(line.to_string());
        } else if line.starts_with("  ") && !bullets.is_empty() {
            bullets.last_mut().unwrap().push_str(line);
        } else if !line.starts_with("- ") {
            bullets.push(String::new()); // a paragraph ends the bullet before it
        }
    }
    let mut out = BTreeSet::new();
    for bullet in bullets.iter().filter(|b| !b.is_empty()) {
        let mut words = quoted(bullet);
        let Some(folder) = words.next().and_then(|f| f.strip_suffix('/')) else {
            continue;
        };
        for name in words {
            let is_file = !name.contains(['/', ' '])
                && name
                    .rsplit_once('.')
                    .is_some_and(|(stem, ext)| !stem.is_empty() && extensions.contains(ext));
            if is_file {
                out.insert(format!("{folder}/{name}"));
            }
        }
    }
    out
}

#[test]
fn the_readme_lists_every_file_of_src_and_www_by_its_job() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("\n## Architecture\n")
        .expect("README.md has an Architecture section");
    let rest = &readme[start + 1..];
    let section = &rest[..rest[3..].find("\n## ").map_or(rest.len(), |end| end + 3)];
    let mut present = BTreeSet::new();
    files_under(root, "src", &mut present);
    files_under(root, "www", &mut present);
    let extensions = present
        .iter()
        .filter_map(|p| p.rsplit_once('.').map(|(_, ext)| ext))
        .collect();
    let listed = listed(section, &extensions);
    let unlisted: Vec<_> = present.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&present).collect();
    assert!(
        unlisted.is_empty() && gone.is_empty(),
        "README.md's Architecture section is out of step with the tree:\n  files it does not \
         list: {unlisted:?}\n  files it lists that do not exist: {gone:?}"
    );
}
