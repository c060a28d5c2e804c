//! The tokenizers against the Hugging Face tokenizers' ids (tests/oracle/make_tokenizer_fixtures.py):
//! every corpus sequence untruncated, truncated to the model's maximum and to a short length,
//! must give identical ids. Light: runs with `--no-default-features`.

use geneb::checkpoint::ModelFiles;
use geneb::tokenize::{Tokenizer, TokenizerChoice};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizers");

fn model_files(name: &str) -> ModelFiles {
    let mut files = ModelFiles::new(name);
    for entry in std::fs::read_dir(format!("{FIXTURES}/{name}")).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        if file != "expected.json" {
            files.insert(&file, std::fs::read(&path).unwrap());
        }
    }
    files
}

fn json_file(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The tokenizer each fixture's architecture takes: the choice the registry makes from the
/// fixture's config.json (checked by `tests/hf_models.rs`, which needs the Burn encoders).
fn choice(name: &str) -> TokenizerChoice {
    match name {
        "hyenadna" => TokenizerChoice::Characters { upper_case: false },
        // Without a tokenizer.json, CaduceusTokenizer; PlantCaduceus ships one.
        "caduceus" | "plantcaduceus" => TokenizerChoice::CaduceusOrFiles,
        "nt3" | "nt6" => TokenizerChoice::Esm,
        _ => TokenizerChoice::Files,
    }
}

fn tokenizer(name: &str) -> Tokenizer {
    Tokenizer::from_files(&model_files(name), choice(name)).unwrap()
}

/// Compares every case of each fixture, each of which must exercise truncation.
fn check_against_oracle(names: &[&str]) {
    for name in names {
        assert!(
            cases_cut_by_truncation(name) > 0,
            "{name}: no case exceeds the maximum"
        );
    }
}

/// Compares every case and returns how many were cut by truncation.
fn cases_cut_by_truncation(name: &str) -> usize {
    let corpus: Vec<String> =
        serde_json::from_value(json_file(&format!("{FIXTURES}/corpus.json"))).unwrap();
    let expected = json_file(&format!("{FIXTURES}/{name}/expected.json"));
    let tokenizer = tokenizer(name);
    let max = expected["model_max_length"].as_u64().unwrap() as usize;
    let short = expected["short_max_length"].as_u64().unwrap() as usize;
    assert_eq!(tokenizer.model_max_length(), Some(max), "{name}");
    let cases = expected["cases"].as_array().unwrap();
    assert_eq!(cases.len(), corpus.len());
    let mut truncated = 0;
    for (sequence, case) in corpus.iter().zip(cases) {
        let ids = |key: &str| -> Vec<u32> { serde_json::from_value(case[key].clone()).unwrap() };
        let full = ids("full");
        assert_eq!(tokenizer.encode(sequence, None), full, "{name}: {sequence}");
        assert_eq!(
            tokenizer.encode(sequence, Some(max)),
            ids("max"),
            "{name}: {sequence} (max {max})"
        );
        assert_eq!(
            tokenizer.encode(sequence, Some(short)),
            ids("short"),
            "{name}: {sequence} (max {short})"
        );
        truncated += usize::from(full.len() > max);
    }
    truncated
}

#[test]
fn character_tokenizers_match_hf() {
    check_against_oracle(&["hyenadna", "caduceus"]);
    // HyenaDNA keeps case (lowercase is [UNK] = 6), Caduceus upper-cases first.
    assert_eq!(tokenizer("hyenadna").encode("aCn", None), vec![6, 8, 6, 1]);
    assert_eq!(tokenizer("caduceus").encode("aCn", None), vec![7, 8, 11, 1]);
}

#[test]
fn nucleotide_transformer_kmers_match_hf() {
    check_against_oracle(&["nt6", "nt3"]);
    // NT-v2 disables the eos token; EsmTokenizer's default appends <eos> (id 4).
    let mut files = model_files("nt6");
    files.insert(
        "tokenizer_config.json",
        br#"{"tokenizer_class": "EsmTokenizer"}"#.to_vec(),
    );
    let tokenizer = Tokenizer::from_files(&files, TokenizerChoice::Esm).unwrap();
    assert_eq!(tokenizer.encode("AAAAAAT", Some(3)), vec![3, 6, 4]);
    assert_eq!(tokenizer.encode("AAAAAAT", None), vec![3, 6, 4103, 4]);
}

#[test]
fn bert_wordpiece_matches_hf() {
    check_against_oracle(&["splicebert", "dnabert3", "dnabert6", "dnabert3-json"]);
}

#[test]
fn bpe_tokenizer_json_matches_hf() {
    check_against_oracle(&["dnabert2", "grover", "gena", "plantcaduceus"]);
}

/// GENA-LM t2t-multi: Strip and Replace(/N{10,}/ → "-") normalizers, a Split("-") pre-tokenizer.
#[test]
fn gena_t2t_normalizers_and_split_match_hf() {
    check_against_oracle(&["gena-t2t"]);
    let tokenizer = tokenizer("gena-t2t");
    let dash = 5;
    // Ten or more N are one "-" token between the BPE pieces of what surrounds them.
    let ids = tokenizer.encode(&format!("ACGT{}ACGT", "N".repeat(12)), None);
    assert_eq!(ids.iter().filter(|&&id| id == dash).count(), 1, "{ids:?}");
    let nine = tokenizer.encode(&format!("ACGT{}ACGT", "N".repeat(9)), None);
    assert!(!nine.contains(&dash), "{nine:?}");
}

/// GENERator's DNAKmerTokenizer (its own tokenizer.py): non-overlapping 6-mers, anything else
/// `<oov>`, special-token names in the text read as those tokens, `<s>` first and no `</s>`.
#[test]
fn generator_kmers_match_its_tokenizer_code() {
    check_against_oracle(&["generator"]);
    let tokenizer = tokenizer("generator");
    // generator.py's input as a pinned run of the 3B checkpoint's tokenizer gave its ids: `<s>`
    // twice, a 6-mer with an N `<oov>` (0), AAAAAA 32, TTTTTT 1397.
    assert_eq!(tokenizer.encode("<s>ACGTNACGTNAC", None), vec![1, 1, 0, 0]);
    assert_eq!(
        tokenizer.encode("<s>AAAAAATTTTTT", None),
        vec![1, 1, 32, 1397]
    );
    // GGGGGG is the last k-mer; a remainder and lower case are `<oov>`.
    assert_eq!(tokenizer.encode("GGGGGGAC", None), vec![1, 4127, 0]);
    assert_eq!(tokenizer.encode("acgtac", None), vec![1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(tokenizer.pad_id(), 3);
    assert_eq!(tokenizer.vocab_size(), 4128);
    for (k, why) in [
        ("0", "expected 1 to 15"),
        ("null", "needs its k-mer length"),
    ] {
        let mut files = model_files("generator");
        files.insert(
            "tokenizer_config.json",
            format!(r#"{{"tokenizer_class": "DNAKmerTokenizer", "k": {k}}}"#).into_bytes(),
        );
        let err = Tokenizer::from_files(&files, TokenizerChoice::Files)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("tokenizer_config.json") && err.contains(why),
            "{err}"
        );
    }
}

/// BioFM's AnnotationTokenizer (biofm-eval), fed as its Embedder feeds it: characters, [CLS]
/// (6) … [SEP] (7), anything unconfigured [UNK] (8), whitespace no token, padded on the left.
#[test]
fn biofm_characters_match_its_annotation_tokenizer() {
    check_against_oracle(&["biofm"]);
    let tokenizer = tokenizer("biofm");
    assert_eq!(tokenizer.encode("AC gÂ", None), vec![6, 0, 1, 8, 13, 7]);
    assert_eq!((tokenizer.pad_id(), tokenizer.pads_left()), (9, true));
    let mut files = model_files("biofm");
    files.insert(
        "tokenizer_config.json",
        br#"{"char_ords": [65, -1], "model_max_length": 24}"#.to_vec(),
    );
    let err = Tokenizer::from_files(&files, TokenizerChoice::Files)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("tokenizer_config.json") && err.contains("no character code"),
        "{err}"
    );
}

#[test]
fn plantcaduceus_lower_cases_and_adds_no_special_tokens() {
    let tokenizer = tokenizer("plantcaduceus");
    assert_eq!(tokenizer.encode("ACgtN", None), vec![3, 4, 5, 6, 2]);
    assert_eq!(tokenizer.encode("ACGT", Some(2)), vec![3, 4]);
}

/// Evo-1's `CharLevelTokenizer(512).tokenize`: the text's UTF-8 bytes as given, case and all,
/// nothing added (the ids evo-model 0.5's tokenizer.py gives for this text).
#[test]
fn evo_bytes_keep_the_case_as_charleveltokenizer_does() {
    let tokenizer = Tokenizer::from_files(&ModelFiles::new("evo"), TokenizerChoice::Bytes).unwrap();
    assert_eq!(
        tokenizer.encode("ACGTNacgtnUuRy", None),
        vec![65, 67, 71, 84, 78, 97, 99, 103, 116, 110, 85, 117, 82, 121]
    );
}

#[test]
fn descriptions_sizes_and_padding() {
    for (name, description, pad_id) in [
        ("hyenadna", "characters (HyenaDNA), 12 tokens", 4),
        (
            "caduceus",
            "characters, upper-cased (Caduceus), 12 tokens",
            4,
        ),
        (
            "nt6",
            "6-mers, longest match first (EsmTokenizer, vocab.txt), 4107 tokens",
            1,
        ),
        (
            "nt3",
            "3-mers, longest match first (EsmTokenizer, vocab.txt), 75 tokens",
            1,
        ),
        (
            "splicebert",
            "WordPiece (vocab.txt, single nucleotides), 10 tokens",
            0,
        ),
        (
            "dnabert3",
            "WordPiece (vocab.txt, overlapping 3-mers), 69 tokens",
            0,
        ),
        (
            "dnabert6",
            "WordPiece (vocab.txt, overlapping 6-mers), 4101 tokens",
            0,
        ),
        ("dnabert2", "BPE (tokenizer.json), 1024 tokens", 3),
        ("grover", "BPE (tokenizer.json), 600 tokens", 3),
    ] {
        let tokenizer = tokenizer(name);
        assert_eq!(tokenizer.describe(), description, "{name}");
        assert_eq!(tokenizer.pad_id(), pad_id, "{name}");
    }
}

/// Replaces one component of the dnabert2 fixture's tokenizer.json and returns the error.
fn tokenizer_json_error(component: &str, value: Value) -> String {
    let mut files = model_files("dnabert2");
    let mut json: Value = serde_json::from_slice(files.get("tokenizer.json").unwrap()).unwrap();
    let mut target = &mut json;
    for key in component.split('.') {
        target = &mut target[key];
    }
    *target = value;
    files.insert("tokenizer.json", serde_json::to_vec(&json).unwrap());
    Tokenizer::from_files(&files, TokenizerChoice::Files)
        .err()
        .unwrap()
        .to_string()
}

#[test]
fn unsupported_components_are_refused_by_name() {
    let err = tokenizer_json_error("pre_tokenizer", json!({"type": "Metaspace"}));
    assert!(
        err.starts_with("dnabert2/tokenizer.json: pre-tokenizer Metaspace is not supported"),
        "{err}"
    );
    let err = tokenizer_json_error("normalizer", json!({"type": "Precompiled"}));
    assert!(
        err.contains("normalizer Precompiled is not supported"),
        "{err}"
    );
    // Replace and Split, supported for GENA-LM: a malformed pattern or behaviour is named.
    let err = tokenizer_json_error("normalizer", json!({"type": "Replace", "content": "-"}));
    assert!(
        err.contains("pattern null is neither a String nor a Regex"),
        "{err}"
    );
    let err = tokenizer_json_error(
        "normalizer",
        json!({"type": "Replace", "pattern": {"Regex": "N{10,"}, "content": "-"}),
    );
    assert!(err.contains("pattern /N{10,/ is not a regex"), "{err}");
    let err = tokenizer_json_error(
        "pre_tokenizer",
        json!({"type": "Split", "pattern": {"String": "-"}, "behavior": "Contiguous"}),
    );
    assert!(err.contains("Split with behavior Contiguous"), "{err}");
    let err = tokenizer_json_error("post_processor", json!({"type": "Sequence"}));
    assert!(
        err.contains("post-processor Sequence is not supported"),
        "{err}"
    );
    let err = tokenizer_json_error("model.type", json!("Unigram"));
    assert!(err.contains("model type Unigram is not supported"), "{err}");
    let err = tokenizer_json_error("model.dropout", json!(0.1));
    assert!(err.contains("dropout"), "{err}");
    let err = tokenizer_json_error("model.merges", json!(["A Q"]));
    assert!(err.contains("merge 0 uses 'Q'"), "{err}");
    let err = tokenizer_json_error(
        "added_tokens",
        json!([{"id": 9, "content": "ACGT", "special": false}]),
    );
    assert!(
        err.contains("added token 'ACGT' is not a special token"),
        "{err}"
    );

    let mut files = ModelFiles::new("empty");
    files.insert("config.json", br#"{"model_type": "bert"}"#.to_vec());
    let err = Tokenizer::from_files(&files, TokenizerChoice::Files)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        "empty: no tokenizer files: expected tokenizer.json or vocab.txt"
    );

    let mut files = model_files("splicebert");
    files.insert("vocab.txt", b"[PAD]\n[CLS]\n[SEP]\nA\n".to_vec());
    let err = Tokenizer::from_files(&files, TokenizerChoice::Files)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        "splicebert/vocab.txt: the unk_token token '[UNK]' is not in the vocabulary"
    );
    files.insert("tokenizer_config.json", b"{not json".to_vec());
    let err = Tokenizer::from_files(&files, TokenizerChoice::Files)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("splicebert/tokenizer_config.json: not valid JSON"),
        "{err}"
    );
}

/// A whole sequence is one BPE word: a long one must stay fast (the merge heap, not a rescan
/// per merge).
#[test]
fn long_sequences_are_fast() {
    let tokenizer = tokenizer("dnabert2");
    let corpus: Vec<String> =
        serde_json::from_value(json_file(&format!("{FIXTURES}/corpus.json"))).unwrap();
    let long: String = corpus.concat().repeat(30);
    let start = std::time::Instant::now();
    let ids = tokenizer.encode(&long, None);
    assert!(
        ids.len() > long.len() / 10,
        "{} ids for {} characters",
        ids.len(),
        long.len()
    );
    assert!(
        start.elapsed().as_secs_f64() < 10.0,
        "{:?} for {} characters",
        start.elapsed(),
        long.len()
    );
}

/// WordPiece tries the longest piece first. A file may lift `max_input_chars_per_word` (100 by
/// default) so that a whole sequence is one word; pieces longer than any vocabulary entry are
/// never tried, so a 20,000-character word takes moments (trying them all was cubic: some 10¹²
/// character copies). The ids are the greedy longest match's.
#[test]
fn a_long_wordpiece_word_is_linear_whatever_the_file_allows() {
    let pieces = ["A", "C", "G", "T", "##A", "##C", "##G", "##T", "AC"];
    let mut vocab = json!({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "[PAD]": 3});
    for (i, piece) in pieces.iter().enumerate() {
        vocab[*piece] = json!(4 + i);
    }
    let tokenizer_json = json!({
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 1_000_000_000u64, "vocab": vocab},
        "normalizer": null, "pre_tokenizer": null, "post_processor": null,
    });
    let mut files = ModelFiles::new("hostile");
    files.insert(
        "tokenizer.json",
        serde_json::to_vec(&tokenizer_json).unwrap(),
    );
    let tokenizer = Tokenizer::from_files(&files, TokenizerChoice::Files).unwrap();
    let word = "ACGT".repeat(5_000);
    let continuation = |c: char| 8 + "ACGT".find(c).unwrap() as u32;
    let expected: Vec<u32> = std::iter::once(12)
        .chain(word.chars().skip(2).map(continuation))
        .collect();
    assert_eq!(tokenizer.encode(&word, None), expected);
}

/// Whatever text arrives (control characters, non-ASCII, special-token names), every tokenizer
/// returns ids within its vocabulary with the special tokens in place, and never panics.
#[test]
fn any_text_gives_ids_in_the_vocabulary() {
    let texts = [
        "",
        " ",
        "\t\n",
        "[CLS]",
        "<cls>ACGT<eos>",
        "ACGT ACGT",
        "ACG\u{0}T\u{7f}",
        "äöüßΩ漢字ACGT",
        "A-C.G,T!",
        "\u{fffd}\u{200b}",
        "acgtACGTnNrRyY",
        "##A",
        "A\u{301}CGT",
    ];
    for name in [
        "hyenadna",
        "caduceus",
        "nt6",
        "nt3",
        "splicebert",
        "dnabert3",
        "dnabert6",
        "dnabert3-json",
        "dnabert2",
        "grover",
        "gena",
        "gena-t2t",
        "plantcaduceus",
    ] {
        let tokenizer = tokenizer(name);
        let bare = tokenizer.encode("", None);
        for text in texts {
            for max in [None, Some(0), Some(1), Some(3), Some(64)] {
                let ids = tokenizer.encode(text, max);
                assert!(
                    ids.iter().all(|&id| (id as usize) < tokenizer.vocab_size()),
                    "{name}: {text:?} {ids:?}"
                );
                assert!(
                    ids.len() >= bare.len(),
                    "{name}: {text:?} lost its special tokens"
                );
                if let Some(max) = max {
                    assert!(
                        ids.len() <= max.max(bare.len()),
                        "{name}: {text:?} {ids:?} longer than {max}"
                    );
                }
            }
        }
    }
}

/// GPT-2's byte-level BPE (dnagpt's gpt2_gene models): the ByteLevel pre-tokenizer's split
/// pattern (the corpus's spaces, tabs and punctuation), its byte alphabet (NUL, DEL) and its
/// post-processor, which adds no token.
#[test]
fn gpt2_byte_level_bpe_matches_hf() {
    check_against_oracle(&["gpt2"]);
}
