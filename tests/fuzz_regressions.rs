//! Replays the inputs that once crashed a fuzz target (`tests/fixtures/fuzz-regressions/<target>/`,
//! see fuzz/README.md) through the entry points the targets call, on the stable toolchain and
//! without a fuzzer: a panic here is a parser bug come back.

#[path = "support/parsers.rs"]
mod parsers;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;

/// libFuzzer fails any single allocation above its memory limit (2 GiB, fuzz/README.md), which
/// is how a size a file made up shows; this replay refuses the same, so such an input aborts the
/// test here too instead of reserving untouched pages the OS is glad to promise.
struct LikeLibFuzzer;

const LARGEST_ALLOCATION: usize = 2 << 30;

// SAFETY: every call within the limit is passed to `System` unchanged; a refusal is a null
// pointer, which `GlobalAlloc` allows.
unsafe impl GlobalAlloc for LikeLibFuzzer {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LARGEST_ALLOCATION {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LARGEST_ALLOCATION {
            return std::ptr::null_mut();
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LikeLibFuzzer = LikeLibFuzzer;

type Entry = fn(&[u8]);

/// Feeds every file of the target's folder to `entry`; returns how many there were.
fn replay(target: &str, entry: Entry) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz-regressions")
        .join(target);
    let Ok(files) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut count = 0;
    for file in files {
        let path = file.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        eprintln!("{target}: {}", path.display());
        entry(&bytes);
        count += 1;
    }
    count
}

#[test]
fn inputs_that_crashed_the_parsers_are_handled() {
    let targets: &[(&str, Entry)] = &[
        ("task_files", parsers::task_files),
        ("safetensors", parsers::safetensors),
        ("pytorch", parsers::pytorch),
        ("tokenizer", parsers::tokenizer),
        ("results", parsers::results),
        ("npz", parsers::npz),
        ("parquet", parsers::parquet),
        ("saved_probe", parsers::saved_probe),
        ("shard", parsers::shard),
        #[cfg(feature = "burn")]
        ("model_config", parsers::model_config),
    ];
    let replayed: usize = targets
        .iter()
        .map(|&(target, entry)| replay(target, entry))
        .sum();
    assert!(replayed > 0, "no regression inputs found");
}

// Hostile files built in code (issue 29): each class once found by hand, too large to keep as a
// file, replayed here through the library (the CLI's half is tests/hostile_files.rs).

use geneb::checkpoint::ModelFiles;
use geneb::tokenize::{Tokenizer, TokenizerChoice};
use std::time::{Duration, Instant};

fn tokenizer_json(model: serde_json::Value, normalizer: serde_json::Value) -> ModelFiles {
    let json = serde_json::json!({
        "model": model,
        "normalizer": normalizer,
        "pre_tokenizer": null,
        "post_processor": null,
        "added_tokens": [],
    });
    let mut files = ModelFiles::new("model");
    files.insert("tokenizer.json", json.to_string().into_bytes());
    files
}

fn word_piece(vocab: &[&str], max_input_chars_per_word: usize) -> serde_json::Value {
    let vocab: serde_json::Map<String, serde_json::Value> = ["[UNK]", "[PAD]"]
        .iter()
        .chain(vocab)
        .enumerate()
        .map(|(id, token)| (token.to_string(), id.into()))
        .collect();
    serde_json::json!({
        "type": "WordPiece",
        "unk_token": "[UNK]",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": max_input_chars_per_word,
        "vocab": vocab,
    })
}

/// A `Replace` whose content is a megabyte would make a megabyte of text per base: the file is
/// refused when read, so no sequence's text grows out of proportion to the sequence.
#[test]
fn a_tokenizer_replace_writing_a_megabyte_per_base_is_refused() {
    let megabyte = "N".repeat(1 << 20);
    let files = tokenizer_json(
        word_piece(&["A", "C", "G", "T"], 100),
        serde_json::json!({"type": "Replace", "pattern": {"Regex": "[ACGT]"}, "content": megabyte}),
    );
    let error = Tokenizer::from_files(&files, TokenizerChoice::Files)
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .contains("more than 64 characters of text"),
        "{error}"
    );
    // GENA-LM's Replace (runs of N become one `-`) is one of many that stay within bounds.
    let files = tokenizer_json(
        word_piece(&["A", "C", "G", "T", "-"], 100),
        serde_json::json!({"type": "Replace", "pattern": {"Regex": "N{10,}"}, "content": "-"}),
    );
    assert!(Tokenizer::from_files(&files, TokenizerChoice::Files).is_ok());
}

/// A 20,000-character vocabulary entry (and its continuation) once made every position of a
/// word try 20,000 candidate lengths, each copied and hashed: 20 s for a 4 kb word. The trie
/// walks a word once per piece and stops where no entry continues.
#[test]
fn a_wordpiece_entry_of_20000_characters_costs_no_more_than_the_word() {
    let long = "A".repeat(20_000);
    let long_continuation = format!("##{long}");
    let files = tokenizer_json(
        word_piece(
            &["A", "C", "##A", "##C", &long, &long_continuation],
            1_000_000,
        ),
        serde_json::Value::Null,
    );
    let tokenizer = Tokenizer::from_files(&files, TokenizerChoice::Files).expect("a tokenizer");
    let word = "AC".repeat(2_000);
    let started = Instant::now();
    let ids = tokenizer.encode(&word, None);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?} for a 4 kb word",
        started.elapsed()
    );
    // `A`, then `##C`, `##A`, … one piece per base.
    assert_eq!(ids.len(), 4_000);
    assert_eq!(ids[0], 2);
    assert!(
        ids[1..]
            .iter()
            .zip([5, 4].iter().cycle())
            .all(|(a, b)| a == b)
    );
}
