use super::{HandleInput, HandleOutput, LaunchPlan, ReferenceSelection};
use crate::engine::launch::layout::permuted_innermost_axis;
use crate::engine::launch::runner::TraceRunner;
use crate::engine::trace::{FuseResources, TensorView, TraceError, TuneOutput, block::FuseBlock};
use crate::{
    CubeFusionHandle,
    engine::{
        codegen::ir::{
            FuseBlockConfig, FuseOp, FuseType, GlobalArgsLaunch, RefLayout, VirtualLayout,
        },
        codegen::tensor::GlobalTensorArg,
    },
};
use burn_fusion::stream::{Context, ScalarId};
use burn_ir::ScalarIr;
use cubecl::{
    client::Client,
    ir::{AddressType, Type},
    prelude::{InputScalar, TensorArg},
};

/// Execute a [plan](LaunchPlan) using a [runner](TraceRunner) modifying the [context](Context).
pub struct LaunchPlanExecutor<'a> {
    resources: &'a FuseResources,
    blocks: &'a Vec<FuseBlock>,
}

#[derive(new, Debug)]
pub struct ExecutionError<Runner: TraceRunner> {
    pub error: TraceError<Runner::Error>,
    pub handles_input: Vec<HandleInput>,
    pub handles_output: Vec<HandleOutput>,
}

impl<'a> LaunchPlanExecutor<'a> {
    pub fn new(resources: &'a FuseResources, blocks: &'a Vec<FuseBlock>) -> Self {
        Self { resources, blocks }
    }

    pub fn execute<Runner: TraceRunner>(
        self,
        client: &Client,
        runner: &Runner,
        context: &mut Context<CubeFusionHandle>,
        plan: LaunchPlan<'a>,
    ) -> Result<TuneOutput, ExecutionError<Runner>> {
        let mut num_writes = 0;
        for b in plan.blocks.iter() {
            for writes in b.writes.values() {
                num_writes += writes.len();
            }
        }

        #[cfg(feature = "autotune-checks")]
        let mut tune_output = TuneOutput::Checked {
            handles: std::collections::HashMap::new(),
        };

        #[cfg(not(feature = "autotune-checks"))]
        let mut tune_output = TuneOutput::UnChecked;

        if num_writes == 0 {
            // Nothing to write, can skip execution.
            return Ok(tune_output);
        }

        let mut inputs = GlobalArgsLaunch::default();
        let mut outputs = GlobalArgsLaunch::default();

        // An aliased output reuses the input's buffer variable in the compiled kernel
        // (`builder.inplace`), so it must be declared with the exact type the input was
        // launched with — including its vector size.
        let input_vector_sizes: Vec<usize> = plan
            .handle_inputs
            .iter()
            .map(|hi| match hi {
                HandleInput::Normal(hi) => hi.vector_size,
                HandleInput::QuantValues(hi) => hi.vector_size,
                HandleInput::QuantParams(_) => 1,
            })
            .collect();

        register_inputs(plan.handle_inputs.clone(), &mut inputs);
        register_scalars(
            self.resources.scalars.iter(),
            self.resources.views.iter(),
            context,
            &mut inputs,
        );
        register_outputs(
            plan.handle_outputs.clone(),
            &input_vector_sizes,
            &mut outputs,
            &mut tune_output,
        );

        for layout in plan.runtime_layouts {
            for s in layout.shape.iter() {
                inputs.runtime_layouts.push(*s);
            }
            for s in layout.strides.iter() {
                inputs.runtime_layouts.push(*s);
            }
        }

        let mut configs = Vec::with_capacity(plan.blocks.len());

        for (block_plan, block) in plan.blocks.into_iter().zip(self.blocks) {
            // Which axis a vector runs along. Only a concrete reference can be
            // permuted; the virtual ones are indexed through a transform written
            // against the last dimension. The vectorization planner picks a tensor's
            // axis by the same rule, so the axis a vector is sized along and the one
            // it is stepped along are the same.
            let vector_axis = match &block_plan.reference {
                ReferenceSelection::Concrete { shape, strides, .. } => {
                    permuted_innermost_axis(shape, strides)
                }
                _ => None,
            }
            .unwrap_or(plan.rank.saturating_sub(1));

            let reference = match block_plan.reference {
                ReferenceSelection::Concrete { layout, .. } => RefLayout::Concrete(layout),
                ReferenceSelection::VirtualShape { original, .. } => {
                    RefLayout::Virtual(VirtualLayout::Shape(original, block_plan.width))
                }
                ReferenceSelection::SwapDims { original, dims } => {
                    RefLayout::Virtual(VirtualLayout::SwapDims(original, dims))
                }
                ReferenceSelection::Reshaped { reshape_pos } => {
                    RefLayout::Virtual(VirtualLayout::Reshaped {
                        reshape_pos,
                        vector_size: block_plan.width,
                    })
                }
                ReferenceSelection::Runtime { pos } => {
                    RefLayout::Virtual(VirtualLayout::Runtime { pos })
                }
                ReferenceSelection::Searching => {
                    return Err(ExecutionError::new(
                        TraceError::ReferenceNotFound,
                        plan.handle_inputs,
                        plan.handle_outputs,
                    ));
                }
            };

            let mut ops = Vec::<FuseOp>::new();

            for read_ops in block_plan.reads.into_values() {
                for op in read_ops {
                    ops.push(op);
                }
            }

            for op in block.ops.iter() {
                ops.push(op.clone());
            }

            for opsw in block_plan.writes.into_values() {
                for op in opsw {
                    ops.push(op);
                }
            }

            let config = FuseBlockConfig {
                rank: plan.rank,
                ref_layout: reference,
                ops,
                width: block_plan.width,
                vector_axis,
            };
            configs.push(config);
        }

        Runner::run(runner, client, inputs, outputs, &configs).map_err(|err| {
            ExecutionError::new(
                TraceError::RunnerError(err),
                plan.handle_inputs,
                plan.handle_outputs,
            )
        })?;

        Ok(tune_output)
    }
}

fn register_inputs(handle_inputs: Vec<HandleInput>, inputs: &mut GlobalArgsLaunch) {
    for hi in handle_inputs {
        match hi {
            HandleInput::Normal(hi) => {
                let at = hi.handle.required_address_type();
                let arg = hi.handle.into_tensor_arg(hi.global_ir.shape.clone());
                inputs.tensors.push(GlobalTensorArg::new(
                    arg,
                    hi.precision.into_type(hi.vector_size),
                    hi.broadcated,
                    at,
                ));
            }
            HandleInput::QuantValues(hi) => {
                let at = hi.handle.required_address_type();
                let arg = hi.handle.into_tensor_arg(hi.global_ir.shape.clone());
                inputs.tensors.push(GlobalTensorArg::new(
                    arg,
                    hi.precision.into_type(hi.vector_size),
                    false,
                    at,
                ));
            }
            HandleInput::QuantParams(hi) => {
                let at = hi.handle.required_address_type();
                let arg = hi.handle.into_tensor_arg(hi.shape.clone());
                inputs.tensors.push(GlobalTensorArg::new(
                    arg,
                    hi.precision.into_type(1),
                    false,
                    at,
                ));
            }
        }
    }
}

fn register_outputs(
    handle_outputs: Vec<HandleOutput>,
    input_vector_sizes: &[usize],
    outputs: &mut GlobalArgsLaunch,
    #[allow(unused_variables)] tune_output: &mut TuneOutput,
) {
    for item in handle_outputs {
        match item {
            HandleOutput::Alias {
                input_pos,
                precision,
                global_shape,
                strides,
                #[cfg(feature = "autotune-checks")]
                debug_info,
            } => {
                outputs.tensors.push(GlobalTensorArg::new(
                    TensorArg::Alias {
                        input_pos,
                        strides,
                        shape: global_shape,
                    },
                    // Must match the aliased input's launched type: the compiled kernel
                    // reuses the input's buffer variable, so declaring another vector
                    // size here would make the comptime type disagree with the actual
                    // variable and produce invalid casts on the write path.
                    precision.into_type(input_vector_sizes[input_pos]),
                    false,
                    AddressType::default(),
                ));

                #[cfg(feature = "autotune-checks")]
                if let TuneOutput::Checked { handles, .. } = tune_output {
                    handles.insert(
                        debug_info.relative_id,
                        (debug_info.global_shape.clone(), debug_info.handle.clone()),
                    );
                }
            }
            HandleOutput::Owned {
                precision,
                handle,
                global_shape,
                vectorization: vector_size,
                #[cfg(feature = "autotune-checks")]
                relative_id,
                ..
            } => {
                let at = handle.required_address_type();

                #[cfg(feature = "autotune-checks")]
                if let TuneOutput::Checked { handles, .. } = tune_output {
                    handles.insert(relative_id, (global_shape.clone(), handle.clone()));
                }

                let arg = handle.into_tensor_arg(global_shape.clone());

                let elem = precision.into_elem();
                let ty = Type::new(elem).with_vector_size(vector_size);

                outputs
                    .tensors
                    .push(GlobalTensorArg::new(arg, ty, false, at));
            }
        }
    }
}

fn register_scalars<'h>(
    scalars: impl Iterator<Item = &'h (FuseType, u64)>,
    views: impl DoubleEndedIterator<Item = &'h TensorView>,
    context: &mut Context<CubeFusionHandle>,
    inputs: &mut GlobalArgsLaunch,
) {
    for (precision, id) in scalars {
        let dtype = precision.into_storage_type();
        match context.scalars.get(&ScalarId { value: *id }) {
            Some(scalar) => match scalar {
                ScalarIr::Float(val) => inputs.scalars.push(InputScalar::new(*val, dtype)),
                ScalarIr::Int(val) => inputs.scalars.push(InputScalar::new(*val, dtype)),
                ScalarIr::UInt(val) => inputs.scalars.push(InputScalar::new(*val, dtype)),
                ScalarIr::Bool(val) => inputs.scalars.push(InputScalar::new(*val as u8, dtype)),
            },
            None => panic!("Scalar ID not found"),
        }
    }

    for relative in views {
        if let TensorView::Reshape { reshaped, .. } = relative {
            let global = context.tensors.get(reshaped).unwrap();

            for shape in global.shape.iter() {
                inputs.reshapes.push(*shape);
            }
        }
    }
}
