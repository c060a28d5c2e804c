//! The CLI's entry: a path on disk → `InputFile`s → tasks.

use super::layout::{KNOWN_LAYOUTS, Role, role_of};
use super::{InputFile, tasks_from_files_split};
use crate::input::split::SplitSettings;
use crate::task::TaskData;
use crate::{Error, Result};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Folder levels read below PATH: enough for Genomic Benchmarks' `PATH/<task>/train/<class>/1.txt`.
const MAX_DEPTH: usize = 3;

/// The tasks at `path`: a task table or FASTA file, a task folder (train/test pair, per-class
/// FASTA, Genomic Benchmarks, BED + FASTA), or a folder of those (plus `tasks.json`), read up to
/// three folder levels deep.
/// Errors name files by their path on disk.
pub fn tasks_from_path(path: &Path, category: Option<&str>) -> Result<Vec<TaskData>> {
    tasks_from_path_split(path, category, &SplitSettings::default())
}

/// As [`tasks_from_path`], splitting tables that have no split column as `split` says.
pub fn tasks_from_path_split(
    path: &Path,
    category: Option<&str>,
    split: &SplitSettings,
) -> Result<Vec<TaskData>> {
    let metadata = fs::metadata(path).map_err(|err| io_error(path, "cannot open", &err))?;
    // Names are relative to PATH's parent, so PATH's own folder name (a pair's task id) survives.
    let own_name = fs::canonicalize(path)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut files = Vec::new();
    let mut on_disk = HashMap::new();
    if metadata.is_dir() {
        collect(path, &own_name, 0, &mut files, &mut on_disk)?;
    } else {
        if let Ok(Role::PairPart { .. } | Role::FastaClass { .. } | Role::SequenceFile { .. }) =
            role_of(&own_name)
        {
            return Err(Error::in_file(
                path.display().to_string(),
                "this file is one split of a task: give the task's folder, which holds both train and test",
            ));
        }
        let bytes =
            crate::budget::read_file(path).map_err(|err| io_error(path, "cannot read", &err))?;
        on_disk.insert(own_name.clone(), path.to_path_buf());
        files.push(InputFile {
            name: own_name,
            bytes,
        });
    }
    if files.is_empty() {
        return Err(Error::in_file(
            path.display().to_string(),
            format!("no task data in this folder (read {MAX_DEPTH} levels deep); {KNOWN_LAYOUTS}"),
        ));
    }
    tasks_from_files_split(&files, category, split).map_err(|mut err| {
        // Errors about a split as a whole name its folder, `task/train/`.
        let real = err
            .file
            .as_ref()
            .and_then(|name| match name.strip_suffix('/') {
                Some(folder) => on_disk.get(folder).map(|p| format!("{}/", p.display())),
                None => on_disk.get(name).map(|p| p.display().to_string()),
            });
        if real.is_some() {
            err.file = real;
        }
        err
    })
}

fn io_error(path: &Path, what: &str, err: &std::io::Error) -> Error {
    Error::in_file(path.display().to_string(), format!("{what}: {err}"))
}

/// Reads the task files under `folder` (named `prefix/…`), skipping hidden entries and files
/// that are not task data, without reading them.
fn collect(
    folder: &Path,
    prefix: &str,
    depth: usize,
    files: &mut Vec<InputFile>,
    on_disk: &mut HashMap<String, PathBuf>,
) -> Result<()> {
    let entries =
        fs::read_dir(folder).map_err(|err| io_error(folder, "cannot list the folder", &err))?;
    let mut entries: Vec<PathBuf> = entries
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(|err| io_error(folder, "cannot list the folder", &err))?;
    entries.sort();
    for entry in entries {
        let Some(base) = entry.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if base.starts_with('.') {
            continue;
        }
        let name = if prefix.is_empty() {
            base
        } else {
            format!("{prefix}/{base}")
        };
        if entry.is_dir() {
            if depth < MAX_DEPTH {
                collect(&entry, &name, depth + 1, files, on_disk)?;
                on_disk.insert(name, entry);
            }
            continue;
        }
        match role_of(&name) {
            Ok(Role::Ignored) => continue,
            Ok(_) => {}
            Err(err) => {
                return Err(Error {
                    file: Some(entry.display().to_string()),
                    ..err
                });
            }
        }
        let bytes = crate::budget::read_file(&entry)
            .map_err(|err| io_error(&entry, "cannot read", &err))?;
        on_disk.insert(name.clone(), entry);
        files.push(InputFile { name, bytes });
    }
    Ok(())
}
