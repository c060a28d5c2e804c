//! Parquet task tables written by pyarrow (tests/oracle/make_parquet_fixtures.py) read to the
//! same tasks and the same result as the CSV beside each, and bad Parquet refused in one line.

use geneb::input::split::SplitSettings;
use geneb::input::tasks_from_path_split;
use geneb::task::TaskData;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/parquet")
        .join(path)
}

fn read(path: &str, split: &SplitSettings) -> Vec<TaskData> {
    tasks_from_path_split(&fixture(path), None, split).unwrap()
}

fn error(path: &str) -> String {
    tasks_from_path_split(&fixture(path), None, &SplitSettings::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn every_codec_and_layout_reads_to_the_tasks_of_its_csv() {
    let default = SplitSettings::default();
    let grouped = SplitSettings {
        group_column: Some("donor".into()),
        ..SplitSettings::default()
    };
    let cases = [
        ("csv", "snappy", &default),
        // train gzip, test lz4; `train-00000-of-00001` is the train part, as the hub names it.
        ("pair-csv", "pair-parquet", &default),
        // No split column: geneb's split, groups kept apart, the same rows on each side.
        ("unsplit-csv", "unsplit-zstd", &grouped),
        ("unsplit-csv", "unsplit-snappy", &grouped),
    ];
    for (csv, parquet, split) in cases {
        let (want, got) = (read(csv, split), read(parquet, split));
        assert_eq!(want.len(), 1, "{csv}");
        assert_eq!(got, want, "{parquet} vs {csv}");
        assert!(!got[0].data.train.is_empty() && !got[0].data.test.is_empty());
    }
    assert!(read("unsplit-zstd", &grouped)[0].data.made_split.is_some());
}

#[test]
fn a_parquet_table_gives_the_result_of_its_csv() {
    let eval = |dir: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_geneb"))
            .args([
                "eval",
                "--model",
                "kmer:3",
                "--quiet",
                "--no-cache",
                "--task",
            ])
            .arg(fixture(dir))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (result["results"].clone(), result["tasks"].clone())
    };
    assert_eq!(eval("pair-parquet"), eval("pair-csv"));
    assert_eq!(eval("snappy"), eval("csv"));
}

#[test]
fn bad_parquet_gets_the_csvs_error_or_one_line_naming_the_file() {
    let (csv, parquet) = (
        error("bad-csv/nolabel.csv"),
        error("bad-parquet/nolabel.parquet"),
    );
    // The same message after each file's name: the same validation as CSV.
    assert_eq!(
        parquet.split_once("nolabel.parquet").map(|(_, m)| m),
        csv.split_once("nolabel.csv").map(|(_, m)| m),
    );
    let truncated = error("bad-parquet/truncated.parquet");
    assert!(
        truncated.contains("truncated.parquet")
            && truncated.contains("not a readable Parquet file"),
        "{truncated}"
    );
    assert_eq!(truncated.lines().count(), 1, "{truncated}");
    // The CLI: one line, exit 2.
    let out = Command::new(env!("CARGO_BIN_EXE_geneb"))
        .args(["eval", "--model", "kmer:3", "--task"])
        .arg(fixture("bad-parquet/truncated.parquet"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim().lines().count(),
        1
    );
}
