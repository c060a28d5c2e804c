//! The `tokenizers` pipeline — normalizer, pre-tokenizer, model (BPE or WordPiece), post-processor
//! — read from a `tokenizer.json` (DNABERT-2, GROVER, GENA-LM, PlantCaduceus), or built for a BERT `vocab.txt` the way
//! transformers' `BertTokenizer` builds it (SpliceBERT, DNABERT). Only the components DNA
//! tokenizers use are implemented; any other is refused by name.

use super::bpe::Bpe;
use super::trie::Trie;
use super::{Kind, Settings, TokenSetting, Tokenizer, lookup, read_vocab_txt};
use crate::Result;
use crate::checkpoint::ModelFiles;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

pub(super) struct Pipeline {
    input: InputFormat,
    normalizers: Vec<Normalizer>,
    pre_tokenizers: Vec<PreTokenizer>,
    model: Model,
}

/// How a BERT model over `vocab.txt` is fed a sequence: its vocabulary says whether it reads
/// single nucleotides (SpliceBERT) or overlapping k-mers (DNABERT), as words separated by spaces.
#[derive(Clone, Copy, PartialEq)]
enum InputFormat {
    AsIs,
    Kmers(usize),
}

enum Normalizer {
    /// `clean_text` drops control characters and makes whitespace a space; CJK ideographs get
    /// spaces around them. Accent stripping changes only non-ASCII text (see the module doc).
    Bert {
        clean_text: bool,
        chinese_chars: bool,
        lowercase: bool,
    },
    Lowercase,
    /// Whitespace removed from either end.
    Strip {
        left: bool,
        right: bool,
    },
    /// Every match replaced by `content` (GENA-LM: runs of ten or more N become one `-`).
    Replace {
        pattern: Pattern,
        content: String,
    },
}

enum PreTokenizer {
    /// `\w+|[^\w\s]+`
    Whitespace,
    WhitespaceSplit,
    /// Splits on whitespace and makes each punctuation character a word.
    Bert,
    /// Splits at every match; `isolated` keeps each match as a word of its own, else drops it.
    Split {
        pattern: Pattern,
        isolated: bool,
    },
    /// GPT-2's byte-level step: a space before the text where `add_prefix_space` asks, the text
    /// split by GPT-2's pattern where `use_regex` asks, then each byte written as the printable
    /// character `bytes_to_unicode` gives it (the vocabulary's alphabet).
    ByteLevel {
        add_prefix_space: bool,
        /// GPT-2's pattern without its `\s+(?!\S)` lookahead, which `gpt2_pieces` applies.
        pattern: Option<regex::Regex>,
    },
}

/// GPT-2's split pattern (`'s|'t|…| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`) less
/// the lookahead alternative, which the regex crate cannot express.
const GPT2_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+";

/// The pieces GPT-2's pattern cuts `text` into: a run of whitespace before a non-space
/// character gives up its last character to the piece after it (`\s+(?!\S)`), so " word" keeps
/// its space.
fn gpt2_pieces(pattern: &regex::Regex, text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while let Some(found) = pattern.find_at(text, start) {
        let mut end = found.end();
        let piece = found.as_str();
        let followed_by_text = text[end..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace());
        if piece.chars().all(char::is_whitespace) && piece.chars().count() > 1 && followed_by_text {
            end -= piece.chars().next_back().map_or(0, char::len_utf8);
        }
        if end == found.start() {
            break;
        }
        pieces.push(text[found.start()..end].to_string());
        start = end;
    }
    pieces
}

/// GPT-2's `bytes_to_unicode`: the printable bytes as themselves, every other byte as the
/// character 256 + its rank among them.
fn byte_char(byte: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(byte) {
        return char::from(byte);
    }
    let rank = (0..byte).filter(|&b| !printable(b)).count() as u32;
    char::from_u32(256 + rank).expect("256 + a rank below 256 is a character")
}

/// A `tokenizer.json` pattern: `{"String": …}` matches literally, `{"Regex": …}` as a regex.
enum Pattern {
    Literal(String),
    Regex(regex::Regex),
}

impl Pattern {
    fn parse(json: &Value, bad: Bad) -> Result<Pattern> {
        if let Some(literal) = json["String"].as_str() {
            return Ok(Pattern::Literal(literal.to_string()));
        }
        let Some(source) = json["Regex"].as_str() else {
            return Err(bad(format!(
                "pattern {json} is neither a String nor a Regex"
            )));
        };
        regex::Regex::new(source).map(Pattern::Regex).map_err(|e| {
            bad(format!(
                "pattern /{source}/ is not a regex geneb can read ({e})"
            ))
        })
    }

    /// The byte ranges of the non-overlapping matches, left to right.
    fn matches(&self, text: &str) -> Vec<(usize, usize)> {
        match self {
            // An empty literal would match everywhere; tokenizers splits nothing on it either.
            Pattern::Literal(literal) if literal.is_empty() => Vec::new(),
            Pattern::Literal(literal) => text
                .match_indices(literal.as_str())
                .map(|(start, m)| (start, start + m.len()))
                .collect(),
            Pattern::Regex(regex) => regex
                .find_iter(text)
                .filter(|m| !m.is_empty())
                .map(|m| (m.start(), m.end()))
                .collect(),
        }
    }
}

enum Model {
    WordPiece(WordPiece),
    Bpe(Bpe),
}

struct WordPiece {
    /// The vocabulary as a trie: a longest match costs at most the word's length, whatever
    /// the longest entry (see `trie`).
    trie: Trie,
    unk: u32,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
}

impl WordPiece {
    fn new(
        vocab: &HashMap<String, u32>,
        unk: u32,
        continuing_subword_prefix: String,
        max_input_chars_per_word: usize,
    ) -> WordPiece {
        WordPiece {
            trie: Trie::new(vocab.iter().map(|(token, &id)| (token.as_str(), id))),
            unk,
            continuing_subword_prefix,
            max_input_chars_per_word,
        }
    }
}

/// How many characters of text a pipeline may make of one character of sequence: DNABERT's
/// 6-mers under the BERT normalizer make at most 42 (7 per base, CJK spacing 3, lower-casing
/// 2). A file whose steps could make more (a `Replace` writing a megabyte per base, 20,000-mers)
/// is refused when it is read, so every sequence's text stays proportional to the sequence.
const MAX_GROWTH: u64 = 64;

impl Pipeline {
    /// Refuses a pipeline whose text could grow past `MAX_GROWTH` characters per character.
    fn new(
        input: InputFormat,
        normalizers: Vec<Normalizer>,
        pre_tokenizers: Vec<PreTokenizer>,
        model: Model,
        bad: Bad,
    ) -> Result<Pipeline> {
        let input_growth = match input {
            InputFormat::AsIs => 1,
            InputFormat::Kmers(k) => k as u64 + 1,
        };
        let growth = normalizers
            .iter()
            .map(Normalizer::growth)
            .chain(pre_tokenizers.iter().map(PreTokenizer::growth))
            .try_fold(input_growth, |g, step| g.checked_mul(step))
            .filter(|&g| g <= MAX_GROWTH);
        if growth.is_none() {
            return Err(bad(format!(
                "its steps can make more than {MAX_GROWTH} characters of text of one character \
                 of sequence (overlapping k-mers make k + 1, a Replace 1 + its content's length): \
                 not a tokenizer geneb runs"
            )));
        }
        Ok(Pipeline {
            input,
            normalizers,
            pre_tokenizers,
            model,
        })
    }

    pub(super) fn tokens(&self, sequence: &str) -> Vec<u32> {
        let mut text = match self.input {
            InputFormat::AsIs => sequence.to_string(),
            InputFormat::Kmers(k) => spaced_kmers(sequence, k),
        };
        for normalizer in &self.normalizers {
            text = normalizer.apply(&text);
        }
        let mut words = vec![text];
        for pre_tokenizer in &self.pre_tokenizers {
            words = words.iter().flat_map(|w| pre_tokenizer.split(w)).collect();
        }
        let mut ids = Vec::new();
        for word in &words {
            match &self.model {
                Model::WordPiece(model) => model.tokenize_word(word, &mut ids),
                Model::Bpe(model) => model.tokenize_word(word, &mut ids),
            }
        }
        ids
    }
}

/// Overlapping k-mers joined by spaces, as DNABERT's `seq2kmer` writes them (k = 1: the
/// characters spaced, as SpliceBERT is fed); a sequence shorter than k has none.
fn spaced_kmers(sequence: &str, k: usize) -> String {
    let chars: Vec<char> = sequence.chars().collect();
    chars
        .windows(k)
        .map(|w| w.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

impl Normalizer {
    /// The most characters one character of input becomes.
    fn growth(&self) -> u64 {
        match self {
            // CJK spacing makes 3 of 1; lower-casing makes at most 2 of 1 (U+0130).
            Normalizer::Bert {
                chinese_chars,
                lowercase,
                ..
            } => (if *chinese_chars { 3 } else { 1 }) * (if *lowercase { 2 } else { 1 }),
            Normalizer::Lowercase => 2,
            Normalizer::Strip { .. } => 1,
            // A pattern matches at most once per character (and once at the end, empty).
            Normalizer::Replace { content, .. } => 1 + content.chars().count() as u64,
        }
    }

    fn apply(&self, text: &str) -> String {
        match self {
            Normalizer::Lowercase => text.to_lowercase(),
            Normalizer::Strip { left, right } => {
                let text = if *left { text.trim_start() } else { text };
                let text = if *right { text.trim_end() } else { text };
                text.to_string()
            }
            Normalizer::Replace { pattern, content } => {
                let mut out = String::with_capacity(text.len());
                let mut end = 0;
                for (start, stop) in pattern.matches(text) {
                    out.push_str(&text[end..start]);
                    out.push_str(content);
                    end = stop;
                }
                out.push_str(&text[end..]);
                out
            }
            Normalizer::Bert {
                clean_text,
                chinese_chars,
                lowercase,
            } => {
                let mut out = String::with_capacity(text.len());
                for c in text.chars() {
                    if *clean_text {
                        if c == '\0' || c == '\u{fffd}' || (c.is_control() && !"\t\n\r".contains(c))
                        {
                            continue;
                        }
                        if c.is_whitespace() {
                            out.push(' ');
                            continue;
                        }
                    }
                    if *chinese_chars && is_chinese_char(c) {
                        out.extend([' ', c, ' ']);
                    } else {
                        out.push(c);
                    }
                }
                if *lowercase { out.to_lowercase() } else { out }
            }
        }
    }
}

impl PreTokenizer {
    /// The most characters one character of input becomes: a byte-level character is up to 4
    /// bytes, each written as one character.
    fn growth(&self) -> u64 {
        match self {
            PreTokenizer::ByteLevel { .. } => 4,
            _ => 1,
        }
    }

    fn split(&self, text: &str) -> Vec<String> {
        match self {
            PreTokenizer::ByteLevel {
                add_prefix_space,
                pattern,
            } => {
                let spaced;
                let text = if *add_prefix_space && !text.starts_with(' ') {
                    spaced = format!(" {text}");
                    spaced.as_str()
                } else {
                    text
                };
                let pieces = match pattern {
                    Some(pattern) => gpt2_pieces(pattern, text),
                    None => vec![text.to_string()],
                };
                pieces
                    .iter()
                    .map(|piece| piece.bytes().map(byte_char).collect())
                    .collect()
            }
            PreTokenizer::WhitespaceSplit => text.split_whitespace().map(String::from).collect(),
            PreTokenizer::Whitespace => {
                // Runs of word characters, runs of other non-space characters.
                let is_word = |c: char| c.is_alphanumeric() || c == '_';
                let mut words: Vec<String> = Vec::new();
                let mut current_is_word = None;
                for c in text.chars() {
                    if c.is_whitespace() {
                        current_is_word = None;
                        continue;
                    }
                    let word_char = is_word(c);
                    match words.last_mut() {
                        Some(last) if current_is_word == Some(word_char) => last.push(c),
                        _ => words.push(c.to_string()),
                    }
                    current_is_word = Some(word_char);
                }
                words
            }
            PreTokenizer::Split { pattern, isolated } => {
                let mut words = Vec::new();
                let mut end = 0;
                for (start, stop) in pattern.matches(text) {
                    words.push(&text[end..start]);
                    if *isolated {
                        words.push(&text[start..stop]);
                    }
                    end = stop;
                }
                words.push(&text[end..]);
                words
                    .into_iter()
                    .filter(|w| !w.is_empty())
                    .map(String::from)
                    .collect()
            }
            PreTokenizer::Bert => {
                let mut words = Vec::new();
                for chunk in text.split_whitespace() {
                    let mut word = String::new();
                    for c in chunk.chars() {
                        if c.is_ascii_punctuation() {
                            if !word.is_empty() {
                                words.push(std::mem::take(&mut word));
                            }
                            words.push(c.to_string());
                        } else {
                            word.push(c);
                        }
                    }
                    if !word.is_empty() {
                        words.push(word);
                    }
                }
                words
            }
        }
    }
}

impl WordPiece {
    /// Greedy longest-match-first: the longest vocabulary prefix, then the longest
    /// `##`-continuation, and so on; a word that cannot be covered is one `[UNK]`.
    fn tokenize_word(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > self.max_input_chars_per_word {
            out.push(self.unk);
            return;
        }
        let continuing = self.trie.walk(Trie::ROOT, &self.continuing_subword_prefix);
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let from = if start == 0 {
                Some(Trie::ROOT)
            } else {
                continuing
            };
            let found = from.and_then(|from| self.trie.longest_match(from, &chars[start..]));
            let Some((id, len)) = found else {
                out.push(self.unk);
                return;
            };
            pieces.push(id);
            start += len;
        }
        out.extend(pieces);
    }
}

/// transformers' `BertTokenizer` over `vocab.txt`: BertNormalizer (lower-casing unless
/// `do_lower_case` is false), BertPreTokenizer, WordPiece with `##`, then [CLS] … [SEP].
pub(super) fn bert_from_vocab(files: &ModelFiles, settings: &Settings) -> Result<Tokenizer> {
    const FILE: &str = "vocab.txt";
    let tokens = read_vocab_txt(files)?;
    let vocab: HashMap<String, u32> = tokens
        .iter()
        .enumerate()
        .map(|(id, token)| (token.clone(), id as u32))
        .collect();
    let special = |key: &str, default: &str| -> Result<u32> {
        let name = settings.token_or(key, default).unwrap_or(default.into());
        lookup(&vocab, settings, FILE, key, &name)
    };
    let (cls, sep, unk, pad) = (
        special("cls_token", "[CLS]")?,
        special("sep_token", "[SEP]")?,
        special("unk_token", "[UNK]")?,
        special("pad_token", "[PAD]")?,
    );
    let (input, description) = input_format(tokens.iter().map(String::as_str));
    let vocab_size = tokens.len();
    Ok(Tokenizer {
        kind: Kind::Pipeline(Pipeline::new(
            input,
            vec![Normalizer::Bert {
                clean_text: true,
                chinese_chars: settings.bool_or("tokenize_chinese_chars", true),
                lowercase: settings.bool_or("do_lower_case", true),
            }],
            vec![PreTokenizer::Bert],
            Model::WordPiece(WordPiece::new(&vocab, unk, "##".into(), 100)),
            &|message| settings.error(FILE, message),
        )?),
        prefix: vec![cls],
        suffix: vec![sep],
        pad_id: pad,
        vocab_size,
        model_max_length: None,
        pads_left: false,
        description: format!("WordPiece (vocab.txt{description})"),
    })
}

/// How a WordPiece model over nucleotide words is fed, from its vocabulary: if every entry
/// that is not a bracketed special token has one length k, the model reads overlapping k-mers
/// (k = 1: single nucleotides); otherwise the sequence goes in as it is. Also gives the
/// description's detail.
fn input_format<'t>(tokens: impl Iterator<Item = &'t str>) -> (InputFormat, String) {
    let mut lengths = tokens
        .filter(|t| !t.is_empty() && !is_bracketed(t))
        .map(|t| t.chars().count());
    let k = lengths.next().filter(|&k| lengths.all(|n| n == k));
    match k {
        Some(1) => (InputFormat::Kmers(1), ", single nucleotides".to_string()),
        Some(k) => (InputFormat::Kmers(k), format!(", overlapping {k}-mers")),
        None => (InputFormat::AsIs, String::new()),
    }
}

/// `[CLS]`, `[UNK]`, …: BERT vocabularies' special tokens.
fn is_bracketed(token: &str) -> bool {
    token.starts_with('[') && token.ends_with(']')
}

/// A `tokenizer.json` as the `tokenizers` library writes it.
pub(super) fn from_tokenizer_json(files: &ModelFiles, settings: &Settings) -> Result<Tokenizer> {
    const FILE: &str = "tokenizer.json";
    let bad = |message: String| settings.error(FILE, message);
    let bytes = files
        .get(FILE)
        .ok_or_else(|| bad("the model's files have none".into()))?;
    let json: Value =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not valid JSON ({e})")))?;
    let model_json = &json["model"];
    let model_type = model_json["type"].as_str().unwrap_or("(none)");
    // Read in place: the vocabulary is most of the file, and a copy of it is most of the time.
    let vocab = HashMap::<String, u32>::deserialize(&model_json["vocab"])
        .map_err(|e| bad(format!("model.vocab is not a token → id map ({e})")))?;
    let mut token_ids = vocab.clone();
    for added in json["added_tokens"].as_array().into_iter().flatten() {
        let (Some(content), Some(id)) = (added["content"].as_str(), added["id"].as_u64()) else {
            return Err(bad("an added token lacks its content or id".into()));
        };
        if added["special"] != Value::Bool(true) {
            return Err(bad(format!(
                "added token '{content}' is not a special token; geneb does not split \
                 sequences on added tokens"
            )));
        }
        token_ids.insert(content.to_string(), id as u32);
    }
    let mut input = (InputFormat::AsIs, String::new());
    let model = match model_type {
        "BPE" => Model::Bpe(bpe_model(model_json, vocab, &bad)?),
        "WordPiece" => {
            let unk_name = model_json["unk_token"].as_str().unwrap_or("[UNK]");
            let unk = *vocab
                .get(unk_name)
                .ok_or_else(|| bad(format!("the unk token '{unk_name}' is not in model.vocab")))?;
            input = input_format(vocab.keys().map(String::as_str));
            Model::WordPiece(WordPiece::new(
                &vocab,
                unk,
                model_json["continuing_subword_prefix"]
                    .as_str()
                    .unwrap_or("##")
                    .to_string(),
                model_json["max_input_chars_per_word"]
                    .as_u64()
                    .unwrap_or(100) as usize,
            ))
        }
        other => {
            return Err(bad(format!(
                "model type {other} is not supported (geneb reads BPE and WordPiece)"
            )));
        }
    };
    let normalizers = parse_normalizer(&json["normalizer"], &bad)?;
    let pre_tokenizers = parse_pre_tokenizer(&json["pre_tokenizer"], &bad)?;
    let (prefix, suffix) = parse_post_processor(&json["post_processor"], &bad)?;
    let pad_name = match settings.token("pad_token") {
        TokenSetting::Named(name) => name,
        _ => match json["padding"]["pad_token"].as_str() {
            Some(name) => name.to_string(),
            // A decoder's tokenizer often has no pad token: its extractors pad with the eos
            // token (omnina.py sets `pad_token = eos_token`), which the mask keeps out.
            None if !token_ids.contains_key("[PAD]") => match settings.token("eos_token") {
                TokenSetting::Named(eos) => eos,
                _ => "[PAD]".to_string(),
            },
            None => "[PAD]".to_string(),
        },
    };
    let pad_id = lookup(&token_ids, settings, FILE, "pad_token", &pad_name)?;
    let vocab_size = token_ids.values().max().map_or(0, |&id| id as usize + 1);
    Ok(Tokenizer {
        kind: Kind::Pipeline(Pipeline::new(
            input.0,
            normalizers,
            pre_tokenizers,
            model,
            &bad,
        )?),
        prefix,
        suffix,
        pad_id,
        vocab_size,
        model_max_length: None,
        pads_left: false,
        description: format!("{model_type} (tokenizer.json{})", input.1),
    })
}

fn bpe_model(model: &Value, vocab: HashMap<String, u32>, bad: Bad) -> Result<Bpe> {
    if model["byte_fallback"] == Value::Bool(true) {
        return Err(bad("BPE with byte_fallback is not supported".into()));
    }
    if model["dropout"].as_f64().is_some_and(|p| p > 0.0) {
        return Err(bad(
            "BPE dropout makes tokens random; geneb needs a deterministic tokenizer".into(),
        ));
    }
    let text = |key: &str| model[key].as_str().map(String::from);
    let continuing_subword_prefix = text("continuing_subword_prefix");
    let unk = match model["unk_token"].as_str() {
        None => None,
        Some(name) => Some(
            *vocab
                .get(name)
                .ok_or_else(|| bad(format!("the unk token '{name}' is not in model.vocab")))?,
        ),
    };
    let mut merges = HashMap::new();
    for (rank, merge) in model["merges"].as_array().into_iter().flatten().enumerate() {
        // Written as "a b" by older versions of the library, as ["a", "b"] by newer ones.
        let pair = match merge {
            Value::String(s) => s.split_once(' '),
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(a), Value::String(b)] => Some((a.as_str(), b.as_str())),
                _ => None,
            },
            _ => None,
        };
        let (a, b) = pair.ok_or_else(|| bad(format!("merge {rank} is malformed: {merge}")))?;
        let id = |token: &str| {
            vocab.get(token).copied().ok_or_else(|| {
                bad(format!(
                    "merge {rank} uses '{token}', which is not in model.vocab"
                ))
            })
        };
        let right = continuing_subword_prefix
            .as_deref()
            .and_then(|p| b.strip_prefix(p))
            .unwrap_or(b);
        let pair = (id(a)?, id(b)?);
        merges.insert(pair, (rank as u32, id(&format!("{a}{right}"))?));
    }
    Ok(Bpe {
        merges,
        unk,
        continuing_subword_prefix,
        end_of_word_suffix: text("end_of_word_suffix"),
        fuse_unk: model["fuse_unk"] == Value::Bool(true),
        ignore_merges: model["ignore_merges"] == Value::Bool(true),
        vocab,
    })
}

type Bad<'a> = &'a dyn Fn(String) -> crate::Error;

/// A `Sequence` component: its parts in order, each parsed by `parse`.
fn flatten<T>(parts: &Value, bad: Bad, parse: fn(&Value, Bad) -> Result<Vec<T>>) -> Result<Vec<T>> {
    let mut all = Vec::new();
    for part in parts.as_array().into_iter().flatten() {
        all.extend(parse(part, bad)?);
    }
    Ok(all)
}

fn parse_normalizer(json: &Value, bad: Bad) -> Result<Vec<Normalizer>> {
    let flag = |key: &str, default: bool| json[key].as_bool().unwrap_or(default);
    Ok(match json["type"].as_str() {
        None if json.is_null() => Vec::new(),
        Some("Sequence") => flatten(&json["normalizers"], bad, parse_normalizer)?,
        Some("BertNormalizer") => vec![Normalizer::Bert {
            clean_text: flag("clean_text", true),
            chinese_chars: flag("handle_chinese_chars", true),
            lowercase: flag("lowercase", true),
        }],
        Some("Lowercase") => vec![Normalizer::Lowercase],
        Some("Strip") => vec![Normalizer::Strip {
            left: flag("strip_left", true),
            right: flag("strip_right", true),
        }],
        Some("Replace") => vec![Normalizer::Replace {
            pattern: Pattern::parse(&json["pattern"], bad)?,
            content: json["content"]
                .as_str()
                .ok_or_else(|| bad("normalizer Replace has no content".into()))?
                .to_string(),
        }],
        // Unicode normal forms leave ASCII text unchanged.
        Some("NFC" | "NFD" | "NFKC" | "NFKD") => Vec::new(),
        other => {
            return Err(bad(format!(
                "normalizer {} is not supported (geneb reads BertNormalizer, Lowercase, Strip, \
                 Replace, the Unicode normal forms and Sequence)",
                other.unwrap_or("without a type")
            )));
        }
    })
}

fn parse_pre_tokenizer(json: &Value, bad: Bad) -> Result<Vec<PreTokenizer>> {
    Ok(match json["type"].as_str() {
        None if json.is_null() => Vec::new(),
        Some("Sequence") => flatten(&json["pretokenizers"], bad, parse_pre_tokenizer)?,
        Some("Whitespace") => vec![PreTokenizer::Whitespace],
        Some("WhitespaceSplit") => vec![PreTokenizer::WhitespaceSplit],
        Some("BertPreTokenizer") => vec![PreTokenizer::Bert],
        Some("ByteLevel") => {
            let flag = |key: &str, default: bool| json[key].as_bool().unwrap_or(default);
            let pattern = flag("use_regex", true).then(|| {
                regex::Regex::new(GPT2_PATTERN).expect("GPT-2's pattern is a valid regex")
            });
            vec![PreTokenizer::ByteLevel {
                add_prefix_space: flag("add_prefix_space", true),
                pattern,
            }]
        }
        Some("Split") => {
            if json["invert"] == Value::Bool(true) {
                return Err(bad(
                    "pre-tokenizer Split with invert: true is not supported".into(),
                ));
            }
            let isolated = match json["behavior"].as_str() {
                Some("Isolated") => true,
                Some("Removed") => false,
                other => {
                    return Err(bad(format!(
                        "pre-tokenizer Split with behavior {} is not supported (geneb reads \
                         Isolated and Removed)",
                        other.unwrap_or("(none)")
                    )));
                }
            };
            vec![PreTokenizer::Split {
                pattern: Pattern::parse(&json["pattern"], bad)?,
                isolated,
            }]
        }
        other => {
            return Err(bad(format!(
                "pre-tokenizer {} is not supported (geneb reads Whitespace, WhitespaceSplit, \
                 BertPreTokenizer, Split, ByteLevel and Sequence)",
                other.unwrap_or("without a type")
            )));
        }
    })
}

/// The special-token ids before and after a single sequence.
fn parse_post_processor(json: &Value, bad: Bad) -> Result<(Vec<u32>, Vec<u32>)> {
    let pair_id = |key: &str| {
        json[key][1]
            .as_u64()
            .map(|id| id as u32)
            .ok_or_else(|| bad(format!("post_processor.{key} is not a [token, id] pair")))
    };
    match json["type"].as_str() {
        None if json.is_null() => Ok((Vec::new(), Vec::new())),
        // GPT-2's: it trims offsets and adds no token.
        Some("ByteLevel") => Ok((Vec::new(), Vec::new())),
        Some("BertProcessing" | "RobertaProcessing") => {
            Ok((vec![pair_id("cls")?], vec![pair_id("sep")?]))
        }
        Some("TemplateProcessing") => {
            let (mut prefix, mut suffix) = (Vec::new(), Vec::new());
            let mut seen_sequence = false;
            for piece in json["single"].as_array().into_iter().flatten() {
                if piece["Sequence"]["id"] == "A" && !seen_sequence {
                    seen_sequence = true;
                } else if let Some(name) = piece["SpecialToken"]["id"].as_str() {
                    let ids: Vec<u32> =
                        serde_json::from_value(json["special_tokens"][name]["ids"].clone())
                            .map_err(|_| {
                                bad(format!("post_processor: special token {name} has no ids"))
                            })?;
                    if seen_sequence {
                        &mut suffix
                    } else {
                        &mut prefix
                    }
                    .extend(ids);
                } else {
                    return Err(bad(format!(
                        "post_processor: template piece {piece} is not supported"
                    )));
                }
            }
            if !seen_sequence {
                return Err(bad("post_processor: the single template has no $A".into()));
            }
            Ok((prefix, suffix))
        }
        other => Err(bad(format!(
            "post-processor {} is not supported (geneb reads TemplateProcessing, BertProcessing, \
             RobertaProcessing and ByteLevel)",
            other.unwrap_or("without a type")
        ))),
    }
}
