use crate::{
    engine::{
        codegen::ir::{FuseArg, FuseBlockConfig, GlobalArgsLaunch, RefLayout},
        launch::runner::{TraceRunner, Vectorization},
    },
    optim::reduce_broadcasted::unit::{
        ElemwiseFuseBlockLaunch, ReduceFuseBlockLaunch, reduce_kernel_broadcasted,
    },
};
use cubecl::{
    ir::{ElemType, FloatKind},
    prelude::*,
    server::LaunchError,
};
use cubek::reduce::{
    ReduceDtypes, VectorizationMode,
    components::instructions::ReduceOperationConfig,
    launch::RoutineStrategy,
    output_vectorization_axis,
    routines::{
        BlueprintStrategy, GlobalReduceBlueprint, ReduceProblem, ReduceVectorSettings, Routine,
        unit::{UnitRoutine, UnitStrategy},
    },
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ReduceBroadcastedFuseBlock {
    pub(crate) op: ReduceOperationConfig,
    pub(crate) input: FuseArg,
    pub(crate) output: FuseArg,
}

#[derive(new)]
pub struct FusedReduceBroadcastedLaunch<'a> {
    blocks: &'a Vec<ReduceBroadcastedFuseBlock>,
    reduce_axis: usize,
    // TODO: Support multiple strategies.
    _strategy: RoutineStrategy,
}

impl Vectorization for FusedReduceBroadcastedLaunch<'_> {}

impl TraceRunner for FusedReduceBroadcastedLaunch<'_> {
    type Error = LaunchError;

    fn run<'a>(
        &'a self,
        client: &'a Client,
        inputs: GlobalArgsLaunch,
        outputs: GlobalArgsLaunch,
        configs: &'a [FuseBlockConfig],
    ) -> Result<(), Self::Error> {
        let routine = UnitRoutine;
        let first_config = &configs[0];

        // An output-concrete reference indexes the output arguments; shape and
        // strides must both be resolved against that list.
        let ref_args = match &first_config.ref_layout {
            RefLayout::Concrete(FuseArg::Output(..)) => &outputs,
            _ => &inputs,
        };
        let shape = ref_args.shape_ref(&first_config.ref_layout, first_config.rank);
        let ref_strides = ref_args.strides_ref(&first_config.ref_layout, first_config.rank);

        let reduce_len = shape[self.reduce_axis];
        let reduce_count = shape.iter().product::<usize>() / reduce_len;
        let address_type = inputs
            .required_address_type()
            .max(outputs.required_address_type());

        let (blueprint, settings) = routine
            .prepare(
                client,
                ReduceProblem {
                    reduce_len,
                    reduce_count,
                    axis: self.reduce_axis,
                    dtypes: ReduceDtypes {
                        input: ElemType::Float(FloatKind::F32),
                        output: ElemType::Float(FloatKind::F32),
                        accumulation: ElemType::Float(FloatKind::F32),
                    },
                    address_type,
                    // We assume at least one block.
                    instruction: self.blocks.first().unwrap().op,
                },
                ReduceVectorSettings {
                    vectorization_mode: VectorizationMode::Parallel,
                    vector_size_input: first_config.width,
                    vector_size_output: 1,
                    // Fused-reduce selection is cached per anchored key, so
                    // the unchecked comptime fast paths are never stable here.
                    unchecked_fast_paths: false,
                    // The fused read runs the trace, which may write
                    // materialized intermediates to global outputs.
                    fuse_on_read: true,
                },
                BlueprintStrategy::Inferred(UnitStrategy),
            )
            .unwrap();

        assert_eq!(blueprint.vectorization_mode, VectorizationMode::Parallel);

        let mut blocks = SequenceArg::new();
        let mut index = 0;

        for block in self.blocks {
            let arg = ReduceFuseBlockLaunch::new(
                block.op,
                configs[index].clone(),
                configs[index + 1].clone(),
                block.input.clone(),
                block.output.clone(),
                match blueprint.global {
                    GlobalReduceBlueprint::Unit(bpt) => bpt,
                    _ => panic!(),
                },
            );
            index += 2;
            blocks.push(arg);
        }

        let block_end = match configs.len() > index {
            true => ComptimeOptionArgs::Some(ElemwiseFuseBlockLaunch::new(
                configs.last().cloned().unwrap(),
            )),
            false => ComptimeOptionArgs::None,
        };

        let out_vec_axis =
            output_vectorization_axis(&ref_strides, self.reduce_axis, VectorizationMode::Parallel);

        // TODO: Ensure parallel is selected.

        unsafe {
            reduce_kernel_broadcasted::launch_unchecked(
                client,
                settings.cube_count,
                settings.cube_dim,
                settings.address_type,
                inputs,
                outputs,
                self.reduce_axis,
                out_vec_axis,
                blocks,
                block_end,
            );
        }

        Ok(())
    }
}
