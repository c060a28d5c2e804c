#![no_main]

#[path = "../../tests/support/parsers.rs"]
mod parsers;

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsers::saved_probe(data));
