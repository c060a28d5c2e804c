//! Which files make which task: file and folder names → roles → tasks, and `tasks.json`.

use super::InputFile;
use super::dataset::{Collector, Part};
use super::fasta::{FastaLayout, read_fasta};
use super::import::{Reference, read_bed, read_sequence_file};
use super::table::{TableKind, group_candidates, read_table};
use super::text::{quote, read_to_string};
use crate::input::split::SplitSettings;
use crate::protocol::UNCATEGORIZED;
use crate::task::{Task, TaskData, catalogue};
use crate::{Error, Result};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

/// What one file is, from its name alone.
#[derive(Debug)]
pub(crate) enum Role<'n> {
    Manifest,
    /// (a) a GENEB task table; the id is the file stem.
    Table {
        id: &'n str,
        tab: bool,
    },
    /// (c) FASTA with `split=` in the headers; the id is the file stem.
    FastaTask {
        id: &'n str,
    },
    /// (b) `train.*` / `test.*` of the task named by `folder`'s last component.
    PairPart {
        folder: Vec<&'n str>,
        part: Part,
        format: Format,
    },
    /// (c) `train/<class>.fa` / `test/<class>.fa` of the task named by `folder`'s last component.
    FastaClass {
        folder: Vec<&'n str>,
        part: Part,
        class: &'n str,
    },
    /// Genomic Benchmarks: `train/<class>/<n>.txt` of the task named by `folder`'s last
    /// component, one sequence per file.
    SequenceFile {
        folder: Vec<&'n str>,
        part: Part,
        class: &'n str,
    },
    /// A BED task (regions, labels, splits); the FASTA files beside it are its reference.
    Bed {
        folder: Vec<&'n str>,
        id: &'n str,
    },
    /// Not task data (unknown extension, hidden file, a dev/validation split GENEB doesn't use).
    Ignored,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Format {
    Table { tab: bool },
    Fasta,
}

/// A suite's manifest: its tasks' ids, files and categories.
pub const MANIFEST: &str = "tasks.json";
/// The one compression the readers undo, as a file's last extension.
pub const COMPRESSION: &str = "gz";
/// The extensions of the files `role_of` gives a role, each also compressed (`.csv.gz`): the
/// page keeps a dropped folder's files by them (src/facts.rs).
pub const TASK_EXTENSIONS: [&str; 8] =
    ["csv", "tsv", "parquet", "fa", "fasta", "fna", "bed", "txt"];
/// Of those, the tables: the only task files that can lack a split column (the page asks the
/// core about these alone).
pub const TABLE_EXTENSIONS: [&str; 3] = ["csv", "tsv", "parquet"];
/// What geneb reads, for the errors that find nothing it recognises.
pub(crate) const KNOWN_LAYOUTS: &str = "geneb reads task tables (.csv or .tsv with columns text, \
     label, split), train.csv + test.csv in a folder named after the task (GUE, NT), FASTA (.fa, \
     .fasta, .fna), Genomic Benchmarks folders (task/train/<class>/*.txt) and a BED file with its \
     reference FASTA, each optionally gzip-compressed (.gz)";
const FASTA_EXTENSIONS: [&str; 3] = ["fa", "fasta", "fna"];
const OTHER_COMPRESSIONS: [&str; 5] = ["bz2", "xz", "zip", "zst", "7z"];
/// Splits some datasets ship that GENEB doesn't use; their files are skipped, not errors.
const UNUSED_SPLITS: [&str; 4] = ["dev", "val", "valid", "validation"];

fn strip_suffix_ignore_case<'s>(text: &'s str, suffix: &str) -> Option<&'s str> {
    let cut = text.len().checked_sub(suffix.len())?;
    (text.is_char_boundary(cut) && text[cut..].eq_ignore_ascii_case(suffix)).then(|| &text[..cut])
}

/// `stem.ext` with `ext` lower-cased; `None` without an extension.
fn stem_and_extension(base: &str) -> Option<(&str, String)> {
    let (stem, extension) = base.rsplit_once('.')?;
    (!stem.is_empty()).then(|| (stem, extension.to_ascii_lowercase()))
}

fn is_data_extension(extension: &str) -> bool {
    matches!(extension, "csv" | "tsv" | "parquet" | "bed") || FASTA_EXTENSIONS.contains(&extension)
}

fn is_unused_split(name: &str) -> bool {
    UNUSED_SPLITS.iter().any(|s| name.eq_ignore_ascii_case(s))
}

/// A name's folder components and base name; `/` and `\` both separate folders.
fn components(name: &str) -> Vec<&str> {
    name.split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// The role of a file, from its name (`folder/…/base`). Errors only for a data file
/// compressed with something other than gzip.
pub(crate) fn role_of(name: &str) -> Result<Role<'_>> {
    let parts = components(name);
    let Some((&base, folder)) = parts.split_last() else {
        return Ok(Role::Ignored);
    };
    if base.starts_with('.') {
        return Ok(Role::Ignored);
    }
    if base.eq_ignore_ascii_case(MANIFEST) {
        return Ok(Role::Manifest);
    }
    let inner = strip_suffix_ignore_case(base, &format!(".{COMPRESSION}")).unwrap_or(base);
    let Some((stem, extension)) = stem_and_extension(inner) else {
        return Ok(Role::Ignored);
    };
    if OTHER_COMPRESSIONS.contains(&extension.as_str()) {
        return match stem_and_extension(stem) {
            Some((_, inner_extension)) if is_data_extension(&inner_extension) => {
                Err(Error::in_file(
                    name,
                    format!(
                        "compressed as .{extension}; geneb reads plain or gzip (.gz) files: decompress it first"
                    ),
                ))
            }
            _ => Ok(Role::Ignored),
        };
    }
    match extension.as_str() {
        // Genomic Benchmarks' one-sequence files live in `<task>/<split>/<class>/`.
        "txt" => {
            return Ok(match folder {
                [task @ .., split, class] if !task.is_empty() => match Part::parse(split) {
                    Some(part) => Role::SequenceFile {
                        folder: task.to_vec(),
                        part,
                        class,
                    },
                    None => Role::Ignored,
                },
                _ => Role::Ignored,
            });
        }
        "bed" => {
            return Ok(Role::Bed {
                folder: folder.to_vec(),
                id: stem,
            });
        }
        _ => {}
    }
    let (stem, format) = match extension.as_str() {
        "csv" => (stem, Format::Table { tab: false }),
        // The hub names a dataset's single shard `train-00000-of-00001.parquet`.
        "parquet" => (hub_shard_part(stem), Format::Table { tab: false }),
        "tsv" => (stem, Format::Table { tab: true }),
        e if FASTA_EXTENSIONS.contains(&e) => (stem, Format::Fasta),
        _ => return Ok(Role::Ignored),
    };
    if is_unused_split(stem) {
        return Ok(Role::Ignored);
    }
    if let Some(part) = Part::parse(stem) {
        return Ok(Role::PairPart {
            folder: folder.to_vec(),
            part,
            format,
        });
    }
    Ok(match format {
        Format::Table { tab } => Role::Table { id: stem, tab },
        Format::Fasta => match folder.split_last() {
            Some((&parent, task_folder)) => match Part::parse(parent) {
                Some(part) => Role::FastaClass {
                    folder: task_folder.to_vec(),
                    part,
                    class: stem,
                },
                None if is_unused_split(parent) => Role::Ignored,
                None => Role::FastaTask { id: stem },
            },
            None => Role::FastaTask { id: stem },
        },
    })
}

/// `train` of the hub's shard name `train-00000-of-00001`; any other stem as it is.
fn hub_shard_part(stem: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match stem.rsplitn(4, '-').collect::<Vec<_>>().as_slice() {
        [total, "of", index, part] if digits(total) && digits(index) => part,
        _ => stem,
    }
}

/// One file of a task folder's split.
struct Member<'f> {
    file: &'f InputFile,
    layout: MemberLayout<'f>,
}

enum MemberLayout<'n> {
    Whole(Format),
    Class(&'n str),
    /// One sequence of this class (Genomic Benchmarks).
    Sequence(&'n str),
}

/// The train and test files of one task folder.
#[derive(Default)]
struct FolderParts<'f> {
    train: Vec<Member<'f>>,
    test: Vec<Member<'f>>,
}

/// Where a task's data is.
enum Source<'f> {
    Table {
        file: &'f InputFile,
        tab: bool,
    },
    FastaTask(&'f InputFile),
    Bed {
        bed: &'f InputFile,
        references: Vec<&'f InputFile>,
    },
    Folder {
        folder: String,
        parts: FolderParts<'f>,
    },
}

impl Source<'_> {
    /// How an error about two tasks with one id names this one.
    fn origin(&self) -> String {
        match self {
            Source::Table { file, .. }
            | Source::FastaTask(file)
            | Source::Bed { bed: file, .. } => file.name.clone(),
            Source::Folder { folder, .. } => format!("{folder}/"),
        }
    }

    /// The file such an error points to.
    fn first_file(&self) -> &str {
        match self {
            Source::Table { file, .. }
            | Source::FastaTask(file)
            | Source::Bed { bed: file, .. } => &file.name,
            Source::Folder { parts, .. } => parts
                .train
                .first()
                .map(|m| m.file.name.as_str())
                .unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
struct Manifest {
    tasks: Vec<ManifestTask>,
}

#[derive(Deserialize)]
struct ManifestTask {
    id: String,
    /// `cat` is the spelling of the published task list, so it works as a manifest too.
    #[serde(default, alias = "cat")]
    category: Option<String>,
}

/// Task id → category from every `tasks.json` among the files.
fn read_manifests(files: &[&InputFile]) -> Result<HashMap<String, String>> {
    let mut categories: HashMap<String, (String, &str)> = HashMap::new();
    for file in files {
        let text = read_to_string(&file.name, &file.bytes)?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|err| {
            let message = format!(
                "not a valid tasks.json ({err}); expected {{\"tasks\": [{{\"id\": \"…\", \"category\": \"…\"}}]}}"
            );
            match err.line() {
                0 => Error::in_file(&file.name, message),
                line => Error::at_line(&file.name, line, message),
            }
        })?;
        for task in manifest.tasks {
            let Some(category) = task
                .category
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
            else {
                continue;
            };
            if let Some((earlier, earlier_file)) = categories.get(&task.id)
                && *earlier != category
            {
                return Err(Error::in_file(
                    &file.name,
                    format!(
                        "task {} has category {} here but {} in {earlier_file}",
                        quote(&task.id),
                        quote(&category),
                        quote(earlier)
                    ),
                ));
            }
            categories.insert(task.id, (category, &file.name));
        }
    }
    Ok(categories
        .into_iter()
        .map(|(id, (category, _))| (id, category))
        .collect())
}

/// Checks a folder's train/test members and turns them into a task source keyed by its id.
fn folder_source<'f>(folder: &[&str], mut parts: FolderParts<'f>) -> Result<(String, Source<'f>)> {
    // Class files in name order, whatever order the files were dropped in.
    parts.train.sort_by(|a, b| a.file.name.cmp(&b.file.name));
    parts.test.sort_by(|a, b| a.file.name.cmp(&b.file.name));
    let any = parts
        .train
        .first()
        .or(parts.test.first())
        .map(|m| m.file.name.as_str())
        .unwrap_or_default();
    let Some(&id) = folder.last() else {
        return Err(Error::in_file(
            any,
            "train and test files must be inside a folder named after the task (my_task/train.csv, \
             my_task/test.csv; the folder name is the task id), or put all rows in one table with a \
             split column (my_task.csv)",
        ));
    };
    let folder = folder.join("/");
    for (part, members, other) in [
        (Part::Train, &parts.train, &parts.test),
        (Part::Test, &parts.test, &parts.train),
    ] {
        if members.is_empty() {
            return Err(Error::in_file(
                other.first().map(|m| m.file.name.as_str()).unwrap_or(any),
                format!(
                    "no {0} split beside this file: task {1} needs {0}.csv (or {0}.fa, or {0}/<class>.fa) in {folder}/",
                    part.name(),
                    quote(id)
                ),
            ));
        }
        let whole = members
            .iter()
            .any(|m| matches!(m.layout, MemberLayout::Whole(_)));
        if whole && members.len() > 1 {
            return Err(Error::in_file(
                &members[1].file.name,
                format!(
                    "task {} has more than one {} set: {} and {}; keep one",
                    quote(id),
                    part.name(),
                    members[0].file.name,
                    members[1].file.name
                ),
            ));
        }
        let mut classes: Vec<(&str, &str)> = members
            .iter()
            .filter_map(|m| match m.layout {
                MemberLayout::Class(class) => Some((class, m.file.name.as_str())),
                MemberLayout::Whole(_) | MemberLayout::Sequence(_) => None,
            })
            .collect();
        classes.sort();
        if let Some(pair) = classes.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            return Err(Error::in_file(
                pair[1].1,
                format!(
                    "class {} has two files: {} and {}; keep one",
                    quote(pair[0].0),
                    pair[0].1,
                    pair[1].1
                ),
            ));
        }
    }
    Ok((id.to_string(), Source::Folder { folder, parts }))
}

fn read_member(member: &Member<'_>, part: Part, collector: &mut Collector) -> Result<()> {
    let (name, bytes) = (member.file.name.as_str(), member.file.bytes.as_slice());
    match member.layout {
        MemberLayout::Whole(Format::Table { tab }) => {
            read_table(name, bytes, TableKind::Part(part), tab, collector)
        }
        MemberLayout::Whole(Format::Fasta) => {
            read_fasta(name, bytes, FastaLayout::Part(part), collector)
        }
        MemberLayout::Class(class) => {
            read_fasta(name, bytes, FastaLayout::Class(part, class), collector)
        }
        MemberLayout::Sequence(class) => read_sequence_file(name, bytes, part, class, collector),
    }
}

/// What errors about a split as a whole (no rows, one class) point to.
fn split_source(folder: &str, members: &[Member<'_>], part: Part) -> String {
    match members {
        [only] if matches!(only.layout, MemberLayout::Whole(_)) => only.file.name.clone(),
        _ => format!("{folder}/{}/", part.name()),
    }
}

/// The source's dataset, or one per fold when geneb splits it into folds.
fn read_source(source: &Source<'_>, split: &SplitSettings) -> Result<Vec<crate::task::Dataset>> {
    let mut collector = Collector::default();
    match source {
        Source::Table { file, tab } => {
            let kind = TableKind::Geneb {
                group_column: split.group_column.as_deref(),
            };
            read_table(&file.name, &file.bytes, kind, *tab, &mut collector)?;
            collector.finish(&file.name, &file.name, split)
        }
        Source::FastaTask(file) => {
            read_fasta(
                &file.name,
                &file.bytes,
                FastaLayout::SplitInHeaders,
                &mut collector,
            )?;
            collector.finish(&file.name, &file.name, split)
        }
        Source::Bed { bed, references } => {
            let files: Vec<(&str, &[u8])> = references
                .iter()
                .map(|f| (f.name.as_str(), f.bytes.as_slice()))
                .collect();
            read_bed(
                &bed.name,
                &bed.bytes,
                &Reference::read(&files)?,
                &mut collector,
            )?;
            collector.finish(&bed.name, &bed.name, split)
        }
        Source::Folder { folder, parts } => {
            for member in &parts.train {
                read_member(member, Part::Train, &mut collector)?;
            }
            for member in &parts.test {
                read_member(member, Part::Test, &mut collector)?;
            }
            collector.finish(
                &split_source(folder, &parts.train, Part::Train),
                &split_source(folder, &parts.test, Part::Test),
                split,
            )
        }
    }
}

/// Files the task folder `folder` holds for split `part`.
fn add_member<'f>(
    folders: &mut BTreeMap<Vec<&'f str>, FolderParts<'f>>,
    folder: Vec<&'f str>,
    part: Part,
    file: &'f InputFile,
    layout: MemberLayout<'f>,
) {
    let parts = folders.entry(folder).or_default();
    let member = Member { file, layout };
    match part {
        Part::Train => parts.train.push(member),
        Part::Test => parts.test.push(member),
    }
}

pub(crate) fn tasks_from_files(
    files: &[InputFile],
    category: Option<&str>,
    split: &SplitSettings,
) -> Result<Vec<TaskData>> {
    split.check()?;
    if files.is_empty() {
        return Err(Error::new("no files given"));
    }
    let mut manifests = Vec::new();
    let mut ignored = Vec::new();
    let mut sources: Vec<(String, Source<'_>)> = Vec::new();
    let mut folders: BTreeMap<Vec<&str>, FolderParts<'_>> = BTreeMap::new();
    let mut beds = Vec::new();
    let mut fasta_tasks = Vec::new();
    for file in files {
        match role_of(&file.name)? {
            Role::Manifest => manifests.push(file),
            Role::Ignored => ignored.push(file.name.as_str()),
            Role::Table { id, tab } => sources.push((id.to_string(), Source::Table { file, tab })),
            Role::FastaTask { id } => fasta_tasks.push((id, file)),
            Role::Bed { folder, id } => beds.push((folder, id, file)),
            Role::PairPart {
                folder,
                part,
                format,
            } => add_member(
                &mut folders,
                folder,
                part,
                file,
                MemberLayout::Whole(format),
            ),
            Role::FastaClass {
                folder,
                part,
                class,
            } => add_member(&mut folders, folder, part, file, MemberLayout::Class(class)),
            Role::SequenceFile {
                folder,
                part,
                class,
            } => add_member(
                &mut folders,
                folder,
                part,
                file,
                MemberLayout::Sequence(class),
            ),
        }
    }
    // A FASTA file beside a BED file is that BED task's reference genome, not a task.
    let mut references: BTreeMap<Vec<&str>, Vec<&InputFile>> = BTreeMap::new();
    for (id, file) in fasta_tasks {
        let parts = components(&file.name);
        let folder = parts[..parts.len() - 1].to_vec();
        if beds.iter().any(|(bed_folder, _, _)| *bed_folder == folder) {
            references.entry(folder).or_default().push(file);
        } else {
            sources.push((id.to_string(), Source::FastaTask(file)));
        }
    }
    for (folder, id, bed) in beds {
        let Some(references) = references.get(&folder) else {
            return Err(Error::in_file(
                &bed.name,
                "no reference FASTA beside this BED file: put the genome (.fa, .fasta or .fna, optionally .gz) in the same folder",
            ));
        };
        sources.push((
            id.to_string(),
            Source::Bed {
                bed,
                references: references.clone(),
            },
        ));
    }
    for (folder, parts) in folders {
        sources.push(folder_source(&folder, parts)?);
    }
    if sources.is_empty() {
        let shown: Vec<&str> = ignored.iter().take(5).copied().collect();
        let more = if ignored.len() > 5 { ", …" } else { "" };
        return Err(Error::new(format!(
            "no task data among the files ({}{more}); {KNOWN_LAYOUTS}",
            shown.join(", ")
        )));
    }
    let mut by_id: BTreeMap<String, Source<'_>> = BTreeMap::new();
    for (id, source) in sources {
        if let Some(first) = by_id.get(&id) {
            return Err(Error::in_file(
                source.first_file(),
                format!(
                    "task id {} is given twice, by {} and by {}; rename one",
                    quote(&id),
                    first.origin(),
                    source.origin()
                ),
            ));
        }
        by_id.insert(id, source);
    }
    manifests.sort_by(|a, b| a.name.cmp(&b.name));
    let manifest = read_manifests(&manifests)?;
    let category = category.map(str::trim).filter(|c| !c.is_empty());
    let mut tasks = Vec::with_capacity(by_id.len());
    for (id, source) in by_id {
        let category = catalogue::category_of(&id)
            .or(manifest.get(&id).map(String::as_str))
            .or(category)
            .unwrap_or(UNCATEGORIZED)
            .to_string();
        let datasets = read_source(&source, split)?;
        let folds = datasets.len();
        for (i, data) in datasets.into_iter().enumerate() {
            // The folds of a k-fold task are evaluated as tasks of their own, then merged.
            let id = if folds > 1 {
                crate::input::split::fold_id(&id, i + 1, folds)
            } else {
                id.clone()
            };
            let category = category.clone();
            tasks.push(TaskData {
                task: Task { id, category },
                data,
            });
        }
    }
    Ok(tasks)
}

/// A task table among `files` that has no split column, so geneb splits it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnsplitTable {
    pub file: String,
    pub task: String,
    /// The columns that could hold each row's group (all but the sequence and label).
    pub columns: Vec<String>,
}

/// The task tables among `files` without a split column (the page offers their columns as the
/// group column).
pub(crate) fn unsplit_tables(files: &[InputFile]) -> Result<Vec<UnsplitTable>> {
    let mut out = Vec::new();
    for file in files {
        if let Role::Table { id, tab } = role_of(&file.name)?
            && let Some(columns) = group_candidates(&file.name, &file.bytes, tab)?
        {
            out.push(UnsplitTable {
                file: file.name.clone(),
                task: id.to_string(),
                columns,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TASK_EXTENSIONS is what the page keeps of a dropped folder: every extension it lists
    /// must have a reader here, plain and compressed, and an extension it omits none.
    #[test]
    fn the_listed_extensions_are_the_ones_read() {
        let read = |name: &str| !matches!(role_of(name), Ok(Role::Ignored));
        for extension in TASK_EXTENSIONS {
            // `.txt` is read only as a Genomic Benchmarks file, `<task>/<split>/<class>/<n>.txt`.
            let name = format!("task/train/0/1.{extension}");
            assert!(read(&name), "{name}");
            assert!(
                read(&format!("{name}.{COMPRESSION}")),
                "{name}.{COMPRESSION}"
            );
        }
        for other in ["json", "npy", "md", "xlsx"] {
            assert!(!read(&format!("task/train/0/1.{other}")), "{other}");
        }
        assert!(matches!(role_of(MANIFEST), Ok(Role::Manifest)));
        for extension in TASK_EXTENSIONS {
            let table = matches!(
                role_of(&format!("t/train.{extension}")),
                Ok(Role::PairPart {
                    format: Format::Table { .. },
                    ..
                })
            );
            assert_eq!(table, TABLE_EXTENSIONS.contains(&extension), "{extension}");
        }
    }
}
