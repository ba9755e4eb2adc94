"""tvm.relay.transform: Relay passes (one module per pass) and the function-pass API."""
from ...transform import (  # noqa: F401  the pass API, re-exported as TVM's relay.transform
    ModulePass, Pass, PassContext, PassInfo, PrintIR, Sequential, module_pass,
)
from .function_pass import FunctionPass, build_config, function_pass  # noqa: F401
from .infer_type import InferType, InferTypeLocal
from .to_a_normal_form import ToANormalForm, ToANormalFormExpr  # noqa: E402,F401
from .to_basic_block_normal_form import ToBasicBlockNormalForm  # noqa: E402,F401
from .to_graph_normal_form import ToGraphNormalForm  # noqa: E402,F401
from .dead_code_elimination import DeadCodeElimination  # noqa: E402,F401
from .remove_unused_functions import RemoveUnusedFunctions  # noqa: E402,F401
from .inline import Inline  # noqa: E402,F401
from .eta_expand import EtaExpand  # noqa: E402,F401
from .lambda_lift import LambdaLift  # noqa: E402,F401
from .fold_constant import FoldConstant, FoldConstantExpr  # noqa: E402,F401
from .eliminate_common_subexpr import EliminateCommonSubexpr  # noqa: E402,F401
from .fuse_ops import FuseOps  # noqa: E402,F401
from .defuse_ops import DefuseOps  # noqa: E402,F401
from .alter_op_layout import AlterOpLayout  # noqa: E402,F401
from .convert_layout import ConvertLayout, LayoutConfig  # noqa: E402,F401
from .fold_scale_axis import BackwardFoldScaleAxis, FoldScaleAxis, ForwardFoldScaleAxis  # noqa: E402,F401
from .split_args import SplitArgs  # noqa: E402,F401
from .plan_devices import PlanDevices  # noqa: E402,F401
from .label_ops import LabelOps  # noqa: E402,F401
from .pipeline import optimize, post_pipeline_passes, relay_build_pipeline  # noqa: E402,F401
from .combine_parallel_conv2d import CombineParallelConv2D  # noqa: E402,F401
from .combine_parallel_dense import CombineParallelDense  # noqa: E402,F401
from .combine_parallel_batch_matmul import CombineParallelBatchMatmul  # noqa: E402,F401
from .simplify_inference import SimplifyInference  # noqa: E402,F401
from .canonicalize_ops import CanonicalizeOps  # noqa: E402,F401
from .canonicalize_cast import CanonicalizeCast  # noqa: E402,F401
from .fast_math import FastMath  # noqa: E402,F401
from .legalize import Legalize  # noqa: E402,F401
from .simplify_expr import SimplifyExpr, SimplifyExprPostAlterOp  # noqa: E402,F401
from .change_batch import ChangeBatch  # noqa: E402,F401
from .simplify_fc_transpose import DenseToSparse, SimplifyFCTranspose  # noqa: E402,F401
from .qnn_legalize import QnnCanonicalize, QnnLegalize  # noqa: E402,F401
from .flatten_atrous_conv import FlattenAtrousConv  # noqa: E402,F401
from .merge_composite import MergeComposite  # noqa: E402,F401
from .annotate_target import AnnotateTarget  # noqa: E402,F401
from .merge_compiler_regions import MergeCompilerRegions  # noqa: E402,F401
from .partition_graph import PartitionGraph  # noqa: E402,F401
from .rewrite_annotated_ops import RewriteAnnotatedOps  # noqa: E402,F401
from .gradient import gradient  # noqa: E402,F401
from .to_cps import ToCPS, to_cps, un_cps  # noqa: E402,F401
from .partial_evaluate import PartialEvaluate  # noqa: E402,F401
from .div_to_mul import DivToMul  # noqa: E402,F401
from .fuse_attention import FuseAttention  # noqa: E402,F401
from .split_conv_pool import SplitConvPool  # noqa: E402,F401
from .fuse_conv_pool import FuseConvPool  # noqa: E402,F401
from .convert_nhwc_convs import ConvertNHWCConvs  # noqa: E402,F401
from .convert_blocked_ops import ConvertBlockedOps  # noqa: E402,F401
from .fold_explicit_padding import FoldExplicitPadding  # noqa: E402,F401
from .dynamic_to_static import DynamicToStatic  # noqa: E402,F401
from .to_mixed_precision import ToMixedPrecision  # noqa: E402,F401
from .defunctionalization import Defunctionalization  # noqa: E402,F401
from .lazy_gradient_init import LazyGradientInit  # noqa: E402,F401
from .fake_quantization_to_integer import FakeQuantizationToInteger  # noqa: E402,F401
from .annotate_spans import AnnotateSpans  # noqa: E402,F401
from .mark_compiler_functions_as_extern import MarkCompilerFunctionsAsExtern  # noqa: E402,F401
from .outline_compiler_functions import OutlineCompilerFunctionsWithExistingGlobalSymbols  # noqa: E402,F401,E501
from .inline_compiler_functions_bound_to import InlineCompilerFunctionsBoundTo  # noqa: E402,F401
from .recast import recast  # noqa: E402,F401
from . import mixed_precision  # noqa: E402,F401  TVM's default op rules
from .combine_parallel_op_batch import CombineParallelOpBatch  # noqa: E402,F401
from .first_order_gradient import FirstOrderGradient  # noqa: E402,F401
from .capture_post_dfs_index_in_spans import CapturePostDfsIndexInSpans  # noqa: E402,F401
from .annotate_used_memory import AnnotateUsedMemory  # noqa: E402,F401
from .remove_standalone_reshapes import RemoveStandaloneReshapes  # noqa: E402,F401
from .conv2d_to_sparse import Conv2dToSparse, Conv2dToSparse2  # noqa: E402,F401
from .manifest_lifetimes import ManifestLifetimes  # noqa: E402,F401
from .batching_ops import BatchingOps  # noqa: E402,F401
from .sink_unit_squeeze import SinkUnitSqueeze  # noqa: E402,F401
from .dense_of_transpose import DenseOfTransposeToMatmul  # noqa: E402,F401

from ...transform.registry import register_factory_names as _register_factory_names  # noqa: E402

_register_factory_names(dict(globals()))
