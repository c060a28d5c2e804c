//! Bring your own embeddings: the whole protocol (full data, 10- and 1-shot with the GENEB
//! seeds, the profile, the submission) on embeddings made outside geneb, by a model it cannot
//! run. One task per file or folder:
//!
//! - **`<task>.npz`** with `X_train`, `y_train`, `X_test`, `y_test` (float32/float64 rows,
//!   integer labels), and optionally the strings `task` (the id; else the file stem) and
//!   `category`: what `numpy.savez` / `savez_compressed` write.
//! - **`<task>/X.npy` + `<task>/labels.csv`** (or `.tsv`): row i of `X` is data row i of the table,
//!   whose `label` column holds any text labels and whose `split` column says train or test;
//!   without a split column geneb splits it as it splits sequence tables (`crate::input::split`: seed,
//!   fraction, group column, folds).
//!
//! float64 embeddings are probed as float32, the precision geneb's own encoders give (the probe
//! itself computes in f64). The result records that the embeddings came from outside.

use crate::input::InputFile;
use crate::input::npz::{self, NpyValues, ProbeX};
use crate::input::split::{self, SplitSettings};
use crate::protocol::UNCATEGORIZED;
use crate::task::{MadeSplit, Task};
use crate::{Error, Result};
use ndarray::{Array2, Axis};
use std::collections::BTreeMap;

/// One task's embeddings with their labels.
#[derive(Debug, Clone)]
pub struct EmbeddingsTask {
    pub task: Task,
    /// Label names in numpy `unique` order; `y_*` index into them.
    pub labels: Vec<String>,
    pub y_train: Vec<usize>,
    pub y_test: Vec<usize>,
    pub x_train: Array2<f32>,
    pub x_test: Array2<f32>,
    pub made_split: Option<MadeSplit>,
    /// The file (or folder) the embeddings came from.
    pub source: String,
    /// `float32` or `float64`, as stored.
    pub stored_as: &'static str,
}

/// The tasks among `files` (names relative to what the user gave, as `input::InputFile`): every
/// `.npz`, and every folder holding `X.npy` and a `labels.csv`/`.tsv`. `category` applies to
/// tasks that neither the GENEB catalogue nor the `.npz` names.
pub fn tasks_from_files(
    files: &[InputFile],
    category: Option<&str>,
    split: &SplitSettings,
) -> Result<Vec<EmbeddingsTask>> {
    split.check()?;
    let mut tasks = Vec::new();
    let mut folders: BTreeMap<&str, (Option<&InputFile>, Option<&InputFile>)> = BTreeMap::new();
    for file in files {
        let (folder, base) = file.name.rsplit_once('/').unwrap_or(("", &file.name));
        let lower = base.to_ascii_lowercase();
        if is_npz(&lower) {
            tasks.push(from_npz(file, category)?);
        } else if lower == X_NPY {
            folders.entry(folder).or_default().0 = Some(file);
        } else if LABELS.contains(&lower.as_str()) {
            folders.entry(folder).or_default().1 = Some(file);
        }
    }
    for (folder, pair) in folders {
        match pair {
            (Some(x), Some(labels)) => tasks.extend(from_npy(folder, x, labels, category, split)?),
            (Some(x), None) => {
                return Err(Error::in_file(
                    &x.name,
                    "no labels.csv beside this X.npy: put the labels (a `label` column, one row per \
                     row of X, and optionally `split`) in labels.csv in the same folder",
                ));
            }
            (None, Some(labels)) => {
                return Err(Error::in_file(
                    &labels.name,
                    "no X.npy beside this labels table: put the embeddings (rows in the table's order) in X.npy in the same folder",
                ));
            }
            (None, None) => {}
        }
    }
    if tasks.is_empty() {
        return Err(Error::new(
            "no embeddings among the files: give .npz files (X_train, y_train, X_test, y_test) or \
             folders with X.npy and labels.csv",
        ));
    }
    tasks.sort_by(|a, b| a.task.id.cmp(&b.task.id));
    if let Some(pair) = tasks.windows(2).find(|p| p[0].task.id == p[1].task.id) {
        return Err(Error::in_file(
            &pair[1].source,
            format!(
                "task id '{}' is given twice, by {} and by {}; rename one",
                pair[0].task.id, pair[0].source, pair[1].source
            ),
        ));
    }
    Ok(tasks)
}

/// The embeddings at `path`: an `.npz`, a task folder with `X.npy` + `labels.csv`, or a folder
/// of those (two levels deep). Files are named relative to `path`'s parent, so a task folder's
/// name is its id.
#[cfg(not(target_arch = "wasm32"))]
pub fn tasks_from_path(
    path: &std::path::Path,
    category: Option<&str>,
    split: &SplitSettings,
) -> Result<Vec<EmbeddingsTask>> {
    fn collect(
        dir: &std::path::Path,
        name: &str,
        depth: usize,
        out: &mut Vec<InputFile>,
    ) -> Result<()> {
        let fail = |e: std::io::Error| {
            Error::in_file(dir.display().to_string(), format!("cannot read: {e}"))
        };
        let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .map_err(fail)?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()
            .map_err(fail)?;
        entries.sort();
        for entry in entries {
            let base = entry
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let child = if name.is_empty() {
                base.clone()
            } else {
                format!("{name}/{base}")
            };
            if entry.is_dir() && depth < 2 && !base.starts_with('.') {
                collect(&entry, &child, depth + 1, out)?;
            } else if is_embeddings_file(&base) {
                out.push(read(&entry, child)?);
            }
        }
        Ok(())
    }
    fn read(path: &std::path::Path, name: String) -> Result<InputFile> {
        let bytes = crate::budget::read_file(path)
            .map_err(|e| Error::in_file(path.display().to_string(), format!("cannot read: {e}")))?;
        Ok(InputFile { name, bytes })
    }
    let own = std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut files = Vec::new();
    if path.is_dir() {
        collect(path, &own, 0, &mut files)?;
    } else {
        files.push(read(path, own)?);
    }
    tasks_from_files(&files, category, split).map_err(|mut e| {
        // Name files by their path on disk.
        if let (Some(file), Some(parent)) = (e.file.as_mut(), path.parent()) {
            *file = parent.join(&*file).display().to_string();
        }
        e
    })
}

/// The embeddings files among `files` (every `.npz`, and `X.npy` with the labels table beside
/// it), and the others.
pub fn partition(files: Vec<InputFile>) -> (Vec<InputFile>, Vec<InputFile>) {
    let folder = |name: &str| name.rsplit_once('/').map_or("", |(f, _)| f).to_string();
    let with_x: Vec<String> = files
        .iter()
        .filter(|f| {
            f.name
                .rsplit('/')
                .next()
                .is_some_and(|b| b.eq_ignore_ascii_case(X_NPY))
        })
        .map(|f| folder(&f.name))
        .collect();
    files.into_iter().partition(|f| {
        let base = f
            .name
            .rsplit('/')
            .next()
            .unwrap_or(&f.name)
            .to_ascii_lowercase();
        match LABELS.contains(&base.as_str()) {
            true => with_x.contains(&folder(&f.name)),
            false => is_embeddings_file(&base),
        }
    })
}

/// Whether a file is read by [`tasks_from_files`] (the page and the CLI pick files by this).
pub fn is_embeddings_file(base: &str) -> bool {
    let lower = base.to_ascii_lowercase();
    is_npz(&lower) || lower == X_NPY || LABELS.contains(&lower.as_str())
}

/// The extension of an embeddings archive (`X_train`, `y_train`, `X_test`, `y_test`): one task.
pub const NPZ_EXTENSION: &str = "npz";

fn is_npz(lower_name: &str) -> bool {
    lower_name
        .rsplit_once('.')
        .is_some_and(|(_, extension)| extension == NPZ_EXTENSION)
}
/// The embeddings matrix of a folder's `X.npy` + labels task, lower-cased.
pub const X_NPY: &str = "x.npy";

const LABELS: [&str; 4] = ["labels.csv", "labels.tsv", "labels.csv.gz", "labels.tsv.gz"];

/// The task's category: the GENEB catalogue's, the file's own, the caller's, else Uncategorized.
fn category_of(id: &str, own: Option<&str>, fallback: Option<&str>) -> String {
    crate::task::catalogue::category_of(id)
        .or(own)
        .or(fallback.map(str::trim).filter(|c| !c.is_empty()))
        .unwrap_or(UNCATEGORIZED)
        .to_string()
}

fn from_npz(file: &InputFile, category: Option<&str>) -> Result<EmbeddingsTask> {
    let arrays = npz::probe_arrays(&file.name, &file.bytes)?;
    let stem = file.name.rsplit('/').next().unwrap_or(&file.name);
    let stem = &stem[..stem.len() - ".npz".len()];
    let id = arrays.task.clone().unwrap_or_else(|| stem.to_string());
    let (x_train, x_test, stored_as) = match arrays.x {
        ProbeX::F32 { train, test } => (train, test, "float32"),
        ProbeX::F64 { train, test } => {
            (train.mapv(|v| v as f32), test.mapv(|v| v as f32), "float64")
        }
    };
    check_classes(&file.name, &arrays.labels, &arrays.y_train)?;
    Ok(EmbeddingsTask {
        task: Task {
            category: category_of(&id, arrays.category.as_deref(), category),
            id,
        },
        labels: arrays.labels,
        y_train: arrays.y_train,
        y_test: arrays.y_test,
        x_train,
        x_test,
        made_split: None,
        source: file.name.clone(),
        stored_as,
    })
}

/// The probe needs two classes in the training rows.
fn check_classes(source: &str, labels: &[String], y_train: &[usize]) -> Result<()> {
    let mut seen = vec![false; labels.len()];
    y_train.iter().for_each(|&y| seen[y] = true);
    if seen.iter().filter(|&&s| s).count() < 2 {
        return Err(Error::in_file(
            source,
            "the training rows have fewer than two classes; a probe needs at least two",
        ));
    }
    Ok(())
}

fn from_npy(
    folder: &str,
    x_file: &InputFile,
    labels_file: &InputFile,
    category: Option<&str>,
    settings: &SplitSettings,
) -> Result<Vec<EmbeddingsTask>> {
    let Some(id) = folder.rsplit('/').next().filter(|id| !id.is_empty()) else {
        return Err(Error::in_file(
            &x_file.name,
            "X.npy and labels.csv must be in a folder named after the task (my_task/X.npy)",
        ));
    };
    let array = npz::read_npy(&x_file.name, &x_file.bytes)?;
    let err = |m: String| Error::in_file(&x_file.name, m);
    let &[rows, cols] = array.shape.as_slice() else {
        return Err(err(format!(
            "X has {} dimension(s), expected 2 (rows × dimensions)",
            array.shape.len()
        )));
    };
    let (values, stored_as) = match array.values {
        NpyValues::F32(v) => (v, "float32"),
        NpyValues::F64(v) => (v.into_iter().map(|v| v as f32).collect(), "float64"),
        _ => return Err(err("X must be a float32 or float64 array".into())),
    };
    if let Some(at) = values.iter().position(|v| !v.is_finite()) {
        return Err(err(format!(
            "X[{}, {}] is not a finite number (NaN or infinity)",
            at / cols.max(1),
            at % cols.max(1)
        )));
    }
    let x = Array2::from_shape_vec((rows, cols), values).map_err(|e| err(e.to_string()))?;
    let tab = labels_file.name.to_ascii_lowercase().contains(".tsv");
    let table = crate::input::read_label_rows(
        &labels_file.name,
        &labels_file.bytes,
        tab,
        settings.group_column.as_deref(),
    )?;
    if table.labels.len() != rows {
        return Err(Error::in_file(
            &labels_file.name,
            format!(
                "{} data rows but {} has {rows} rows: row i of X must be data row i here",
                table.labels.len(),
                x_file.name
            ),
        ));
    }
    let (labels, y) = crate::input::label_indices(&table.labels);
    let sides: Vec<(split::Sides, Option<MadeSplit>)> = match &table.split {
        Some(parts) => {
            let (train, test): (Vec<usize>, Vec<usize>) =
                (0..rows).partition(|&r| parts[r] == crate::input::Part::Train);
            vec![(split::Sides { train, test }, None)]
        }
        None => split::make(
            &y,
            &labels,
            table.groups.as_deref(),
            settings,
            &labels_file.name,
        )?
        .into_iter()
        .map(|(sides, made)| (sides, Some(made)))
        .collect(),
    };
    let folds = sides.len();
    let category = category_of(id, None, category);
    let mut out = Vec::with_capacity(folds);
    for (i, (sides, made_split)) in sides.into_iter().enumerate() {
        if sides.test.is_empty() {
            return Err(Error::in_file(
                &labels_file.name,
                "no test rows: the split column says train for every row",
            ));
        }
        let pick = |rows: &[usize]| rows.iter().map(|&r| y[r]).collect::<Vec<_>>();
        let y_train = pick(&sides.train);
        check_classes(&labels_file.name, &labels, &y_train)?;
        out.push(EmbeddingsTask {
            task: Task {
                id: if folds > 1 {
                    split::fold_id(id, i + 1, folds)
                } else {
                    id.to_string()
                },
                category: category.clone(),
            },
            labels: labels.clone(),
            y_test: pick(&sides.test),
            y_train,
            x_train: x.select(Axis(0), &sides.train),
            x_test: x.select(Axis(0), &sides.test),
            made_split,
            source: format!("{folder}/"),
            stored_as,
        });
    }
    Ok(out)
}
