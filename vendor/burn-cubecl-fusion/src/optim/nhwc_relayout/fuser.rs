use crate::{
    engine::{
        fuser::TraceOperationFuser,
        settings::{FuseSettings, RefLayoutSetting, VectorizationSetting},
    },
    optim::{CubeOptimization, nhwc_relayout::optimization::NHWCRelayoutOptimization},
};
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use burn_ir::{ModuleOperationIr, OperationIr, TensorIr, TensorStatus};
use burn_std::Shape;

/// Fuses element wise operations.
#[derive(Clone)]
pub struct NHWCRelayoutFuser {
    fuser: TraceOperationFuser,
    op: Option<OperationIr>,
    status: FuserStatus,
    device: cubecl::Device,
}

/// Build the stride relayout permutation for a tensor of the given `rank`.
fn permutation(rank: usize) -> Shape {
    let mut permutation = vec![0usize; rank];

    if rank >= 2 {
        permutation[1] = rank - 1;
        for (dim, stride) in permutation.iter_mut().enumerate().take(rank).skip(2) {
            *stride = dim - 1;
        }
    }

    Shape::from(permutation)
}

/// Collect tensor that should be relayed out to NHWC for a given module operation.
fn nhwc_relayout_tensor(ir: &ModuleOperationIr) -> Option<&TensorIr> {
    use ModuleOperationIr::*;

    match ir {
        AvgPool1d(op) => Some(&op.x),
        AvgPool2d(op) => Some(&op.x),
        AdaptiveAvgPool1d(op) => Some(&op.x),
        AdaptiveAvgPool2d(op) => Some(&op.x),
        MaxPool1d(op) => Some(&op.x),
        MaxPool1dWithIndices(op) => Some(&op.x),
        MaxPool2d(op) => Some(&op.x),
        MaxPool2dWithIndices(op) => Some(&op.x),
        Interpolate(op) => Some(&op.x),

        _ => None,
    }
}

impl NHWCRelayoutFuser {
    pub fn shape_id(&self) -> Shape {
        self.fuser.current_output_shape.clone()
    }

    fn settings() -> FuseSettings {
        FuseSettings {
            broadcast: true,
            output_shape_updates: true,
            inplace: true,
            vectorization: VectorizationSetting::Activated,
            ref_layout: RefLayoutSetting::Any,
            // This fuser exists to impose a layout of its own; it does not want one
            // picked for it.
            choose_output_layout: false,
        }
    }

    pub fn new(device: cubecl::Device) -> Self {
        let client = device.client();
        let max_bindings = client.properties().hardware.max_bindings;
        let fuser = TraceOperationFuser::new(max_bindings, Self::settings());

        Self {
            status: fuser.status(),
            op: None,
            fuser,
            device,
        }
    }
}

impl OperationFuser<CubeOptimization> for NHWCRelayoutFuser {
    fn fuse(&mut self, operation: &OperationIr) {
        if let FuserStatus::Closed = &self.status {
            return;
        }

        match operation {
            // A `ReadOnly` tensor cannot be a relayout candidate: another consumer
            // is still expecting NCHW.
            OperationIr::Module(ir)
                if let Some(tensor) = nhwc_relayout_tensor(ir)
                    && tensor.status == TensorStatus::ReadWrite =>
            {
                self.op = Some(operation.clone());
                self.fuser
                    .output_nhwc_layout(tensor, permutation(tensor.shape.num_dims()));
                self.status = FuserStatus::Closed;
            }
            _ => {
                self.fuser.fuse(operation);
                self.status = self.fuser.status();
            }
        };
    }

    fn finish(&mut self) -> CubeOptimization {
        let client = self.device.client();
        let trace = self.fuser.finish();
        let relayout =
            NHWCRelayoutOptimization::new(trace, client, self.device.clone(), self.len());
        CubeOptimization::new(relayout)
    }

    fn reset(&mut self) {
        self.fuser.reset();
        self.op = None;
        self.status = self.fuser.status();
    }

    fn status(&self) -> FuserStatus {
        self.status
    }

    fn properties(&self) -> FuserProperties {
        let mut properties = self.fuser.properties();
        properties.score += match &self.op {
            Some(_) => 100, // TODO : proper score calculation
            None => 0,
        };
        properties.ready = properties.ready && self.op.is_some();
        properties
    }

    fn len(&self) -> usize {
        self.fuser.len()
            + match &self.op {
                Some(_) => 1,
                None => 0,
            }
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<CubeOptimization>> {
        Box::new(self.clone())
    }
}
