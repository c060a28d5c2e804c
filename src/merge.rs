//! `geneb merge`: the pair results of a sharded run (`shard`) put back together as one
//! submission per model, equal to what one unsharded `geneb eval` would have written except
//! for the run's circumstances (`eval::RUN_CIRCUMSTANCES`: timings summed, cache hits joined,
//! cost combined as `add_cost` says).
//! Anything that would make the merged file a mix of different runs is refused.

use crate::eval::{RUN_CIRCUMSTANCES, cost_rates, task_deviations};
use crate::shard::{Plan, pair_problem};
use crate::submission::Submission;
use crate::{Error, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One model's merged submission and the file name it belongs under.
pub struct Merged {
    pub file_name: String,
    pub submission: Submission,
}

/// Protocol keys made from the run's tasks: rebuilt for the merged task list, not compared.
const PER_TASK_PROTOCOL: [&str; 3] = ["task_data_sha256", "truncated_sequences", "deviations"];

/// Merges the results folders of one run (usually one; several when shards wrote to
/// different places). A pair found in two folders must have the same content there.
pub fn merge(dirs: &[PathBuf]) -> Result<(Plan, Vec<Merged>)> {
    let first = dirs
        .first()
        .ok_or_else(|| Error::new("name the results folder(s) to merge"))?;
    let plan = Plan::read(first)?;
    for dir in &dirs[1..] {
        if let Some(what) = Plan::read(dir)?.difference(&plan) {
            return Err(Error::in_file(
                dir.display().to_string(),
                format!("another run than {} ({what} differ)", first.display()),
            ));
        }
    }
    let mut missing: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut merged = Vec::new();
    let shard_of = plan.dealer();
    for model in &plan.models {
        let mut pairs = Vec::new();
        for task in &plan.tasks {
            match read_pair(&plan, dirs, model, &task.id, &task.sha256)? {
                Some(pair) => pairs.push(pair),
                None => missing
                    .entry(shard_of(model, &task.id))
                    .or_default()
                    .push(format!("{model} × {}", task.id)),
            }
        }
        if missing.is_empty() {
            merged.push(Merged {
                file_name: format!("{}.json", crate::shard::file_name(model)),
                submission: join(&plan, pairs)?,
            });
        }
    }
    if !missing.is_empty() {
        return Err(missing_error(&plan, first, &missing));
    }
    drop(shard_of);
    Ok((plan, merged))
}

/// A pair's result with where it was read from.
struct Pair {
    path: PathBuf,
    result: Submission,
}

/// The pair's result from whichever folders have it, checked; `None` when none has it.
fn read_pair(
    plan: &Plan,
    dirs: &[PathBuf],
    model: &str,
    task: &str,
    sha256: &str,
) -> Result<Option<Pair>> {
    let mut found: Option<Pair> = None;
    for dir in dirs {
        let path = Plan::pair_path(dir, model, task);
        let Ok(bytes) = crate::budget::read_file(&path) else {
            continue;
        };
        let name = path.display().to_string();
        // Its protocol block and predictions are JSON values: up to 16 bytes per byte of text.
        crate::budget::charge(&name, "reading the result", bytes.len() as u64, 16)?;
        let result: Submission = serde_json::from_slice(&bytes)
            .map_err(|e| Error::in_file(&name, format!("not a geneb result: {e}")))?;
        if let Some(why) = pair_problem(&result, task, &plan.regimes, sha256) {
            return Err(Error::in_file(
                &name,
                format!("not a complete result of this run: {why}; delete it and rerun its shard"),
            ));
        }
        let planned = format!("geneb {}", plan.geneb);
        if result.harness_version != planned {
            return Err(Error::in_file(
                &name,
                format!(
                    "made by {}, the run's other results by {planned}: one run must not mix \
                     geneb versions; delete it and rerun its shard",
                    result.harness_version
                ),
            ));
        }
        if let Some(earlier) = &found {
            if comparable(&earlier.result)? != comparable(&result)? {
                return Err(Error::in_file(
                    &name,
                    format!(
                        "{model} × {task} is also in {} with different content; keep the right one",
                        earlier.path.display()
                    ),
                ));
            }
            continue;
        }
        found = Some(Pair { path, result });
    }
    Ok(found)
}

/// A result as JSON without the run's circumstances, for comparing two copies.
fn comparable(result: &Submission) -> Result<Value> {
    let mut value = serde_json::to_value(result)
        .map_err(|e| Error::new(format!("cannot compare results: {e}")))?;
    if let Some(protocol) = value.get_mut("protocol").and_then(Value::as_object_mut) {
        for key in RUN_CIRCUMSTANCES {
            protocol.remove(key);
        }
    }
    Ok(value)
}

/// One model's pairs, in the plan's task order, as one submission.
fn join(plan: &Plan, pairs: Vec<Pair>) -> Result<Submission> {
    let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    let mut pairs = pairs.into_iter();
    let first = pairs
        .next()
        .ok_or_else(|| Error::new("the plan lists no tasks"))?;
    let reference = shared_part(&first.result)?;
    let mut out = first.result.clone();
    let mut protocol = out.protocol.take().unwrap_or(Value::Null);
    let mut not_converged = protocol["probe"]["not_converged"].take();
    let mut from_cache = protocol["embeddings_from_cache"].take();
    let mut hashes = protocol["task_data_sha256"].take();
    // Results of a geneb that did not count truncations have none to merge.
    let mut truncated = match protocol["truncated_sequences"].take() {
        counts @ Value::Object(_) => counts,
        _ => Value::Object(Default::default()),
    };
    let (mut embed_s, mut probe_s) = timings(&protocol);
    // Results of a geneb that measured no cost have none to combine.
    let mut cost = protocol.get("cost").cloned();
    for pair in pairs {
        let shared = shared_part(&pair.result)?;
        if shared != reference {
            return Err(Error::in_file(
                pair.path.display().to_string(),
                format!(
                    "differs from {} in {}: the run's results must come from the same encoder \
                     build, backend and geneb",
                    first.path.display(),
                    first_difference(&reference, &shared)
                ),
            ));
        }
        let result = pair.result;
        out.results.iter_mut().for_each(|(regime, tasks)| {
            tasks.extend(result.results.get(regime).cloned().unwrap_or_default())
        });
        for (regime, tasks) in result.fewshot {
            out.fewshot.entry(regime).or_default().extend(tasks);
        }
        out.tasks.extend(result.tasks);
        out.predictions.extend(result.predictions);
        out.audit.extend(result.audit);
        for (regime, tasks) in result.leak_free {
            out.leak_free.entry(regime).or_default().extend(tasks);
        }
        let theirs = result.protocol.unwrap_or(Value::Null);
        append(&mut not_converged, &theirs["probe"]["not_converged"]);
        extend(&mut from_cache, &theirs["embeddings_from_cache"]);
        extend(&mut hashes, &theirs["task_data_sha256"]);
        extend(&mut truncated, &theirs["truncated_sequences"]);
        let (e, p) = timings(&theirs);
        embed_s += e;
        probe_s += p;
        if let Some(cost) = &mut cost {
            add_cost(cost, &theirs["cost"]);
        }
    }
    let encoder_deviations = reference["protocol"]["encoder_deviations"].clone();
    // In the order `evaluate` states them: the tasks', the splits geneb made, the encoder's.
    let mut deviations: Vec<Value> = task_deviations(&ids)
        .into_iter()
        .chain(crate::input::split::deviations(&made_splits(&out)))
        .map(Value::from)
        .collect();
    deviations.extend(encoder_deviations.as_array().cloned().unwrap_or_default());
    protocol["probe"]["not_converged"] = not_converged;
    protocol["embeddings_from_cache"] = from_cache;
    protocol["task_data_sha256"] = hashes;
    protocol["truncated_sequences"] = truncated;
    protocol["timings_s"] = serde_json::json!({ "embed": embed_s, "probe": probe_s });
    protocol["deviations"] = Value::Array(deviations);
    if let Some(mut cost) = cost {
        cost_rates(&mut cost);
        protocol["cost"] = cost;
    }
    out.protocol = Some(protocol);
    Ok(out)
}

/// Each task of a result with the split geneb made for it, if any.
fn made_splits(result: &Submission) -> Vec<crate::input::split::SplitOf<'_>> {
    result
        .tasks
        .iter()
        .map(|(id, info)| (id.as_str(), info.split.as_ref()))
        .collect()
}

/// What every pair of one model must share: the submission without its per-task parts, and
/// the deviations that are the encoder's rather than the task's.
fn shared_part(result: &Submission) -> Result<Value> {
    let mut value = comparable(result)?;
    let object = value
        .as_object_mut()
        .ok_or_else(|| Error::new("not a result"))?;
    for key in [
        "results",
        "tasks",
        "fewshot",
        "predictions",
        "audit",
        "leak_free",
    ] {
        object.remove(key);
    }
    if let Some(protocol) = object.get_mut("protocol").and_then(Value::as_object_mut) {
        // The deviations of this pair's task (not one of GENEB's, split by geneb) differ from
        // pair to pair; the rest are the encoder's and must agree.
        let own: Vec<String> =
            task_deviations(&result.tasks.keys().map(String::as_str).collect::<Vec<_>>())
                .into_iter()
                .chain(crate::input::split::deviations(&made_splits(result)))
                .collect();
        let encoder: Vec<Value> = protocol
            .get("deviations")
            .and_then(Value::as_array)
            .map(|all| {
                all.iter()
                    .filter(|d| !own.iter().any(|o| d.as_str() == Some(o)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for key in PER_TASK_PROTOCOL {
            protocol.remove(key);
        }
        if let Some(probe) = protocol.get_mut("probe").and_then(Value::as_object_mut) {
            probe.remove("not_converged");
        }
        protocol.insert("encoder_deviations".into(), Value::Array(encoder));
    }
    Ok(value)
}

/// The first top-level (or protocol) key in which two shared parts differ, for the message.
fn first_difference(a: &Value, b: &Value) -> String {
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    for key in keys(a).into_iter().chain(keys(b)).flatten() {
        if a[&key] != b[&key] {
            if key == "protocol" {
                for inner in keys(&a[&key]).into_iter().chain(keys(&b[&key])).flatten() {
                    if a[&key][&inner] != b[&key][&inner] {
                        return format!("protocol.{inner}");
                    }
                }
            }
            return key;
        }
    }
    "content".into()
}

fn timings(protocol: &Value) -> (f64, f64) {
    let t = &protocol["timings_s"];
    (
        t["embed"].as_f64().unwrap_or(0.0),
        t["probe"].as_f64().unwrap_or(0.0),
    )
}

/// One shard's `protocol.cost` added to the others': the work and its seconds summed (the rates
/// are recomputed from the sums: the throughput of the run's devices, each shard's pass
/// counted once), the peaks' maximum, and the longest model load: an unsharded run loads each
/// model once, so a sum would charge it for every shard's reload, and the longest (a cold disk
/// cache) is what one run may pay, whatever the shards' order. Device and adapter need no
/// combining: `protocol.backend` must agree for the pairs to merge at all.
fn add_cost(total: &mut Value, more: &Value) {
    for key in ["embedded_sequences", "embedded_nucleotides"] {
        total[key] = (total[key].as_u64().unwrap_or(0) + more[key].as_u64().unwrap_or(0)).into();
    }
    let seconds = |cost: &Value| cost["embedding_s"].as_f64().unwrap_or(0.0);
    total["embedding_s"] = (seconds(total) + seconds(more)).into();
    for key in ["load_s", "peak_memory_bytes", "peak_gpu_memory_bytes"] {
        // A null (not measured there) loses to any measurement.
        if more[key].as_f64() > total[key].as_f64() {
            total[key] = more[key].clone();
        }
    }
}

fn append(list: &mut Value, more: &Value) {
    if let (Some(list), Some(more)) = (list.as_array_mut(), more.as_array()) {
        list.extend(more.iter().cloned());
    }
}

fn extend(map: &mut Value, more: &Value) {
    if let (Some(map), Some(more)) = (map.as_object_mut(), more.as_object()) {
        map.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// "5 of 12 results are missing …", by shard, naming up to three pairs of each.
fn missing_error(plan: &Plan, dir: &Path, missing: &BTreeMap<usize, Vec<String>>) -> Error {
    let total = plan.models.len() * plan.tasks.len();
    let count: usize = missing.values().map(Vec::len).sum();
    let shards: Vec<String> = missing
        .iter()
        .map(|(shard, pairs)| {
            let named: Vec<&str> = pairs.iter().take(3).map(String::as_str).collect();
            let more = if pairs.len() > 3 {
                format!(", and {} more", pairs.len() - 3)
            } else {
                String::new()
            };
            format!(
                "shard {shard}: {} of its {} ({}{more})",
                pairs.len(),
                plan.pairs_in(*shard),
                named.join(", ")
            )
        })
        .collect();
    let indices: Vec<String> = missing.keys().map(usize::to_string).collect();
    Error::in_file(
        dir.display().to_string(),
        format!(
            "{count} of {total} (model, task) results are missing — {}; rerun shard(s) {} of {} \
             with the same arguments (finished pairs are kept)",
            shards.join("; "),
            indices.join(","),
            plan.shards
        ),
    )
}

#[cfg(test)]
mod tests {
    /// Merge reads scores back from the pair files: every f64 must parse to the same bits it
    /// was written from (serde_json's default parser misses by one ulp now and then).
    #[test]
    fn scores_read_back_bit_for_bit() {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let score = (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            let text = serde_json::to_string(&score).unwrap();
            let back: f64 = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_bits(), score.to_bits(), "{text}");
        }
    }
}
