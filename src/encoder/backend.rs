//! Where the Burn encoders run: Burn's pure-Rust CPU backend (flex) or its wgpu backend —
//! Vulkan/Metal natively, WebGPU in the browser. The wgpu runtime can be initialised once per
//! process (or tab), so its device is cached and cloned.

use super::{BackendKind, Precision};
use crate::{Error, Result};
use burn::tensor::Device;

/// A ready device and what it is, for the result's `protocol.backend` block.
#[derive(Debug, Clone)]
pub struct Compute {
    pub device: Device,
    pub kind: BackendKind,
    /// The adapter's name (a GPU, lavapipe, SwiftShader) or the CPU backend's name.
    pub adapter: String,
    /// What the device's float tensors hold (f16 only on wgpu, when asked for).
    pub precision: Precision,
}

impl Compute {
    /// A tensor's values on the host, read asynchronously (a synchronous read panics in wasm).
    pub async fn read<const D: usize>(&self, tensor: burn::tensor::Tensor<D>) -> Result<Vec<f32>> {
        #[cfg(all(feature = "wgpu", not(target_arch = "wasm32")))]
        launches::note_read();
        let data = tensor.into_data_async().await.map_err(|e| {
            Error::new(format!(
                "reading embeddings from the {:?} backend failed: {e:?}",
                self.kind
            ))
        })?;
        // An f16 device's values are widened here: callers always get f32.
        data.convert::<f32>().try_to_vec::<f32>().map_err(|e| {
            Error::new(format!(
                "unexpected embedding data type from the backend: {e:?}"
            ))
        })
    }
}

pub const CPU_ADAPTER: &str = "burn-flex (pure-Rust CPU)";

/// The most floats one tensor may hold on `device`: on wgpu ¾ of the adapter's largest storage
/// binding (the device is made with the adapter's limits; a quarter is kept free for backends
/// that pad), never less than WebGPU's default; elsewhere that default, which keeps the CPU's
/// batches as they were.
pub fn max_buffer_floats(device: &Device) -> usize {
    if *device == Device::flex() {
        return DEFAULT_BUFFER_FLOATS;
    }
    WGPU_BUFFER_FLOATS.load(std::sync::atomic::Ordering::Relaxed)
}

/// WebGPU's default limit for one storage buffer binding, 128 MiB, less a quarter.
const DEFAULT_BUFFER_FLOATS: usize = 24 << 20;
static WGPU_BUFFER_FLOATS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(DEFAULT_BUFFER_FLOATS);

#[cfg(feature = "wgpu")]
fn note_binding_limit(setup: &burn::tensor::wgpu::WgpuSetup) {
    let bytes = setup.adapter.limits().max_storage_buffer_binding_size as usize;
    let floats = (bytes / size_of::<f32>() / 4 * 3).max(DEFAULT_BUFFER_FLOATS);
    WGPU_BUFFER_FLOATS.store(floats, std::sync::atomic::Ordering::Relaxed);
}

pub fn cpu() -> Compute {
    Compute {
        device: Device::flex(),
        kind: BackendKind::Cpu,
        adapter: CPU_ADAPTER.to_string(),
        precision: Precision::F32,
    }
}

/// The wgpu device, initialised on first use. An error (no adapter, a driver failure) is
/// returned rather than panicking, so callers can fall back to the CPU and say so.
#[cfg(feature = "wgpu")]
pub async fn wgpu() -> Result<Compute> {
    cached::get_or_init().await
}

/// A build without Burn's GPU backend (the page's threaded core) runs on the CPU alone.
#[cfg(not(feature = "wgpu"))]
pub async fn wgpu() -> Result<Compute> {
    Err(Error::new(
        "this build of geneb has no GPU backend (the threaded page core is CPU-only); run on the CPU backend instead",
    ))
}

#[cfg(feature = "wgpu")]
fn init_error(e: impl std::fmt::Display) -> Error {
    // Browser failures carry a JS stack after the first line; the user needs only the reason.
    let reason = e.to_string();
    let reason = reason.lines().next().unwrap_or_default().trim();
    Error::new(format!(
        "no usable GPU through wgpu ({reason}); run on the CPU backend instead"
    ))
}

#[cfg(feature = "wgpu")]
/// The adapter's name and API. Browsers hide the name from wgpu (it is empty there), so the
/// page's own description of its adapter, when given, names it instead.
fn describe(setup: &burn::tensor::wgpu::WgpuSetup, page_label: Option<&str>) -> String {
    let info = setup.adapter.get_info();
    let name = match page_label.map(str::trim) {
        Some(label) if info.name.trim().is_empty() && !label.is_empty() => label.to_string(),
        _ => info.name,
    };
    format!("{name} ({:?}, {:?})", info.backend, info.device_type)
}

#[cfg(all(feature = "wgpu", not(target_arch = "wasm32")))]
pub use cached::set_wgpu_precision;

#[cfg(all(feature = "wgpu", not(target_arch = "wasm32")))]
mod cached {
    use super::*;
    use burn::tensor::FloatDType;
    use burn::tensor::wgpu::wgpu::Features;
    use std::sync::{Mutex, OnceLock};

    static WGPU: OnceLock<std::result::Result<Compute, Error>> = OnceLock::new();
    static PRECISION: Mutex<Precision> = Mutex::new(Precision::F32);

    /// The precision the wgpu device is made with. Burn fixes a device's float type before its
    /// first tensor, and the device is one per process, so this must come before the first use
    /// of wgpu; asking for another precision afterwards is an error.
    pub fn set_wgpu_precision(precision: Precision) -> Result<()> {
        if let Some(Ok(compute)) = WGPU.get()
            && compute.precision != precision
        {
            return Err(Error::new(format!(
                "the wgpu device already computes in {:?}; the precision is chosen once per \
                 process, before the first wgpu model",
                compute.precision
            )));
        }
        *PRECISION.lock().unwrap_or_else(|e| e.into_inner()) = precision;
        Ok(())
    }

    pub async fn get_or_init() -> Result<Compute> {
        WGPU.get_or_init(|| {
            let (mut device, setup) = Device::wgpu_options()
                .init_with_setup()
                .map_err(init_error)?;
            let adapter = describe(&setup, None);
            note_binding_limit(&setup);
            let precision = *PRECISION.lock().unwrap_or_else(|e| e.into_inner());
            if precision == Precision::F16 {
                if !setup.adapter.features().contains(Features::SHADER_F16) {
                    return Err(Error::new(format!(
                        "f16 needs a GPU with shader-f16, and {adapter} has none; use \
                         --precision f32"
                    )));
                }
                device.configure(FloatDType::F16).map_err(|e| {
                    Error::new(format!("cannot compute in f16 on {adapter}: {e:?}"))
                })?;
            }
            Ok(Compute {
                device,
                kind: BackendKind::Wgpu,
                adapter,
                precision,
            })
        })
        .clone()
    }
}

#[cfg(all(feature = "wgpu", target_arch = "wasm32"))]
pub use cached::set_page_adapter_label;

#[cfg(all(feature = "wgpu", target_arch = "wasm32"))]
mod cached {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        // A tab has one thread; the first outcome, success or failure, is final like natively.
        static WGPU: RefCell<Option<std::result::Result<Compute, Error>>> = const { RefCell::new(None) };
        static PAGE_LABEL: RefCell<String> = const { RefCell::new(String::new()) };
    }

    /// How the page described its WebGPU adapter, to name it where wgpu cannot.
    pub fn set_page_adapter_label(label: &str) {
        PAGE_LABEL.with(|l| *l.borrow_mut() = label.to_string());
    }

    pub async fn get_or_init() -> Result<Compute> {
        if let Some(done) = WGPU.with(|c| c.borrow().clone()) {
            return done;
        }
        let outcome = match Device::wgpu_options().init_with_setup_async().await {
            Ok((device, setup)) => Ok(Compute {
                device: {
                    note_binding_limit(&setup);
                    device
                },
                kind: BackendKind::Wgpu,
                adapter: PAGE_LABEL.with(|l| describe(&setup, Some(&l.borrow()))),
                precision: Precision::F32,
            }),
            Err(e) => Err(init_error(e)),
        };
        WGPU.with(|c| *c.borrow_mut() = Some(outcome.clone()));
        outcome
    }
}

/// Kernel launches and host reads counted over a stretch of work (`geneb embed
/// --count-kernels`): what a forward pass costs on the wgpu backend in dispatches and round
/// trips. Launches come from cubecl's launch observer, which sees every kernel any Burn op
/// issues; reads are the calls to `Compute::read` (geneb's only read of a device tensor on the
/// wgpu path), so a read Burn made inside an op would not be counted here.
#[cfg(all(feature = "wgpu", not(target_arch = "wasm32")))]
pub mod launches {
    use burn::cubecl::config::{TypeNameFormatLevel, type_name_format};
    use burn::cubecl::logging::{LaunchObservation, LaunchObserver};
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    static READS: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn note_read() {
        READS.fetch_add(1, Ordering::Relaxed);
    }

    #[derive(Default)]
    struct ByKernel {
        counts: Mutex<BTreeMap<&'static str, usize>>,
        /// `GENEB_LAUNCH_ORDER=1`: also print each launch as it happens, to map launches to
        /// the ops of a forward pass (bench/README.md).
        print_order: bool,
    }

    impl LaunchObserver for ByKernel {
        fn launched(&self, kernel: &'static str) {
            if self.print_order {
                eprintln!(
                    "launch: {}",
                    type_name_format(kernel, TypeNameFormatLevel::Balanced)
                );
            }
            // A poisoned lock only means another counting thread panicked; keep counting.
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            *counts.entry(kernel).or_default() += 1;
        }
    }

    /// Counts from `start` until `finish`.
    pub struct Counting {
        counts: Arc<ByKernel>,
        _observation: LaunchObservation,
        reads_before: usize,
    }

    /// What was launched and read while counting.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Counts {
        pub launches: usize,
        pub reads: usize,
        /// (launches, kernel name shortened as cubecl's profiler shortens it), most first.
        pub by_kernel: Vec<(usize, String)>,
    }

    pub fn start() -> Counting {
        let counts = Arc::new(ByKernel {
            print_order: std::env::var_os("GENEB_LAUNCH_ORDER").is_some_and(|v| v == "1"),
            ..ByKernel::default()
        });
        Counting {
            _observation: LaunchObservation::new(counts.clone()),
            counts,
            reads_before: READS.load(Ordering::Relaxed),
        }
    }

    impl Counting {
        pub fn finish(self) -> Counts {
            let reads = READS.load(Ordering::Relaxed) - self.reads_before;
            let counts = self.counts.counts.lock().unwrap_or_else(|e| e.into_inner());
            let mut named: BTreeMap<String, usize> = BTreeMap::new();
            for (kernel, n) in counts.iter() {
                *named
                    .entry(type_name_format(kernel, TypeNameFormatLevel::Balanced))
                    .or_default() += n;
            }
            let mut by_kernel: Vec<(usize, String)> =
                named.into_iter().map(|(name, n)| (n, name)).collect();
            by_kernel.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            Counts {
                launches: by_kernel.iter().map(|(n, _)| n).sum(),
                reads,
                by_kernel,
            }
        }
    }
}
