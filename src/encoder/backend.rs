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

    /// What Burn's memory pools reserve on a wgpu device: the buffers WebGPU (or Vulkan,
    /// Metal) allocated for the model's weights and the passes' tensors, held for reuse. None
    /// on the CPU backend, whose tensors are host memory (`peak_memory_bytes` counts those).
    pub fn gpu_memory_bytes(&self) -> Option<u64> {
        match self.kind {
            BackendKind::Wgpu => self.device.memory_pool_usage().map(|u| u.bytes_reserved),
            BackendKind::Cpu => None,
        }
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
            launches::note_adapter(&setup.adapter);
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
    use burn::cubecl::logging::{
        Duration, LaunchObservation, LaunchObserver, ProfileDuration, TimingMethod, TimingRequest,
    };
    use std::collections::{BTreeMap, BTreeSet};
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
        /// Whether each launch is timed (`geneb embed --profile-kernels`); fixed for the
        /// observation's life, as CubeCL requires.
        timed: bool,
        /// Each launch in issue order with its measurement once it arrives (CubeCL hands it over
        /// on the issuing thread right after the launch; none where the profile was refused).
        measurements: Mutex<Vec<(&'static str, Option<Measurement>)>>,
    }

    /// A launch's GPU time: kept unread while the pass runs (so its kernels still run back to
    /// back), or already read where CubeCL's profiling logger took the measurement first.
    enum Measurement {
        Unread(ProfileDuration),
        Read(Duration, TimingMethod),
    }

    /// A poisoned lock only means another launching thread panicked; keep what it holds.
    fn held<T>(lock: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    impl LaunchObserver for ByKernel {
        fn launched(&self, kernel: &'static str) {
            if self.print_order {
                eprintln!(
                    "launch: {}",
                    type_name_format(kernel, TypeNameFormatLevel::Balanced)
                );
            }
            *held(&self.counts).entry(kernel).or_default() += 1;
            if self.timed {
                held(&self.measurements).push((kernel, None));
            }
        }

        fn timing(&self) -> TimingRequest {
            if self.timed {
                TimingRequest::Deferred
            } else {
                TimingRequest::None
            }
        }

        fn profiled(&self, kernel: &'static str, profile: ProfileDuration) {
            self.measured(kernel, Measurement::Unread(profile));
        }

        fn timed(&self, kernel: &'static str, duration: Duration, method: TimingMethod) {
            self.measured(kernel, Measurement::Read(duration, method));
        }
    }

    impl ByKernel {
        /// Pairs a measurement with its launch, the latest of that kernel still without one.
        fn measured(&self, kernel: &'static str, measurement: Measurement) {
            let mut launches = held(&self.measurements);
            if let Some((_, slot)) = launches
                .iter_mut()
                .rev()
                .find(|(k, m)| *k == kernel && m.is_none())
            {
                *slot = Some(measurement);
            }
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
        observe(false)
    }

    fn observe(timed: bool) -> Counting {
        let counts = Arc::new(ByKernel {
            print_order: std::env::var_os("GENEB_LAUNCH_ORDER").is_some_and(|v| v == "1"),
            timed,
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
            let counts = held(&self.counts.counts);
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

    /// A kernel-by-kernel GPU profile of one call (`geneb embed --profile-kernels`), as JSON.
    #[derive(Debug, Clone, serde::Serialize)]
    pub struct Profile {
        /// How launches were timed: `device` (timestamp queries: the kernels' own GPU time),
        /// `system` (host wall around a blocking submit, where the adapter has no timestamps:
        /// submission and waiting included, not kernel time), or both.
        pub timing: String,
        /// Wall time of each warm call made before the profiled one, unobserved, in ms.
        pub call_ms: Vec<f64>,
        pub call_ms_median: Option<f64>,
        pub launches: usize,
        pub reads: usize,
        /// The launches' GPU times summed, µs (their pass took at least this long).
        pub gpu_us: f64,
        /// By kernel name (shortened as CubeCL's profiler shortens it), most GPU time first.
        pub kernels: Vec<KernelTime>,
        /// Every launch in issue order with its GPU µs (null where a profile was refused): another
        /// engine's dispatches of the same pass join these by position.
        pub order: Vec<(String, Option<f64>)>,
        /// What wgpu saw of the adapter: limits under WebGPU's names, features, subgroup sizes.
        pub adapter: Option<serde_json::Value>,
    }

    #[derive(Debug, Clone, serde::Serialize)]
    pub struct KernelTime {
        pub name: String,
        pub launches: usize,
        /// Launches with a GPU time (all of them unless a profile was refused).
        pub timed: usize,
        pub total_us: f64,
        pub median_us: Option<f64>,
    }

    /// `call` made `warm_calls` times unobserved and timed by the wall clock, then once more with
    /// every launch timed on the GPU; that last call's result and the profile.
    pub fn profile<T>(
        warm_calls: usize,
        mut call: impl FnMut() -> crate::Result<T>,
    ) -> crate::Result<(T, Profile)> {
        let mut call_ms = Vec::with_capacity(warm_calls);
        for _ in 0..warm_calls {
            let started = std::time::Instant::now();
            call()?;
            call_ms.push(started.elapsed().as_secs_f64() * 1e3);
        }
        let observing = observe(true);
        let out = call()?;
        let measured = std::mem::take(&mut *held(&observing.counts.measurements));
        let counts = observing.finish();
        let mut methods = BTreeSet::new();
        let order: Vec<(String, Option<f64>)> = measured
            .into_iter()
            .map(|(kernel, measurement)| {
                let read = match measurement {
                    Some(Measurement::Unread(profile)) => {
                        let method = profile.timing_method();
                        burn::cubecl::future::block_on(profile.resolve())
                            .map(|ticks| (ticks.duration(), method))
                    }
                    Some(Measurement::Read(duration, method)) => Some((duration, method)),
                    None => None,
                };
                let us = read.map(|(duration, method)| {
                    methods.insert(method.to_string());
                    duration.as_secs_f64() * 1e6
                });
                (type_name_format(kernel, TypeNameFormatLevel::Balanced), us)
            })
            .collect();
        let mut by_name: BTreeMap<&str, (usize, Vec<f64>)> = BTreeMap::new();
        for (name, us) in &order {
            let entry = by_name.entry(name).or_default();
            entry.0 += 1;
            entry.1.extend(us);
        }
        let mut kernels: Vec<KernelTime> = by_name
            .into_iter()
            .map(|(name, (launches, mut times))| {
                times.sort_by(f64::total_cmp);
                KernelTime {
                    name: name.to_string(),
                    launches,
                    timed: times.len(),
                    total_us: times.iter().sum(),
                    median_us: median(&times),
                }
            })
            .collect();
        kernels.sort_by(|a, b| b.total_us.total_cmp(&a.total_us));
        let mut sorted_calls = call_ms.clone();
        sorted_calls.sort_by(f64::total_cmp);
        let profile = Profile {
            timing: methods.into_iter().collect::<Vec<_>>().join("+"),
            call_ms_median: median(&sorted_calls),
            call_ms,
            launches: counts.launches,
            reads: counts.reads,
            gpu_us: kernels.iter().map(|k| k.total_us).sum(),
            kernels,
            order,
            adapter: ADAPTER.get().cloned(),
        };
        Ok((out, profile))
    }

    /// The middle of sorted values (the mean of the two middle ones for an even count).
    fn median(sorted: &[f64]) -> Option<f64> {
        let n = sorted.len();
        (n > 0).then(|| (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0)
    }

    static ADAPTER: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();

    /// Keeps what the process's wgpu adapter offers, for profiles: limits under WebGPU's names (so
    /// they sit beside what Dawn reports), features, subgroup sizes, driver.
    pub(super) fn note_adapter(adapter: &burn::tensor::wgpu::wgpu::Adapter) {
        let info = adapter.get_info();
        let l = adapter.limits();
        let features: Vec<&str> = adapter
            .features()
            .iter()
            .filter_map(|f| f.as_str())
            .collect();
        let facts = serde_json::json!({
            "name": info.name,
            "vendor": info.vendor,
            "device": info.device,
            "device_type": format!("{:?}", info.device_type),
            "backend": format!("{:?}", info.backend),
            "driver": info.driver,
            "driver_info": info.driver_info,
            "subgroupMinSize": info.subgroup_min_size,
            "subgroupMaxSize": info.subgroup_max_size,
            "features": features,
            "limits": {
                "maxBindGroups": l.max_bind_groups,
                "maxBindingsPerBindGroup": l.max_bindings_per_bind_group,
                "maxStorageBuffersPerShaderStage": l.max_storage_buffers_per_shader_stage,
                "maxUniformBuffersPerShaderStage": l.max_uniform_buffers_per_shader_stage,
                "maxUniformBufferBindingSize": l.max_uniform_buffer_binding_size,
                "maxStorageBufferBindingSize": l.max_storage_buffer_binding_size,
                "maxBufferSize": l.max_buffer_size,
                "minUniformBufferOffsetAlignment": l.min_uniform_buffer_offset_alignment,
                "minStorageBufferOffsetAlignment": l.min_storage_buffer_offset_alignment,
                "maxComputeWorkgroupStorageSize": l.max_compute_workgroup_storage_size,
                "maxComputeInvocationsPerWorkgroup": l.max_compute_invocations_per_workgroup,
                "maxComputeWorkgroupSizeX": l.max_compute_workgroup_size_x,
                "maxComputeWorkgroupSizeY": l.max_compute_workgroup_size_y,
                "maxComputeWorkgroupSizeZ": l.max_compute_workgroup_size_z,
                "maxComputeWorkgroupsPerDimension": l.max_compute_workgroups_per_dimension,
                "maxImmediateSize": l.max_immediate_size,
            },
        });
        ADAPTER.set(facts).ok();
    }
}
