//! What the sharding tests (tests/shard.rs, tests/slurm.rs) share: the real binary, fresh
//! folders, and results compared as the issue asks, timings aside.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const GENEB: &str = env!("CARGO_BIN_EXE_geneb");

pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// An empty folder of its own under the system temp folder, removed first if a crashed run
/// left it.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("geneb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `geneb ARGS` with its own embedding cache (`cache`), so no test sees another's entries.
pub fn geneb(args: &[&str], cache: &Path) -> Output {
    Command::new(GENEB)
        .args(args)
        .env("GENEB_CACHE", cache)
        .output()
        .expect("running geneb")
}

pub fn succeeded(out: Output) -> Output {
    assert!(
        out.status.success(),
        "geneb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// A result without its timings and cost, the parts two runs of the same work never share
/// (each measures its own seconds and memory).
pub fn without_measurements(mut result: Value) -> Value {
    let protocol = result["protocol"]
        .as_object_mut()
        .expect("a protocol block");
    for key in ["timings_s", "cost"] {
        protocol
            .remove(key)
            .unwrap_or_else(|| panic!("no {key} in the protocol block"));
    }
    result
}

/// One unsharded `geneb eval --out` per model: what a merged run must equal.
pub fn unsharded(models: &[&str], tasks: &str, cache: &Path, dir: &Path) -> Vec<Value> {
    models
        .iter()
        .enumerate()
        .map(|(i, model)| {
            let out = dir.join(format!("unsharded-{i}.json"));
            let out_arg = out.to_str().unwrap();
            succeeded(geneb(
                &["eval", "--model", model, "--task", tasks, "--out", out_arg],
                cache,
            ));
            read_json(&out)
        })
        .collect()
}

/// The merged submission of `model` in `merged`, as `geneb merge` names it.
pub fn merged_result(merged: &Path, model: &str) -> Value {
    read_json(&merged.join(format!("{}.json", geneb::shard::file_name(model))))
}
