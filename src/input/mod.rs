//! Reading and validating the user's task data: GENEB tables, train/test pairs, FASTA, `.gz`.
//!
//! Files are recognised by name (`.gz` is detected by its magic bytes, whatever the name):
//!
//! - **Task table** `<task>.csv` / `<task>.tsv`: a header with the columns `text` (or
//!   `sequence`), `label` and `split` (`train` or `test`), in any order; other columns are
//!   ignored. Task id = the file stem. TSV by extension, or when the header has tabs and no
//!   commas. RFC 4180 quotes, CRLF and a UTF-8 BOM are fine. Without a `split` column geneb
//!   splits the rows (`crate::input::split`), keeping the groups of a named group column apart.
//! - **Train/test pair** `<task>/train.csv` + `<task>/test.csv` (columns `text` or `sequence`,
//!   and `label`): one task, id = the folder name. `dev`, `val`, `valid` and `validation`
//!   files are skipped: GENEB uses only train and test.
//! - **FASTA** (`.fa`, `.fasta`, `.fna`): headers `>id label=<class> split=<train|test>`
//!   (other words are ignored; the sequence may span lines). Three layouts say the split:
//!   - `<task>/train.fa` + `<task>/test.fa`: the file name; labels in the headers;
//!   - `<task>/train/<class>.fa` + `<task>/test/<class>.fa`: one file per class, the class is
//!     the file stem, headers need no `label=`;
//!   - any other `<task>.fa`: `split=` and `label=` in every header; id = the file stem.
//!
//!   A `split=` or `label=` in a header must agree with what the file name says.
//! - **Genomic Benchmarks** `<task>/train/<class>/<n>.txt` (and `test/`): one sequence per
//!   file, the class folder names the label (see `import`).
//! - **BED + FASTA** `<task>/<name>.bed` beside a reference `<genome>.fa`: regions with `label`
//!   and `split` columns in a named header; FASTA files beside a BED file are its reference,
//!   not tasks (see `import` for the columns).
//! - GUE and NT downstream exports (`train.csv`/`dev.csv`/`test.csv`, `sequence,label`) are
//!   train/test pairs.
//! - **Parquet** (`.parquet`, the hub's dataset format): a table or a pair part like a `.csv`,
//!   read as the CSV it holds (`parquet`); a hub shard name `train-00000-of-00001.parquet` is
//!   the `train` part.
//! - **`tasks.json`** (optional): `{"tasks": [{"id": …, "category": …}]}` (or `"cat"`, as in
//!   the published GENEB task list) gives the category of the user's own tasks. A task's category
//!   is the GENEB catalogue's when it knows the id, else the manifest's, else the one the caller
//!   names, else `Uncategorized`.
//!
//! Other files (unknown extensions, hidden files) are skipped. Sequences are upper-cased, IUPAC
//! ambiguity codes become `N` and `U` becomes `T`; any other character is an error naming the
//! file, line and column. Labels are any non-empty text, ordered like numpy's `unique`: numeric
//! when every label is an integer (then `1` and `01` are one class, as in a numeric column),
//! else by code point. Every error names the file and, where there is one, the 1-based line.

pub mod audit;
mod dataset;
pub mod embeddings;
mod fasta;
mod import;
mod layout;
pub mod npz;
mod parquet;
#[cfg(not(target_arch = "wasm32"))]
mod path;
mod sequences;
pub mod split;
mod table;
mod text;

use crate::input::split::SplitSettings;
use crate::task::TaskData;
use crate::{Error, Result};

pub use layout::{COMPRESSION, MANIFEST, TABLE_EXTENSIONS, TASK_EXTENSIONS, UnsplitTable};
#[cfg(not(target_arch = "wasm32"))]
pub use path::{tasks_from_path, tasks_from_path_split};
pub use sequences::{NamedSequence, read_sequences};

/// A file as the user gave it: a path relative to what they chose (CLI) or a dropped file's
/// name with its folder (page), and its raw bytes (maybe gzip).
#[derive(Debug, Clone)]
pub struct InputFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The tasks in `files`, sorted by id. `category` is the category of tasks that neither the
/// GENEB catalogue nor a `tasks.json` among the files names.
pub fn tasks_from_files(files: &[InputFile], category: Option<&str>) -> Result<Vec<TaskData>> {
    layout::tasks_from_files(files, category, &SplitSettings::default())
}

/// As [`tasks_from_files`], splitting tables that have no split column as `split` says (a
/// k-fold task comes as one task per fold, see `crate::input::split`).
pub fn tasks_from_files_split(
    files: &[InputFile],
    category: Option<&str>,
    split: &SplitSettings,
) -> Result<Vec<TaskData>> {
    layout::tasks_from_files(files, category, split)
}

pub(crate) use dataset::Part;
pub(crate) use table::read_label_rows;

/// The task tables among `files` that have no split column, with the columns that could group
/// their rows.
pub fn unsplit_tables(files: &[InputFile]) -> Result<Vec<UnsplitTable>> {
    layout::unsplit_tables(files)
}

/// One sequence given directly (the page's embed call): upper-cased, IUPAC codes → `N`,
/// `U` → `T`; the error gives the offending character and its 1-based position.
pub fn normalize_sequence(raw: &str) -> Result<String> {
    dataset::normalize_sequence(raw)
}

/// Labels in numpy `unique` order (numeric when all are integers, else by code point) and each
/// label's index into that order: the `y` a `Dataset` would hold.
pub fn label_indices(labels: &[String]) -> (Vec<String>, Vec<usize>) {
    dataset::label_indices(labels)
}

/// A label file: one label per line, in train order (for `geneb fewshot --labels`). Blank
/// lines are allowed only at the end.
pub fn read_labels(file: &InputFile) -> Result<Vec<String>> {
    let mut lines = text::Lines::new(&file.name, &file.bytes)?;
    let mut labels = Vec::new();
    let mut first_blank = None;
    while let Some(line) = lines.next_line()? {
        let label = line.text.trim();
        if label.is_empty() {
            first_blank.get_or_insert(line.number);
            continue;
        }
        if let Some(blank) = first_blank {
            return Err(Error::at_line(
                &file.name,
                blank,
                "empty line: every line must hold one label, in the order of the train rows",
            ));
        }
        labels.push(label.to_string());
    }
    if labels.is_empty() {
        return Err(Error::in_file(
            &file.name,
            "no labels: the file has only blank lines",
        ));
    }
    Ok(labels)
}
