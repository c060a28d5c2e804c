//! The official task catalogue (metadata validation) and the importers for layouts users
//! already have on disk (Genomic Benchmarks, GUE, NT downstream CSV, BED + FASTA).

use geneb::protocol::CATEGORIES;
use geneb::task::catalogue::{self, CatalogueTask};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A field that is null must say why, in its provenance, as "unknown: …".
fn check_known(task: &CatalogueTask, field: &str, present: bool) {
    let basis = task
        .provenance
        .get(field)
        .unwrap_or_else(|| panic!("{}: no provenance for {field}", task.id));
    assert!(
        !basis.trim().is_empty(),
        "{}: empty provenance for {field}",
        task.id
    );
    if !present {
        assert!(
            basis.starts_with("unknown: ") && basis.len() > "unknown: ".len() + 10,
            "{}: {field} is null without a reason: {basis}",
            task.id
        );
    }
}

#[test]
fn catalogue_has_the_published_100_tasks_complete_and_in_13_categories() {
    let tasks = catalogue::tasks();
    assert_eq!(tasks.len(), 100);
    let ids: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids.len(), 100, "task ids are unique");
    assert_eq!(catalogue::catalogue().categories, CATEGORIES);
    let counts: Vec<usize> = CATEGORIES
        .iter()
        .map(|c| tasks.iter().filter(|t| t.category == *c).count())
        .collect();
    // PROTOCOL.md: Histone Mod. 30 · Promoters 22 · Enhancers 8 · DNA Methyl. 8 · Splice Sites 7
    // · lncRNA 6 · Mouse Enh. 5 · TF Binding 5 · Species Clf. 3 · Regulatory 2 · Virus/Phage 2
    // · Coding/NC 1 · Chromatin Acc. 1.
    assert_eq!(counts, [30, 22, 8, 8, 7, 6, 5, 5, 3, 2, 2, 1, 1]);

    // The records agree with the published list they were built from, id by id.
    let published: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("tasks/geneb-tasks.json")).unwrap())
            .unwrap();
    let published = published["tasks"].as_array().unwrap();
    assert_eq!(published.len(), tasks.len());
    for (record, listed) in tasks.iter().zip(published) {
        assert_eq!(record.id, listed["id"]);
        assert_eq!(record.label, listed["label"]);
        assert_eq!(record.category, listed["cat"]);
    }

    for task in tasks {
        for (field, text) in [
            ("label", &task.label),
            ("source", &task.source),
            ("source_dataset", &task.source_dataset),
            ("citation", &task.citation),
        ] {
            assert!(!text.trim().is_empty(), "{}: empty {field}", task.id);
        }
        assert_eq!(task.hf_dataset, "darlednik/geneb-tasks");
        assert_eq!(task.revision, "4edd705be573e48c585c2cf79dc320f9f43c7b04");
        assert_eq!(task.files.train, format!("tasks/{}/train.csv", task.id));
        assert_eq!(task.files.test, format!("tasks/{}/test.csv", task.id));
        if let Some(n) = task.n_classes {
            assert!((2..=20).contains(&n), "{}: n_classes {n}", task.id);
        }
        check_known(task, "species", task.species.is_some());
        check_known(task, "n_classes", task.n_classes.is_some());
        check_known(task, "licence", task.licence.is_some());
        for field in [
            "id_label_category",
            "source",
            "source_dataset",
            "files",
            "citation",
        ] {
            check_known(task, field, true);
        }
    }

    // geneb-lite: one task from every category.
    let lite = catalogue::suite("geneb-lite").unwrap();
    let lite_categories: Vec<&str> = lite.iter().map(|t| t.category.as_str()).collect();
    assert_eq!(lite_categories, CATEGORIES);
}

use geneb::input::tasks_from_path;
use geneb::task::TaskData;

fn only_task(path: &Path) -> TaskData {
    let mut tasks = tasks_from_path(path, None).unwrap();
    assert_eq!(tasks.len(), 1, "{}", path.display());
    tasks.remove(0)
}

/// (label, sequence) rows of a split.
fn rows(task: &TaskData, test: bool) -> Vec<(String, String)> {
    let split = if test {
        &task.data.test
    } else {
        &task.data.train
    };
    split
        .sequences
        .iter()
        .zip(&split.y)
        .map(|(s, &y)| (task.data.labels[y].clone(), s.clone()))
        .collect()
}

fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn genomic_benchmarks_folders_read_one_sequence_per_file() {
    let root = repo("tests/fixtures/import/genomic_benchmarks");
    // The task folder itself, or the folder of datasets above it (three levels down).
    for path in [root.join("demo_tiny"), root.clone()] {
        let task = only_task(&path);
        assert_eq!(task.task.id, "demo_tiny");
        assert_eq!(task.data.labels, ["negative", "positive"]);
        assert_eq!((task.data.train.len(), task.data.test.len()), (6, 4));
        let train = rows(&task, false);
        assert!(train.contains(&(
            "positive".into(),
            "TTTCAAGTTCTTCTTTTTATTTATTATTAAGCTTATTTTAATTCTTAGATCGTTGTCACT".into()
        )));
        // 2.txt.gz is read through gzip like the plain files.
        assert_eq!(train.iter().filter(|(l, _)| l == "positive").count(), 3);
    }
}

#[test]
fn gue_and_nt_csv_folders_are_train_test_pairs_and_dev_is_not_read() {
    // dev.csv holds a row that is not a sequence: reading it would fail the import.
    let gue = only_task(&repo("tests/fixtures/import/gue/prom_tiny"));
    assert_eq!(gue.task.id, "prom_tiny");
    assert_eq!((gue.data.train.len(), gue.data.test.len()), (8, 4));
    assert_eq!(gue.data.labels, ["0", "1"]);
    // NT exports carry a `name` column beside sequence,label: ignored, same rows.
    let nt = only_task(&repo("tests/fixtures/import/nt/promoter_tiny"));
    assert_eq!(nt.data, gue.data);
}

#[test]
fn bed_regions_become_sequences_from_the_reference_beside_them() {
    let task = only_task(&repo("tests/fixtures/import/bed/tiny"));
    assert_eq!(task.task.id, "tiny");
    let expected = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
        rows.iter()
            .map(|(l, s)| (l.to_string(), s.to_string()))
            .collect()
    };
    // Sliced and reverse-complemented by the fixture script (Python), 0-based end-exclusive;
    // the soft-masked (lower-case) chrA comes out upper-case; the `valid` row is skipped.
    assert_eq!(
        rows(&task, false),
        expected(&[
            ("enh", "TGAGCACTTTCGCCCGAATTTCTTGTGGCC"),
            ("bg", "CTTTTCTTCATCTTCTTCATCTTCATTCTT"),
            ("enh", "AAGATGCCACAGTTGTGGGGCCCGCCCGGC"),
            ("bg", "AACTAAAATACAATAGAAGGGGTACTGAGT"),
        ])
    );
    assert_eq!(
        rows(&task, true),
        expected(&[
            ("enh", "GTCAAGGCCGGGCAGCCAATGACTAAGAAC"),
            ("bg", "TAAAATTAAAGCAAAAAATTAATGTTAAAA"),
        ])
    );
}

#[test]
fn unrecognised_layouts_get_a_clear_error() {
    let header = "#chrom\tstart\tend\tlabel\tsplit\n";
    let cases = [
        (
            "import-bed-no-reference",
            vec![("t/t.bed", header)],
            "no reference FASTA beside this BED file",
        ),
        (
            "import-bed-no-split",
            vec![
                ("t/t.bed", "#chrom\tstart\tend\tlabel\n"),
                ("t/g.fa", ">c\nACGT\n"),
            ],
            "no `split` column",
        ),
        (
            "import-bed-outside",
            vec![
                (
                    "t/t.bed",
                    "#chrom\tstart\tend\tlabel\tsplit\nc\t2\t9\t1\ttrain\n",
                ),
                ("t/g.fa", ">c\nACGT\n"),
            ],
            "runs past the end of c (4 bases)",
        ),
        (
            "import-stray-text",
            vec![
                ("t/notes/readme.txt", "hello"),
                ("t/sequences/1.txt", "ACGT"),
            ],
            "no task data in this folder",
        ),
    ];
    for (name, files, expected) in cases {
        let dir = scratch(name, &files);
        let err = tasks_from_path(&dir, None).unwrap_err().to_string();
        assert!(err.contains(expected), "{name}: {err}");
    }
}
