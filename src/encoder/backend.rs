//! Where the Burn encoders run: Burn's pure-Rust CPU backend (flex) or its wgpu backend —
//! Vulkan/Metal natively, WebGPU in the browser. The wgpu runtime can be initialised once per
//! process (or tab), so its device is cached and cloned.

use super::BackendKind;
use crate::{Error, Result};
use burn::tensor::Device;

/// A ready device and what it is, for the result's `protocol.backend` block.
#[derive(Debug, Clone)]
pub struct Compute {
    pub device: Device,
    pub kind: BackendKind,
    /// The adapter's name (a GPU, lavapipe, SwiftShader) or the CPU backend's name.
    pub adapter: String,
}

impl Compute {
    /// A tensor's values on the host, read asynchronously (a synchronous read panics in wasm).
    pub async fn read<const D: usize>(&self, tensor: burn::tensor::Tensor<D>) -> Result<Vec<f32>> {
        let data = tensor.into_data_async().await.map_err(|e| {
            Error::new(format!(
                "reading embeddings from the {:?} backend failed: {e:?}",
                self.kind
            ))
        })?;
        data.try_to_vec::<f32>().map_err(|e| {
            Error::new(format!(
                "unexpected embedding data type from the backend: {e:?}"
            ))
        })
    }
}

pub const CPU_ADAPTER: &str = "burn-flex (pure-Rust CPU)";

pub fn cpu() -> Compute {
    Compute {
        device: Device::flex(),
        kind: BackendKind::Cpu,
        adapter: CPU_ADAPTER.to_string(),
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
mod cached {
    use super::*;
    use std::sync::OnceLock;

    static WGPU: OnceLock<std::result::Result<Compute, Error>> = OnceLock::new();

    pub async fn get_or_init() -> Result<Compute> {
        WGPU.get_or_init(|| {
            let (device, setup) = Device::wgpu_options()
                .init_with_setup()
                .map_err(init_error)?;
            Ok(Compute {
                device,
                kind: BackendKind::Wgpu,
                adapter: describe(&setup, None),
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
                device,
                kind: BackendKind::Wgpu,
                adapter: PAGE_LABEL.with(|l| describe(&setup, Some(&l.borrow()))),
            }),
            Err(e) => Err(init_error(e)),
        };
        WGPU.with(|c| *c.borrow_mut() = Some(outcome.clone()));
        outcome
    }
}
