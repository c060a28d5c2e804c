use crate::{
    CubeFusionHandle, FallbackOperation,
    engine::{launch::FuseTraceLauncher, trace::FuseTrace},
    optim::{FusedOperation, elemwise::ElemwiseRunner},
};
use burn_fusion::stream::Context;
use cubecl::client::Client;
use serde::{Deserialize, Serialize};

#[derive(new)]
/// Fuse layout conversions into a single kernel for NHWC/NLC layout.
pub struct NHWCRelayoutOptimization {
    pub(crate) trace: FuseTrace,
    client: Client,
    device: cubecl::Device,
    len: usize,
}

#[derive(Serialize, Deserialize, Debug)]
/// State for the [NHWC relayout optimization](NHWCRelayoutOptimization).
pub struct RelayoutOptimizationState {
    trace: FuseTrace,
    len: usize,
}

impl NHWCRelayoutOptimization {
    pub fn execute(
        &self,
        context: &mut Context<CubeFusionHandle>,
        fallback: impl FnOnce(usize) -> Box<dyn FallbackOperation>,
    ) {
        let launcher_elemwise = FuseTraceLauncher::new(&self.trace, &ElemwiseRunner);

        launcher_elemwise
            .launch(&self.client, &self.device, context)
            .expect("elemwise launch should succeed");

        // The fallback corresponds to the operation that benefits from NHWC relayout.
        fallback(self.len - 1).run(context);
    }

    /// Number of element wise operations fused.
    pub fn num_ops_fused(&self) -> usize {
        self.len
    }

    /// Create an optimization from its [state](RelayoutOptimizationState).
    pub fn from_state(device: &cubecl::Device, state: RelayoutOptimizationState) -> Self {
        Self {
            trace: state.trace,
            len: state.len,
            client: device.client(),
            device: device.clone(),
        }
    }

    /// Convert the optimization to its [state](RelayoutOptimizationState).
    pub fn to_state(&self) -> RelayoutOptimizationState {
        RelayoutOptimizationState {
            trace: self.trace.clone(),
            len: self.len,
        }
    }
}

/// Name of the NHWC relayout fusion optimization.
pub const NAME: &str = "NHWCRelayout";

impl FusedOperation for NHWCRelayoutOptimization {
    fn max_relative_shape_id(&self) -> Option<usize> {
        self.trace.max_relative_shape_id()
    }

    const NAME: &'static str = self::NAME;
    type State = RelayoutOptimizationState;

    fn num_ops_fused(&self) -> usize {
        Self::num_ops_fused(self)
    }

    fn run(
        &mut self,
        context: &mut Context<CubeFusionHandle>,
        fallback: &dyn Fn(usize) -> Box<dyn FallbackOperation>,
    ) {
        Self::execute(self, context, |index| fallback(index))
    }

    fn to_state(&self) -> Self::State {
        Self::to_state(self)
    }

    fn from_state(device: &cubecl::Device, state: Self::State) -> Self {
        Self::from_state(device, state)
    }
}
