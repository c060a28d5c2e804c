//! The Burn encoders give the same embeddings on the CPU backend (flex) and on wgpu. Here wgpu
//! runs on whatever Vulkan driver the machine has — Mesa lavapipe in CI — so the GPU code path
//! (WGSL/SPIR-V kernels, buffer reads) is exercised without a GPU.
#![cfg(feature = "burn")]

use geneb::encoder::{BackendKind, Encoder};

fn sequences() -> Vec<String> {
    // Deterministic, varied: lengths 1…~600, some N runs, a homopolymer.
    let bases = b"ACGT";
    let mut state = 12345u32;
    let mut out: Vec<String> = (0..40)
        .map(|i| {
            let len = 1 + (i * 37) % 600;
            (0..len)
                .map(|p| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    if (p + i) % 97 < 3 {
                        'N'
                    } else {
                        bases[(state >> 30) as usize] as char
                    }
                })
                .collect()
        })
        .collect();
    out.push("A".repeat(300));
    out
}

fn embed(spec: &str, backend: BackendKind, seqs: &[String]) -> ndarray::Array2<f32> {
    let encoder = pollster::block_on(Encoder::from_spec(&spec.parse().unwrap(), backend)).unwrap_or_else(|e| {
        panic!(
            "{e}\n(the wgpu parity test needs a Vulkan driver: apt-get install mesa-vulkan-drivers)"
        )
    });
    pollster::block_on(encoder.embed(seqs)).expect("embedding")
}

#[test]
fn random_cnn_cpu_and_wgpu_agree_within_1e_4() {
    let seqs = sequences();
    let cpu = embed("random-cnn:7", BackendKind::Cpu, &seqs);
    let gpu = embed("random-cnn:7", BackendKind::Wgpu, &seqs);
    assert_eq!(cpu.dim(), gpu.dim());
    let worst = cpu
        .iter()
        .zip(gpu.iter())
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst <= 1e-4, "max |cpu - wgpu| = {worst}");
    assert!(cpu.iter().any(|&v| v > 0.0), "embeddings are not all zero");
}

#[test]
fn random_cnn_is_seeded_and_batch_independent() {
    let seqs = sequences();
    let all = embed("random-cnn:7", BackendKind::Cpu, &seqs);
    assert_eq!(
        all,
        embed("random-cnn:7", BackendKind::Cpu, &seqs),
        "same seed, same embeddings"
    );
    assert_ne!(
        all,
        embed("random-cnn:8", BackendKind::Cpu, &seqs),
        "another seed, another network"
    );
    // A sequence embedded alone equals its row from the padded batch.
    for i in [0, 5, 40] {
        let alone = embed("random-cnn:7", BackendKind::Cpu, &seqs[i..=i]);
        let worst = alone
            .row(0)
            .iter()
            .zip(all.row(i))
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            worst <= 1e-5,
            "sequence {i}: alone vs batched differ by {worst}"
        );
    }
}

/// Native CPU embeddings of a few sequences, committed so the browser tests can check that the
/// wasm build (flex in wasm and WebGPU) computes the same network. `GENEB_BLESS=1` rewrites it
/// after a deliberate change to the encoder.
#[test]
fn native_embeddings_match_the_committed_fixture() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/embeddings/random_cnn_7.json");
    let seqs: Vec<String> = sequences().into_iter().step_by(4).collect();
    let x = embed("random-cnn:7", BackendKind::Cpu, &seqs);
    let current = serde_json::json!({
        "model": "random-cnn:7",
        "sequences": seqs,
        "dim": x.ncols(),
        "values": x.iter().copied().collect::<Vec<f32>>(),
    });
    if std::env::var_os("GENEB_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string(&current).unwrap()).unwrap();
    }
    let committed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("fixture (GENEB_BLESS=1 writes it)"))
            .unwrap();
    assert_eq!(committed["sequences"], current["sequences"]);
    let worst = committed["values"]
        .as_array()
        .unwrap()
        .iter()
        .zip(x.iter())
        .map(|(a, b)| (a.as_f64().unwrap() as f32 - b).abs())
        .fold(0f32, f32::max);
    assert!(
        worst <= 1e-6,
        "native embeddings drifted from the fixture by {worst}"
    );
}
