use super::{
    codegen::ir::{BinaryFuseArgs, FuseArg, FuseOp, UnaryFuseArgs},
    settings::FuseSettings,
    trace::{FuseTrace, TraceFuser, block::QuantInput},
};
use crate::engine::{codegen::ir::QuantSchemeFuse, scoring::Scoring};
use burn_backend::cubecl::dtype_to_elem_type;
use burn_fusion::{FuserProperties, FuserStatus, OperationFuser};
use burn_ir::{
    BaseOperationIr, BinaryOpIr, FloatOperationIr, IntOperationIr, NumericOperationIr, OperationIr,
    ScalarOpIr, TensorIr, UnaryOpIr,
};
use burn_std::{
    DType, Shape,
    config::{fusion::FusionLogLevel, log_fusion},
};
use cubecl::ir::ElemType;

/// The base operation fuser that can be used to fuse [all supported fuse operations](FuseOp).
///
///
/// This fuser doesn't create a ready-to-execute kernel, but rather generates a
/// [trace](FuseTrace) that be used with a [runner](super::launch::runner::TraceRunner).
///
/// Since this fuser supports fusing multiple blocks, you can fuse any compute-bound operations
/// with the combination of fuse-on-read and fuse-on-write strategy.
///
/// # Notes
///
/// It is responsible to translate [OperationIr] into [FuseOp] and it uses the [TraceFuser]
/// to actually fuse the [FuseOp] when possible.
#[derive(Debug, Clone)]
pub struct TraceOperationFuser {
    pub(crate) fuser: TryTraceFuser,
    scoring: Scoring,
    pub(crate) settings: FuseSettings,
    pub(crate) current_output_shape: Shape,
    /// Whether an operation that indexes its inputs through the reference layout was fused
    /// into the current block, which fixes the reference to that operation's output shape.
    reference_fixed: bool,
    status: FuserStatus,
    pub(crate) num_ops: usize,
    pub(crate) num_views: usize,
    pub(crate) max_bindings: u32,
}

impl TraceOperationFuser {
    /// Emits a `Full`-level fusion log explaining why the fuser transitioned to `Closed`.
    /// `prev_num_ops` is the number of ops already fused before the rejected op.
    fn log_closed(&self, op: &OperationIr, prev_num_ops: usize, reason: &'static str) {
        let max = self.max_bindings;
        log_fusion(FusionLogLevel::Full, || {
            // Debug-format the op and estimate bindings lazily: both are expensive
            // enough to skip when logging is off.
            let op_dbg = format!("{op:?}");
            let op_short = op_dbg
                .split_once('(')
                .map(|(head, _)| head)
                .unwrap_or(&op_dbg);
            let est = self.fuser.fuser.estimate_bindings();
            format!(
                "[fuser] closed on {op_short} ({reason}); had {prev_num_ops} ops, est_bindings={est}/{max}"
            )
        });
    }

    /// Checks if the [operation](OperationIr) can be fused with the current fuser.
    pub fn can_fuse(&self, op: &OperationIr) -> bool {
        let len_previous = self.len();
        let mut fuser_cloned = self.clone();

        fuser_cloned.fuse(op);
        let len_after = fuser_cloned.len();

        len_after > len_previous
    }
}

impl OperationFuser<FuseTrace> for TraceOperationFuser {
    fn fuse(&mut self, op: &OperationIr) {
        if let FuserStatus::Closed = self.status {
            return;
        }

        // Capture state before the fuse attempt so we can log a useful reason
        // if the fuser closes on this op.
        let prev_num_ops = self.num_ops;

        match op {
            OperationIr::Drop(tensor) => {
                if self.num_ops == 0 {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "drop on empty fuser");
                    return;
                }

                self.fuser.fuser.fuse_dropped(tensor);
            }
            OperationIr::BaseFloat(ops) => {
                if !self.fuse_base(ops) {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "base fuse rejected");
                    return;
                }
            }
            OperationIr::BaseInt(ops) => {
                if !self.fuse_base(ops) {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "base fuse rejected");
                    return;
                }
            }
            OperationIr::Float(_dtype, ops) => {
                if !self.fuse_float(ops) {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "float fuse rejected");
                    return;
                }
            }
            OperationIr::Int(ops) => {
                if !self.fuse_int(ops) {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "int fuse rejected");
                    return;
                }
            }
            OperationIr::NumericFloat(_dtype, ops) => {
                if !self.fuse_numeric(ops) {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "numeric fuse rejected");
                    return;
                }
            }
            OperationIr::NumericInt(_dtype, ops) => {
                if !self.fuse_numeric(ops) {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "numeric fuse rejected");
                    return;
                }
            }
            OperationIr::BaseBool(ops) => {
                if !self.fuse_base(ops) {
                    self.status = FuserStatus::Closed;
                    self.log_closed(op, prev_num_ops, "base fuse rejected");
                    return;
                }
            }
            _ => {
                self.status = FuserStatus::Closed;
                self.log_closed(op, prev_num_ops, "unsupported op variant");
                return;
            }
        };

        self.status = FuserStatus::Open;
        self.scoring.register(op);
        self.num_ops += 1;
    }

    fn finish(&mut self) -> FuseTrace {
        self.fuser.finish(self.current_output_shape.clone())
    }

    fn len(&self) -> usize {
        self.num_ops
    }

    fn reset(&mut self) {
        self.num_ops = 0;
        self.scoring.reset();
        self.num_views = 0;
        self.status = FuserStatus::Open;
        self.fuser = TryTraceFuser::new(self.max_bindings, self.settings);
        self.current_output_shape = Shape::new([]);
        self.reference_fixed = false;
    }

    fn status(&self) -> FuserStatus {
        self.status
    }

    fn properties(&self) -> FuserProperties {
        let ready = self.num_ops > 0;
        let score = self
            .scoring
            .evaluate(&self.fuser.clone().finish(self.current_output_shape.clone()));

        FuserProperties { ready, score }
    }

    fn clone_dyn(&self) -> Box<dyn OperationFuser<FuseTrace>> {
        Box::new(self.clone())
    }
}

impl TraceOperationFuser {
    /// Creates a new fuser.
    pub fn new(max_bindings: u32, settings: FuseSettings) -> Self {
        Self {
            fuser: TryTraceFuser::new(max_bindings, settings),
            settings,
            scoring: Scoring::default(),
            num_ops: 0,
            num_views: 0,
            max_bindings,
            current_output_shape: Shape::new([]),
            reference_fixed: false,
            status: FuserStatus::Open,
        }
    }

    /// Closes the fuser.
    pub fn close(&mut self) {
        self.status = FuserStatus::Closed;
    }

    /// Declares an input tensor argument where the kernel is responsible to load.
    ///
    /// # Returns
    ///
    /// - The argument that maps to the tensor to be used during kernel expansion.
    pub fn input_unhandled(&mut self, tensor: &TensorIr) -> FuseArg {
        self.fuser.fuser.input_unhandled(tensor)
    }

    /// Declares an input quantized tensor argument where the kernel is responsible to load.
    ///
    /// # Returns
    ///
    /// None if it's not possible to fuse a quantized tensor. Otherwise:
    ///
    /// - The argument that maps to the tensor values to be used during kernel expansion.
    /// - The argument that maps to the tensor params to be used during kernel expansion.
    pub fn input_quantized_unhandled(&mut self, tensor: &TensorIr) -> Option<(FuseArg, FuseArg)> {
        self.fuser.fuser.input_quantized_unhandled(tensor)
    }

    /// Declares an output tensor argument where the kernel is responsible to write values.
    ///
    /// # Notes
    ///
    /// Normally you don't have to declare outputs explicitly before they are going to be
    /// fused based on the operations [fused](Self::fuse).
    ///
    /// # Returns
    ///
    /// - The argument that maps to the tensor to be used during kernel expansion.
    pub fn output_unhandled(&mut self, tensor: &TensorIr) -> FuseArg {
        if self.current_output_shape.is_empty() {
            self.current_output_shape = tensor.shape.clone();
        } else if self.current_output_shape.iter().sum::<usize>() < tensor.shape.iter().sum() {
            // The larguest shape win.
            self.current_output_shape = tensor.shape.clone();
        }

        self.fuser.fuser.output_unhandled(tensor)
    }

    /// Closes the previous block and declares a new one.
    ///
    /// # Arguments
    ///
    /// - arguments: Tensors that are logical outputs of the current block and inputs of the following blocks.
    /// - settings: [FuseSettings] to be used by the next block.
    ///
    /// # Returns
    ///
    /// None if it's impossible to create a next block with the given arguments. Otherwise, the
    /// corresponding [arguments](FuseArg) to the given tensors are returned.
    pub fn next_block<const N: usize>(
        &mut self,
        arguments: [&TensorIr; N],
        settings: FuseSettings,
        global: bool,
    ) -> [FuseArg; N] {
        let block_pos = self.fuser.fuser.num_previous_blocks();
        let current_output_shape =
            core::mem::replace(&mut self.current_output_shape, Shape::new([]));
        self.reference_fixed = false;

        self.fuser.fuser.next_block(current_output_shape, settings);

        self.settings = settings;
        self.status = FuserStatus::Open;

        arguments.map(|arg| self.fuser.fuser.block_local_input(arg, block_pos, global))
    }

    /// Tag the [tensor](TensorIr) as received from a previous block.
    ///
    /// This will avoid reading the input again and instead use le local version when possible.
    pub fn block_local_input(&mut self, tensor: &TensorIr, block_pos: usize, global: bool) {
        self.fuser
            .fuser
            .block_local_input(tensor, block_pos, global);
    }

    fn fuse_base(&mut self, ops: &BaseOperationIr) -> bool {
        match ops {
            BaseOperationIr::Equal(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Equal(BinaryFuseArgs { lhs, rhs, out })
            }),
            BaseOperationIr::EqualElem(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Equal(BinaryFuseArgs { lhs, rhs, out })
            }),
            BaseOperationIr::Cast(desc) => {
                self.fuse_unary_op(&desc.input, &desc.out, |input, out| {
                    FuseOp::Assign(UnaryFuseArgs { input, out })
                })
            }
            BaseOperationIr::SwapDims(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                if self.fuser.fuse(|fuser| {
                    fuser.input_swap_dims(&desc.input, &desc.out, (desc.dim1, desc.dim2))?;

                    Some(())
                }) {
                    self.num_views += 1;
                    true
                } else {
                    false
                }
            }
            BaseOperationIr::Reshape(desc) => {
                if desc.input.shape == desc.out.shape {
                    return self.fuse_unary_op(&desc.input, &desc.out, |input, out| {
                        FuseOp::Assign(UnaryFuseArgs { input, out })
                    });
                }

                if desc.input.shape.rank() > desc.out.shape.rank() {
                    // Not yet supported.
                    return false;
                }

                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                if self.fuser.fuse(|fuser| {
                    fuser.input_reshaped(&desc.input, &desc.out)?;
                    Some(())
                }) {
                    self.num_views += 1;
                    true
                } else {
                    false
                }
            }
            BaseOperationIr::Ones(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                let elem: ElemType = dtype_to_elem_type(desc.out.dtype);
                let precision = elem.into();
                let input = FuseArg::Literal(1, precision);

                self.fuser.fuse(|fuser| {
                    let out = fuser.output(&desc.out)?;

                    fuser.fuse_operation(FuseOp::Assign(UnaryFuseArgs { input, out }));

                    Some(())
                })
            }
            BaseOperationIr::Zeros(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                let elem: ElemType = dtype_to_elem_type(desc.out.dtype);
                let precision = elem.into();
                let input = FuseArg::Literal(0, precision);

                self.fuser.fuse(|fuser| {
                    let out = fuser.output(&desc.out)?;

                    fuser.fuse_operation(FuseOp::Assign(UnaryFuseArgs { input, out }));

                    Some(())
                })
            }
            BaseOperationIr::Gather(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let input = build.input_indexed(&desc.tensor)?;
                    let indices = build.input_indexed(&desc.indices)?;
                    let output = build.output(&desc.out)?;

                    build.fuse_operation(FuseOp::Gather {
                        input,
                        indices,
                        output,
                        dim: desc.dim,
                    });

                    Some(())
                })
            }
            BaseOperationIr::Select(desc) => {
                if !self.output_is_reference(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let input = build.input_indexed(&desc.tensor)?;
                    let indices = build.input_indexed(&desc.indices)?;
                    let output = build.output(&desc.out)?;

                    build.fuse_operation(FuseOp::Select {
                        input,
                        indices,
                        output,
                        dim: desc.dim,
                    });

                    Some(())
                })
            }
            BaseOperationIr::Cat(desc) => {
                if !self.output_is_reference(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let mut tensors = Vec::with_capacity(desc.tensors.len());

                    for tensor in desc.tensors.iter() {
                        tensors.push(build.input_indexed(tensor)?);
                    }

                    let output = build.output(&desc.out)?;

                    build.fuse_operation(FuseOp::Cat {
                        inputs: tensors,
                        output,
                        dim: desc.dim,
                    });

                    Some(())
                })
            }
            BaseOperationIr::MaskWhere(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let cond = build.input(&desc.mask)?;
                    let rhs = build.input(&desc.tensor)?;
                    let lhs = build.input(&desc.value)?;
                    let out = build.output(&desc.out)?;

                    build.fuse_operation(FuseOp::ConditionalAssign {
                        cond,
                        lhs,
                        rhs,
                        out,
                    });

                    Some(())
                })
            }
            BaseOperationIr::MaskFill(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let cond = build.input(&desc.mask)?;
                    let lhs = build.scalar(&desc.value, desc.out.dtype);
                    let rhs = build.input(&desc.tensor)?;
                    let out = build.output(&desc.out)?;

                    build.fuse_operation(FuseOp::ConditionalAssign {
                        cond,
                        lhs,
                        rhs,
                        out,
                    });

                    Some(())
                })
            }
            _ => false,
        }
    }

    fn fuse_float(&mut self, ops: &FloatOperationIr) -> bool {
        match ops {
            FloatOperationIr::Exp(desc) => {
                self.fuse_unary_ops(desc, |input, out| FuseOp::Exp(UnaryFuseArgs { input, out }))
            }
            FloatOperationIr::Log(desc) => {
                self.fuse_unary_ops(desc, |input, out| FuseOp::Log(UnaryFuseArgs { input, out }))
            }
            FloatOperationIr::Powf(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Powf(BinaryFuseArgs { lhs, rhs, out })
            }),
            FloatOperationIr::Log1p(desc) => self.fuse_unary_ops(desc, |input, out| {
                FuseOp::Log1p(UnaryFuseArgs { input, out })
            }),
            FloatOperationIr::Cos(desc) => {
                self.fuse_unary_ops(desc, |input, out| FuseOp::Cos(UnaryFuseArgs { input, out }))
            }
            FloatOperationIr::Sin(desc) => {
                self.fuse_unary_ops(desc, |input, out| FuseOp::Sin(UnaryFuseArgs { input, out }))
            }
            FloatOperationIr::PowfScalar(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Powf(BinaryFuseArgs { lhs, rhs, out })
            }),
            FloatOperationIr::Tanh(desc) => self.fuse_unary_ops(desc, |input, out| {
                FuseOp::Tanh(UnaryFuseArgs { input, out })
            }),
            FloatOperationIr::Erf(desc) => {
                self.fuse_unary_ops(desc, |input, out| FuseOp::Erf(UnaryFuseArgs { input, out }))
            }
            FloatOperationIr::Sqrt(desc) => self.fuse_unary_ops(desc, |input, out| {
                FuseOp::Sqrt(UnaryFuseArgs { input, out })
            }),
            FloatOperationIr::Recip(desc) => self.fuse_unary_ops(desc, |input, out| {
                FuseOp::Recip(UnaryFuseArgs { input, out })
            }),
            FloatOperationIr::Dequantize(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let qinput = build.input_quantized(&desc.input)?;
                    let out = build.output(&desc.out)?;

                    match qinput {
                        QuantInput::AlreadyDequantized { local } => {
                            build.fuse_operation(FuseOp::Assign(UnaryFuseArgs {
                                input: local,
                                out,
                            }));
                        }
                        QuantInput::Quantized { values, params } => {
                            build.fuse_operation(FuseOp::Dequantize {
                                values,
                                params,
                                output: out,
                                scheme: match desc.input.dtype {
                                    DType::QFloat(scheme) => QuantSchemeFuse { scheme },
                                    _ => unreachable!("Should be a quant tensor."),
                                },
                            });
                        }
                    }

                    Some(())
                })
            }
            _ => false,
        }
    }

    fn fuse_int(&mut self, ops: &IntOperationIr) -> bool {
        match ops {
            IntOperationIr::IntoFloat(desc) => {
                self.fuse_unary_op(&desc.input, &desc.out, |input, out| {
                    FuseOp::Assign(UnaryFuseArgs { input, out })
                })
            }
            IntOperationIr::BitwiseAnd(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::BitwiseAnd(BinaryFuseArgs { lhs, rhs, out })
            }),
            IntOperationIr::BitwiseAndScalar(desc) => self
                .fuse_scalar_ops(desc, |lhs, rhs, out| {
                    FuseOp::BitwiseAnd(BinaryFuseArgs { lhs, rhs, out })
                }),
            IntOperationIr::BitwiseOr(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::BitwiseOr(BinaryFuseArgs { lhs, rhs, out })
            }),
            IntOperationIr::BitwiseOrScalar(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::BitwiseOr(BinaryFuseArgs { lhs, rhs, out })
            }),
            IntOperationIr::BitwiseXor(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::BitwiseXor(BinaryFuseArgs { lhs, rhs, out })
            }),
            IntOperationIr::BitwiseXorScalar(desc) => self
                .fuse_scalar_ops(desc, |lhs, rhs, out| {
                    FuseOp::BitwiseXor(BinaryFuseArgs { lhs, rhs, out })
                }),
            IntOperationIr::BitwiseNot(desc) => self.fuse_unary_ops(desc, |input, out| {
                FuseOp::BitwiseNot(UnaryFuseArgs { input, out })
            }),
            IntOperationIr::BitwiseLeftShift(desc) => self
                .fuse_binary_ops(desc, |lhs, rhs, out| {
                    FuseOp::BitwiseLeftShift(BinaryFuseArgs { lhs, rhs, out })
                }),
            IntOperationIr::BitwiseLeftShiftScalar(desc) => self
                .fuse_scalar_ops(desc, |lhs, rhs, out| {
                    FuseOp::BitwiseLeftShift(BinaryFuseArgs { lhs, rhs, out })
                }),
            IntOperationIr::BitwiseRightShift(desc) => self
                .fuse_binary_ops(desc, |lhs, rhs, out| {
                    FuseOp::BitwiseRightShift(BinaryFuseArgs { lhs, rhs, out })
                }),
            IntOperationIr::BitwiseRightShiftScalar(desc) => self
                .fuse_scalar_ops(desc, |lhs, rhs, out| {
                    FuseOp::BitwiseRightShift(BinaryFuseArgs { lhs, rhs, out })
                }),
            _ => false,
        }
    }

    fn fuse_numeric(&mut self, op: &NumericOperationIr) -> bool {
        match op {
            NumericOperationIr::Add(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Add(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::AddScalar(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Add(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::Sub(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Sub(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::SubScalar(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Sub(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::Mul(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Mul(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::MulScalar(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Mul(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::Div(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Div(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::DivScalar(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Div(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::Abs(desc) => {
                self.fuse_unary_ops(desc, |input, out| FuseOp::Abs(UnaryFuseArgs { input, out }))
            }
            NumericOperationIr::Lower(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Lower(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::LowerElem(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Lower(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::Greater(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Greater(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::GreaterElem(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Greater(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::LowerEqual(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::LowerEqual(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::LowerEqualElem(desc) => self
                .fuse_scalar_ops(desc, |lhs, rhs, out| {
                    FuseOp::LowerEqual(BinaryFuseArgs { lhs, rhs, out })
                }),
            NumericOperationIr::GreaterEqual(desc) => self
                .fuse_binary_ops(desc, |lhs, rhs, out| {
                    FuseOp::GreaterEqual(BinaryFuseArgs { lhs, rhs, out })
                }),
            NumericOperationIr::GreaterEqualElem(desc) => self
                .fuse_scalar_ops(desc, |lhs, rhs, out| {
                    FuseOp::GreaterEqual(BinaryFuseArgs { lhs, rhs, out })
                }),
            NumericOperationIr::Full(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let input = build.scalar(&desc.value, desc.out.dtype);
                    let out = build.output(&desc.out)?;

                    build.fuse_operation(FuseOp::Assign(UnaryFuseArgs { input, out }));

                    Some(())
                })
            }
            NumericOperationIr::Rem(desc) => self.fuse_binary_ops(desc, |lhs, rhs, out| {
                FuseOp::Rem(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::RemScalar(desc) => self.fuse_scalar_ops(desc, |lhs, rhs, out| {
                FuseOp::Rem(BinaryFuseArgs { lhs, rhs, out })
            }),
            NumericOperationIr::Clamp(desc) => {
                if !self.output_is_compatible(&desc.out) {
                    return false;
                }

                self.fuser.fuse(|build| {
                    let input = build.input(&desc.tensor)?;
                    let min = build.scalar(&desc.min, desc.out.dtype);
                    let max = build.scalar(&desc.max, desc.out.dtype);
                    let out = build.output(&desc.out)?;

                    build.fuse_operation(FuseOp::Clamp {
                        input,
                        min,
                        max,
                        out,
                    });

                    Some(())
                })
            }
            _ => false,
        }
    }

    fn fuse_binary_ops<Func>(&mut self, desc: &BinaryOpIr, func: Func) -> bool
    where
        Func: Fn(FuseArg, FuseArg, FuseArg) -> FuseOp,
    {
        if !self.output_is_compatible(&desc.out) {
            return false;
        }

        self.fuser.fuse(|build| {
            let lhs = build.input(&desc.lhs)?;
            let rhs = build.input(&desc.rhs)?;
            let out = build.output(&desc.out)?;

            build.fuse_operation(func(lhs, rhs, out));

            Some(())
        })
    }

    fn fuse_unary_ops<Func>(&mut self, desc: &UnaryOpIr, func: Func) -> bool
    where
        Func: Fn(FuseArg, FuseArg) -> FuseOp,
    {
        self.fuse_unary_op(&desc.input, &desc.out, func)
    }

    fn fuse_unary_op<Func>(&mut self, input: &TensorIr, out: &TensorIr, func: Func) -> bool
    where
        Func: Fn(FuseArg, FuseArg) -> FuseOp,
    {
        if !self.output_is_compatible(out) {
            return false;
        }

        self.fuser.fuse(|build| {
            let input = build.input(input)?;
            let out = build.output(out)?;
            build.fuse_operation(func(input, out));
            Some(())
        })
    }

    fn fuse_scalar_ops<Func>(&mut self, desc: &ScalarOpIr, func: Func) -> bool
    where
        Func: Fn(FuseArg, FuseArg, FuseArg) -> FuseOp,
    {
        if !self.output_is_compatible(&desc.out) {
            return false;
        }

        self.fuser.fuse(|build| {
            let elem = desc.lhs.dtype;
            let lhs = build.input(&desc.lhs)?;
            let rhs = build.scalar(&desc.rhs, elem);
            let out = build.output(&desc.out)?;

            build.fuse_operation(func(lhs, rhs, out));

            Some(())
        })
    }

    /// Whether `out` can be the reference of the current block, and fix it if so.
    ///
    /// An operation that computes the coordinates it reads from the reference layout, such as
    /// `cat` and `select`, is only correct when its output is the reference: a smaller output
    /// would be indexed as if it had the reference's shape. The reference then stays fixed, so
    /// no later operation can make the output a broadcast of a wider one.
    fn output_is_reference(&mut self, out: &TensorIr) -> bool {
        if !self.output_is_compatible(out) || self.current_output_shape != out.shape {
            return false;
        }
        self.reference_fixed = true;

        true
    }

    fn output_is_compatible(&mut self, out: &TensorIr) -> bool {
        if self.current_output_shape.is_empty() {
            self.current_output_shape.clone_from(&out.shape);
            return true;
        }

        let rank = self.current_output_shape.len();

        // Rank should be equal.
        if rank != out.shape.num_dims() {
            return false;
        }

        let mut updated = self.current_output_shape.clone();
        let mut should_update = false;

        #[allow(clippy::needless_range_loop)]
        for i in 0..rank {
            let curr = self.current_output_shape[i];
            let new = out.shape[i];

            if curr == new {
                continue;
            }

            // Broadcast not enabled.
            if !self.settings.broadcast {
                return false;
            }

            // Broadcasted on new dim.
            if new == 0 {
                continue;
            }

            // Broadcasted on curr dim - update reference output shape.
            if curr == 0 && self.settings.output_shape_updates {
                should_update = true;
                updated[i] = new;
                continue;
            }

            return false;
        }

        if should_update {
            // An indexed operation computes its coordinates from the reference layout, so the
            // reference can't grow past its output.
            if self.reference_fixed {
                return false;
            }

            // For now forced to have exact shape.
            if updated != out.shape {
                return false;
            }

            self.current_output_shape.clone_from_slice(&out.shape);
        }

        true
    }

    /// Register an output relayout to NHWC.
    ///
    /// This will apply the NHWC relayout to the given [tensor](TensorIr).
    ///
    /// The relayout will be applied when the tensor is written to global memory.
    pub fn output_nhwc_layout(&mut self, tensor: &TensorIr, stride_relayout: Shape) {
        self.fuser.fuser.output_nhwc_layout(tensor, stride_relayout);
    }
}

#[derive(Debug, Clone)]
/// Builder wrapper to limit the number of bindings in generated kernels.
pub(crate) struct TryTraceFuser {
    pub(crate) fuser: TraceFuser,
    max_bindings: u32,
    max_ops: u32,
    added_ops: bool,
}

impl TryTraceFuser {
    fn new(max_bindings: u32, settings: FuseSettings) -> Self {
        Self {
            fuser: TraceFuser::new(settings),
            max_bindings,
            // A good default, avoid errors with for loops over only memory
            // bound operations.
            max_ops: 64,
            added_ops: false,
        }
    }

    fn fuse(&mut self, add_ops: impl FnOnce(&mut TraceFuser) -> Option<()>) -> bool {
        if self.fuser.num_ops_fused() > self.max_ops {
            return false;
        }

        // Optimization to avoid cloning the fuser when adding the first operation
        if !self.added_ops {
            self.added_ops = true;

            if add_ops(&mut self.fuser).is_none() {
                return false;
            }
            return self.fuser.estimate_bindings() <= self.max_bindings;
        }

        let mut cloned = self.fuser.clone();
        if add_ops(&mut cloned).is_none() {
            return false;
        }

        if cloned.estimate_bindings() > self.max_bindings {
            return false;
        }

        self.fuser = cloned;
        true
    }

    fn finish(&mut self, shape: Shape) -> FuseTrace {
        self.fuser.finish(shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn_ir::{TensorId, TensorStatus};

    const MAX_BINDINGS: u32 = 8;
    /// `estimate_bindings` counts one binding per input, one for output
    /// and one for metadata. So a `cat` for `n` inputs is estimated as needing
    /// `n + 2` bindings.
    const CAT_OVERHEAD: usize = 2;
    const MAX_CAT_INPUTS: usize = MAX_BINDINGS as usize - CAT_OVERHEAD;

    /// A single op can exceed `max_bindings` on its own (here a `cat` with many inputs), so the
    /// binding check must also apply to the first op of a kernel.
    /// Regression test for https://github.com/tracel-ai/burn/issues/6049.
    #[test]
    fn cat_exceeding_max_bindings_is_not_fused() {
        let num_inputs = MAX_CAT_INPUTS + 1;
        let mut fuser = TraceOperationFuser::new(MAX_BINDINGS, FuseSettings::default());
        fuse_n_inputs_with_cat(num_inputs, &mut fuser);
        assert_eq!(
            fuser.len(),
            0,
            "a cat of {num_inputs} inputs (estimated {} bindings) should be rejected with max_bindings = {MAX_BINDINGS}",
            num_inputs + CAT_OVERHEAD
        );
    }

    /// Control for `cat_exceeding_max_bindings_is_not_fused`: The same `cat` fuses
    /// when it fits. A rejection comes from the binding check, not from the op itself
    #[test]
    fn cat_within_max_bindings_is_fused() {
        let num_inputs = MAX_CAT_INPUTS - 1;
        let mut fuser = TraceOperationFuser::new(MAX_BINDINGS, FuseSettings::default());
        fuse_n_inputs_with_cat(num_inputs, &mut fuser);
        assert_eq!(
            fuser.len(),
            1,
            "a cat of {num_inputs} inputs (estimated {} bindings) should be accepted with max_bindings = {MAX_BINDINGS}",
            num_inputs + CAT_OVERHEAD
        );
    }

    /// Control for `cat_exceeding_max_bindings_is_not_fused`: The same `cat` fuses
    /// when it fits. A rejection comes from the binding check, not from the op itself
    #[test]
    fn cat_at_max_bindings_is_fused() {
        let num_inputs = MAX_CAT_INPUTS;
        let mut fuser = TraceOperationFuser::new(MAX_BINDINGS, FuseSettings::default());
        fuse_n_inputs_with_cat(num_inputs, &mut fuser);
        assert_eq!(
            fuser.len(),
            1,
            "a cat of {num_inputs} inputs (estimated {} bindings) should be accepted with max_bindings = {MAX_BINDINGS}",
            num_inputs + CAT_OVERHEAD
        );
    }

    fn fuse_n_inputs_with_cat(n: usize, fuser: &mut TraceOperationFuser) {
        let inputs: Vec<TensorIr> = (0..n as u64)
            .map(|i| tensor(i, &[1], TensorStatus::ReadOnly))
            .collect();
        let output = tensor(n as u64, &[n], TensorStatus::NotInit);

        let op = OperationIr::BaseFloat(BaseOperationIr::Cat(burn_ir::CatOpIr {
            tensors: inputs,
            dim: 0,
            out: output,
        }));
        fuser.fuse(&op);
    }

    fn tensor(id: u64, shape: &[usize], status: TensorStatus) -> TensorIr {
        TensorIr {
            id: TensorId::new(id),
            shape: Shape::from(shape),
            status,
            dtype: DType::F32,
        }
    }
}
