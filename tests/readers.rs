//! The readers on the fixture files (tests/fixtures/inputs/{good,bad}) and on in-memory files
//! named as the browser names dropped files.

use geneb::Error;
use geneb::input::{InputFile, read_labels, tasks_from_files, tasks_from_path};
use geneb::task::TaskData;
use std::path::Path;

const GOOD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/inputs/good");
const BAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/inputs/bad");

fn file(name: &str, text: &str) -> InputFile {
    InputFile {
        name: name.to_string(),
        bytes: text.as_bytes().to_vec(),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// (sequences, y) of a split, for compact assertions.
fn split_of(split: &geneb::task::Split) -> (Vec<&str>, Vec<usize>) {
    (
        split.sequences.iter().map(String::as_str).collect(),
        split.y.clone(),
    )
}

fn error_of(result: geneb::Result<Vec<TaskData>>) -> Error {
    match result {
        Ok(tasks) => panic!("expected an error, got {} tasks", tasks.len()),
        Err(err) => err,
    }
}

#[test]
fn every_bad_fixture_fails_with_file_line_and_reason() {
    // (PATH under bad/, file the error names (under bad/), line, phrase of the message)
    let cases: &[(&str, &str, Option<usize>, &str)] = &[
        ("empty.csv", "empty.csv", None, "the file is empty"),
        (
            "header_only.csv",
            "header_only.csv",
            None,
            "a header but no data rows",
        ),
        (
            "no_header_line.csv",
            "no_header_line.csv",
            Some(1),
            "no `text` (sequence) column; the header (first line) has `ACGT`, `1`, `train`",
        ),
        (
            "missing_label_column.csv",
            "missing_label_column.csv",
            Some(1),
            "no `label` column; the header (first line) has `text`, `class`, `split`",
        ),
        (
            "too_small_to_split.csv",
            "too_small_to_split.csv",
            None,
            "class '0' has only 1 row: it cannot be in both the train and the test split",
        ),
        (
            "missing_sequence_column.csv",
            "missing_sequence_column.csv",
            Some(1),
            "no `text` (sequence) column",
        ),
        (
            "duplicate_label_column.csv",
            "duplicate_label_column.csv",
            Some(1),
            "two `label` columns (columns 2 and 4)",
        ),
        (
            "unknown_split_value.csv",
            "unknown_split_value.csv",
            Some(3),
            "unknown split `validation`",
        ),
        (
            "non_iupac_letter.csv",
            "non_iupac_letter.csv",
            Some(3),
            "the sequence has 'X' at column 4",
        ),
        (
            "digit_in_sequence.csv",
            "digit_in_sequence.csv",
            Some(4),
            "a digit ('7') at column 3",
        ),
        (
            "gap_in_sequence.csv",
            "gap_in_sequence.csv",
            Some(2),
            "a gap ('-') at column 5",
        ),
        (
            "space_in_sequence.csv",
            "space_in_sequence.csv",
            Some(3),
            "a space at column 3",
        ),
        (
            "empty_sequence.csv",
            "empty_sequence.csv",
            Some(3),
            "empty sequence",
        ),
        ("empty_label.csv", "empty_label.csv", Some(3), "empty label"),
        (
            "one_class_in_train.csv",
            "one_class_in_train.csv",
            None,
            "only one class (label `1`)",
        ),
        ("no_test_rows.csv", "no_test_rows.csv", None, "no test rows"),
        (
            "no_train_rows.csv",
            "no_train_rows.csv",
            None,
            "no training rows",
        ),
        (
            "truncated.csv.gz",
            "truncated.csv.gz",
            None,
            "gzip data is truncated or corrupt",
        ),
        (
            "binary_garbage.csv",
            "binary_garbage.csv",
            Some(3),
            "binary data",
        ),
        (
            "invalid_utf8.csv",
            "invalid_utf8.csv",
            Some(3),
            "not UTF-8 text (byte 0xe9 at column 9)",
        ),
        (
            "ragged_row.csv",
            "ragged_row.csv",
            Some(3),
            "this row has 2 comma-separated fields but the header has 3",
        ),
        (
            "unterminated_quote.csv",
            "unterminated_quote.csv",
            Some(3),
            "unterminated quote",
        ),
        (
            "text_after_closing_quote.csv",
            "text_after_closing_quote.csv",
            Some(2),
            "unexpected 'x' at column 7, after a closing quote",
        ),
        (
            "zip_archive_named.csv",
            "zip_archive_named.csv",
            None,
            "a zip archive",
        ),
        (
            "bzip2_compressed.csv.bz2",
            "bzip2_compressed.csv.bz2",
            None,
            "compressed as .bz2",
        ),
        (
            "fasta_missing_split.fa",
            "fasta_missing_split.fa",
            Some(3),
            "no split in the header of `s2`: say which split",
        ),
        (
            "fasta_missing_label.fa",
            "fasta_missing_label.fa",
            Some(3),
            "no label in the header of `s2`",
        ),
        (
            "fasta_sequence_before_header.fa",
            "fasta_sequence_before_header.fa",
            Some(1),
            "expected a FASTA header line",
        ),
        (
            "fasta_empty_record.fa",
            "fasta_empty_record.fa",
            Some(1),
            "the record `s1` has no sequence",
        ),
        (
            "fasta_bad_letter.fa",
            "fasta_bad_letter.fa",
            Some(3),
            "the sequence has 'E' at column 7",
        ),
        (
            "fasta_split_conflict",
            "fasta_split_conflict/train.fa",
            Some(3),
            "the header says split=test but the file is in the train split",
        ),
        (
            "pair_without_test",
            "pair_without_test/train.csv",
            None,
            "no test split beside this file",
        ),
        (
            "bad_manifest",
            "bad_manifest/tasks.json",
            Some(3),
            "not a valid tasks.json (missing field `id`",
        ),
        (
            "duplicate_task_id",
            "duplicate_task_id/x/train.csv",
            None,
            "task id `x` is given twice",
        ),
    ];
    let mut fixtures: Vec<String> = std::fs::read_dir(BAD)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("labels_"))
        .collect();
    fixtures.sort();
    let mut listed: Vec<String> = cases.iter().map(|c| c.0.to_string()).collect();
    listed.sort();
    assert_eq!(fixtures, listed, "every bad fixture has a case");
    for &(path, named, line, phrase) in cases {
        let err = error_of(tasks_from_path(Path::new(&format!("{BAD}/{path}")), None));
        assert_eq!(
            err.file.as_deref(),
            Some(format!("{BAD}/{named}").as_str()),
            "{path}: {err}"
        );
        assert_eq!(err.line, line, "{path}: {err}");
        assert!(err.message.contains(phrase), "{path}: {err}");
        assert!(err.message.len() < 400, "{path}: message too long: {err}");
    }
}

#[test]
fn a_label_file_with_a_blank_line_inside_fails() {
    let path = format!("{BAD}/labels_blank_line_in_middle.txt");
    let bytes = std::fs::read(&path).unwrap();
    let err = read_labels(&InputFile {
        name: path.clone(),
        bytes,
    })
    .unwrap_err();
    assert_eq!(
        (err.file.as_deref(), err.line),
        (Some(path.as_str()), Some(3))
    );
    assert!(err.message.contains("empty line"), "{err}");
}

#[test]
fn the_good_folder_reads_as_seven_tasks_sorted_with_categories() {
    let tasks = tasks_from_path(Path::new(GOOD), Some("Enhancers")).unwrap();
    let summary: Vec<(&str, &str)> = tasks
        .iter()
        .map(|t| (t.task.id.as_str(), t.task.category.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("fasta_classes", "Coding/NC"), // tasks.json, `cat` spelling
            ("fasta_pair", "Enhancers"),
            ("fasta_split_in_headers", "Enhancers"),
            ("gzipped_table", "Enhancers"),
            ("pair_task", "Promoters"), // tasks.json
            ("promoters_table", "Enhancers"),
            ("splice_sites", "Enhancers"),
        ]
    );
    let data = |id: &str| &tasks.iter().find(|t| t.task.id == id).unwrap().data;

    // BOM, CRLF, columns in any order, quoted fields, a blank line, IUPAC codes, U, lower case,
    // integer labels in numeric order.
    let table = data("promoters_table");
    assert_eq!(table.labels, strings(&["2", "10"]));
    assert_eq!(
        split_of(&table.train),
        (vec!["ACGTNNNN", "ACGT", "NNACGT"], vec![1, 0, 1])
    );
    assert_eq!(split_of(&table.test), (vec!["GGCC", "TTTT"], vec![0, 1]));

    let tsv = data("splice_sites");
    assert_eq!(tsv.labels, strings(&["acceptor", "donor", "none"]));
    assert_eq!(
        split_of(&tsv.train),
        (vec!["ACGTAG", "TTAGGC", "CCCCCC"], vec![1, 0, 2])
    );
    assert_eq!(split_of(&tsv.test), (vec!["GTAAGT", "AGGTCA"], vec![1, 2]));

    let gz = data("gzipped_table");
    assert_eq!(split_of(&gz.train), (vec!["ACGT", "TTTT"], vec![0, 1]));
    assert_eq!(split_of(&gz.test), (vec!["GGGG"], vec![1]));

    // dev.csv beside the pair is skipped.
    let pair = data("pair_task");
    assert_eq!(pair.labels, strings(&["0", "1"]));
    assert_eq!(
        split_of(&pair.train),
        (vec!["ACGTACGT", "TTTTAAAA", "GGGGCCCC"], vec![1, 0, 1])
    );
    assert_eq!(
        split_of(&pair.test),
        (vec!["ACGTTTTT", "GGGGAAAA"], vec![0, 1])
    );

    let fasta = data("fasta_split_in_headers");
    assert_eq!(fasta.labels, strings(&["background", "enhancer"]));
    assert_eq!(
        split_of(&fasta.train),
        (vec!["ACGTACGT", "TTTTGGGG"], vec![1, 0])
    );
    assert_eq!(split_of(&fasta.test), (vec!["CCCCAAAN"], vec![1]));

    let fasta_pair = data("fasta_pair");
    assert_eq!(
        split_of(&fasta_pair.train),
        (vec!["ACGT", "TTTT", "GGCC"], vec![1, 0, 1])
    );
    assert_eq!(
        split_of(&fasta_pair.test),
        (vec!["ACCA", "GGTT"], vec![0, 1])
    );

    let classes = data("fasta_classes");
    assert_eq!(classes.labels, strings(&["coding", "noncoding"]));
    assert_eq!(
        split_of(&classes.train),
        (vec!["ATGAAA", "ATGCCC", "TTTTTT"], vec![0, 0, 1])
    );
    assert_eq!(
        split_of(&classes.test),
        (vec!["ATGGGG", "CCCCCC", "AAAAAA"], vec![0, 1, 1])
    );
}

#[test]
fn a_single_task_path_gives_that_task() {
    let table = tasks_from_path(Path::new(&format!("{GOOD}/gzipped_table.csv.gz")), None).unwrap();
    assert_eq!(
        (table[0].task.id.as_str(), table[0].task.category.as_str()),
        ("gzipped_table", "Uncategorized")
    );
    let pair = tasks_from_path(Path::new(&format!("{GOOD}/pair_task")), None).unwrap();
    assert_eq!(pair.len(), 1);
    assert_eq!(pair[0].task.id, "pair_task");
    let classes = tasks_from_path(Path::new(&format!("{GOOD}/fasta_classes")), None).unwrap();
    assert_eq!(classes[0].data.train.len(), 3);
}

#[test]
fn one_split_of_a_pair_given_alone_asks_for_the_folder() {
    let path = format!("{GOOD}/pair_task/train.csv");
    let err = error_of(tasks_from_path(Path::new(&path), None));
    assert_eq!(err.file.as_deref(), Some(path.as_str()));
    assert!(err.message.contains("give the task's folder"), "{err}");
}

#[test]
fn utf16_text_is_named_as_such() {
    let bytes = b"\xff\xfet\0e\0x\0t\0".to_vec();
    let err = error_of(tasks_from_files(
        &[InputFile {
            name: "t.csv".into(),
            bytes,
        }],
        None,
    ));
    assert!(err.message.contains("UTF-16"), "{err}");
}

#[test]
fn labels_file_reads_in_order_with_trailing_blank_lines() {
    let bytes = std::fs::read(format!("{GOOD}/labels.txt")).unwrap();
    let labels = read_labels(&InputFile {
        name: "labels.txt".into(),
        bytes,
    })
    .unwrap();
    assert_eq!(labels, strings(&["1", "0", "1"]));
    let err = read_labels(&file("l.txt", "\n\n")).unwrap_err();
    assert!(err.message.contains("no labels"), "{err}");
}

#[test]
fn dropped_files_in_any_order_make_the_same_tasks() {
    let files = vec![
        file("drop/mytask/test.csv", "text,label\nACGT,b\n"),
        file("drop/mytask/train.csv", "text,label\nACGT,b\nTTTT,a\n"),
        file(
            "drop/other.csv",
            "split,label,text\ntrain,1,AC\ntrain,0,GG\ntest,0,TT\n",
        ),
        file("drop/notes.md", "ignored"),
        file("drop/.DS_Store", "\0\0binary"),
    ];
    let tasks = tasks_from_files(&files, None).unwrap();
    let mut reversed = files.clone();
    reversed.reverse();
    assert_eq!(tasks_from_files(&reversed, None).unwrap(), tasks);
    assert_eq!(
        tasks.iter().map(|t| t.task.id.as_str()).collect::<Vec<_>>(),
        ["mytask", "other"]
    );
    assert_eq!(tasks[0].data.labels, strings(&["a", "b"]));
    assert_eq!(tasks[0].data.train.y, [1, 0]);
}

#[test]
fn category_comes_from_catalogue_then_manifest_then_argument() {
    let table = "text,label,split\nAC,1,train\nGG,0,train\nTT,0,test\n";
    let catalogue_id = "InstaDeepAI_nucleotide_transformer_downstream_tasks_H3";
    let files = vec![
        file(&format!("{catalogue_id}.csv"), table),
        file("mine.csv", table),
        file("named.csv", table),
        file(
            "tasks.json",
            &format!(
                r#"{{"tasks":[{{"id":"{catalogue_id}","category":"Promoters"}},{{"id":"named","category":"My assays"}}]}}"#
            ),
        ),
    ];
    let categories = |argument| -> Vec<String> {
        tasks_from_files(&files, argument)
            .unwrap()
            .into_iter()
            .map(|t| t.task.category)
            .collect()
    };
    assert_eq!(
        categories(Some("Enhancers")),
        ["Histone Mod.", "Enhancers", "My assays"]
    );
    assert_eq!(
        categories(None),
        ["Histone Mod.", "Uncategorized", "My assays"]
    );
    assert_eq!(
        categories(Some("  ")),
        ["Histone Mod.", "Uncategorized", "My assays"]
    );
}

#[test]
fn a_pair_without_a_folder_asks_for_one() {
    let files = vec![
        file("train.csv", "text,label\nAC,1\nGG,0\n"),
        file("test.csv", "text,label\nAC,1\n"),
    ];
    let err = error_of(tasks_from_files(&files, None));
    assert!(
        err.message.contains("inside a folder named after the task"),
        "{err}"
    );
}

#[test]
fn nothing_recognisable_is_an_error_listing_the_files() {
    let err = error_of(tasks_from_files(&[file("notes.txt", "hello")], None));
    assert!(
        err.message
            .contains("no task data among the files (notes.txt)"),
        "{err}"
    );
    assert!(
        error_of(tasks_from_files(&[], None))
            .message
            .contains("no files")
    );
}

#[test]
fn tab_header_in_a_csv_file_is_read_as_tsv_and_integer_spellings_merge() {
    let files = vec![file(
        "t.csv",
        "text\tlabel\tsplit\nACGT\t01\ttrain\nTTTT\t1\ttrain\nGG\t0\ttrain\nCC\t+1\ttest\n",
    )];
    let data = &tasks_from_files(&files, None).unwrap()[0].data;
    assert_eq!(data.labels, strings(&["0", "1"]));
    assert_eq!(
        (data.train.y.clone(), data.test.y.clone()),
        (vec![1, 1, 0], vec![1])
    );
}

#[test]
fn errors_after_a_multi_line_quoted_field_name_the_physical_line() {
    let text = "text,label,split\nACGT,\"two\nline label\",train\nTTTT,0,train\nGG,0,tost\n";
    let err = error_of(tasks_from_files(&[file("t.csv", text)], None));
    assert_eq!(err.line, Some(5), "{err}");
    let quoted_sequence = "text,label,split\n\"AC\nGT\",1,train\n";
    let err = error_of(tasks_from_files(&[file("q.csv", quoted_sequence)], None));
    assert_eq!(err.line, Some(2), "{err}");
    assert!(err.message.contains("control character"), "{err}");
}

#[test]
fn a_huge_bad_value_is_quoted_briefly() {
    let huge = "x".repeat(1_000_000);
    let text = format!("text,label,split\nACGT,1,{huge}\n");
    let err = error_of(tasks_from_files(&[file("t.csv", &text)], None));
    assert_eq!(err.line, Some(2));
    assert!(err.to_string().len() < 200, "{}", err.to_string().len());
    let text = format!("text,label,split\nACGT{huge},1,train\n");
    let err = error_of(tasks_from_files(&[file("t.csv", &text)], None));
    assert!(err.message.contains("'x' at column 5"), "{err}");
}

#[test]
fn a_large_gzipped_table_streams_through() {
    use std::io::Write;
    let rows = 100_000;
    let mut text = String::from("text,label,split\n");
    for i in 0..rows {
        let split = if i % 5 == 0 { "test" } else { "train" };
        text.push_str(&format!(
            "ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTAC{},{},{split}\n",
            ["A", "C", "G", "T"][i % 4],
            i % 3
        ));
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text.as_bytes()).unwrap();
    let bytes = encoder.finish().unwrap();
    let tasks = tasks_from_files(
        &[InputFile {
            name: "big.csv.gz".into(),
            bytes,
        }],
        None,
    )
    .unwrap();
    let data = &tasks[0].data;
    assert_eq!((data.train.len(), data.test.len()), (80_000, 20_000));
    assert_eq!(data.labels, strings(&["0", "1", "2"]));
}

#[test]
fn fasta_class_files_may_sit_beside_unused_splits() {
    let files = vec![
        file("t/train/a.fa", ">1\nAC\n"),
        file("t/train/b.fa", ">2\nGG\n"),
        file("t/test/a.fa", ">3\nTT\n"),
        file("t/dev/a.fa", "not even FASTA"),
        file("t/validation.fa", "not even FASTA"),
    ];
    let tasks = tasks_from_files(&files, None).unwrap();
    assert_eq!(tasks[0].task.id, "t");
    assert_eq!(tasks[0].data.labels, strings(&["a", "b"]));
}
