//! Official GENEB tasks from the hub: which files a set of catalogue tasks needs, what must
//! be downloaded (and how big it is) before anything is, then the download and the read.

use crate::hub::{Hub, HubFile, Located, Progress};
use crate::input::tasks_from_path;
use crate::task::TaskData;
use crate::task::catalogue::CatalogueTask;
use crate::{Error, Result};

/// One table of one task and where it can be had.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    pub task_id: String,
    pub file: HubFile,
    pub located: Located,
}

/// The hub files of a catalogue task: its train and test tables at the pinned revision.
pub fn hub_files(task: &CatalogueTask) -> [HubFile; 2] {
    [&task.files.train, &task.files.test]
        .map(|path| HubFile::dataset(&task.hf_dataset, &task.revision, path))
}

/// Where every table of `tasks` can be had, asking the hub (HEAD only) for those not cached.
pub fn plan(hub: &Hub, tasks: &[&CatalogueTask]) -> Result<Vec<PlannedFile>> {
    let mut planned = Vec::new();
    for task in tasks {
        for file in hub_files(task) {
            let located = hub.locate(&file)?;
            planned.push(PlannedFile {
                task_id: task.id.clone(),
                file,
                located,
            });
        }
    }
    Ok(planned)
}

/// Bytes still to download: the sum of the known sizes, and whether some size is unknown.
pub fn download_size(planned: &[PlannedFile]) -> (u64, bool) {
    planned
        .iter()
        .filter_map(|p| match &p.located {
            Located::Remote(remote) => Some(remote.size),
            Located::Cached { .. } => None,
        })
        .fold((0, false), |(sum, unknown), size| match size {
            Some(bytes) => (sum + bytes, unknown),
            None => (sum, true),
        })
}

/// Downloads what `planned` says is remote; `on_progress` gets each file and its bytes.
pub fn download(
    hub: &Hub,
    planned: &[PlannedFile],
    on_progress: &mut dyn FnMut(&HubFile, Progress),
) -> Result<()> {
    for item in planned {
        if let Located::Remote(remote) = &item.located {
            hub.download(&item.file, remote, &mut |p| on_progress(&item.file, p))?;
        }
    }
    Ok(())
}

/// Reads a catalogue task from the cache (after [`download`]); its category is the catalogue's.
pub fn load(hub: &Hub, task: &CatalogueTask) -> Result<TaskData> {
    let [train, _] = hub_files(task);
    let train_path = hub.cache_path(&train);
    let folder = train_path
        .parent()
        .ok_or_else(|| Error::new(format!("{}: no cache folder", task.id)))?;
    let mut found = tasks_from_path(folder, Some(&task.category))?;
    match (found.pop(), found.is_empty()) {
        (Some(data), true) if data.task.id == task.id => Ok(data),
        _ => Err(Error::in_file(
            folder.display().to_string(),
            format!(
                "expected exactly the task {} (train.csv + test.csv) in this cache folder; delete the folder and fetch again",
                task.id
            ),
        )),
    }
}
