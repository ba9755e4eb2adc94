"""tvm.relax.transform: Relax passes (one module per pass) and the function / dataflow-block
pass API, on the shared pass infrastructure (``minitvm.transform``).

Every pass is registered under its ``info.name`` (TVM's name: ``get_pass("Normalize")``),
except the four whose name Relay's pass already holds in the registry (DeadCodeElimination,
EliminateCommonSubexpr, FoldConstant, LambdaLift), registered as ``relax.transform.<Name>``
(``get_pass("relax.transform.FoldConstant")``); textual pipelines print and parse those keys.
"""

from ...transform import (  # noqa: F401  the pass API, re-exported as TVM's relax.transform
    ModulePass, Pass, PassContext, PassInfo, PrintIR, Sequential, module_pass,
)
from . import properties  # noqa: F401  (registers the Relax IR properties first)
from .function_pass import (  # noqa: F401
    DataflowBlockPass, FunctionPass, dataflowblock_pass, function_pass,
)
from .normalize import Normalize  # noqa: F401
from .to_non_dataflow import ToNonDataflow  # noqa: F401
from .canonicalize_bindings import (  # noqa: F401
    CanonicalizeBindings, CanonicalizeRelaxBindings, CanonicalizeTIRVariables,
)
from .convert_to_dataflow import ConvertToDataflow  # noqa: F401
from .dead_code_elimination import DeadCodeElimination  # noqa: F401
from .eliminate_common_subexpr import EliminateCommonSubexpr  # noqa: F401
from .fold_constant import FoldConstant  # noqa: F401
from .lambda_lift import LambdaLift  # noqa: F401
from .bind_params import BindParams  # noqa: F401
from .bind_symbolic_vars import BindSymbolicVars  # noqa: F401
from .remove_unused_outputs import RemoveUnusedOutputs  # noqa: F401
from .attach_global_symbol import AttachGlobalSymbol  # noqa: F401
from .call_tir_rewrite import CallTIRRewrite  # noqa: F401
from .rewrite_dataflow_reshape import RewriteDataflowReshape  # noqa: F401
from .static_plan_block_memory import StaticPlanBlockMemory  # noqa: F401
from .lower_alloc_tensor import LowerAllocTensor  # noqa: F401
from .kill_after_last_use import KillAfterLastUse  # noqa: F401
from .vm_builtin_lower import LowerRuntimeBuiltin, VMBuiltinLower  # noqa: F401
from .vm_shape_lower import VMShapeLower  # noqa: F401
from .fuse_ops import FuseOps  # noqa: F401
from .fuse_tir import FuseTIR  # noqa: F401
from .remove_purity_checking import RemovePurityChecking  # noqa: F401
from .remove_stop_fusion import RemoveStopFusion  # noqa: F401
from .fuse_ops_by_pattern import (  # noqa: F401
    FuseOpsByPattern, FusionPattern, PatternCheckContext,
)
from .merge_composite_functions import MergeCompositeFunctions  # noqa: F401
from .legalize_ops import LegalizeOps  # noqa: F401
from .annotate_tir_op_pattern import AnnotateTIROpPattern  # noqa: F401
from .fold_transpose_into_consumer import FoldTransposeIntoConsumer  # noqa: F401
from .sink_unit_squeeze import SinkUnitSqueeze  # noqa: F401
from .fold_conv_scale import FoldConvScale  # noqa: F401
from .split_conv_pool import SplitConvPool  # noqa: F401
from .to_mixed_precision import ToMixedPrecision  # noqa: F401
from .decompose_ops import DecomposeOpsForInference  # noqa: F401
from .run_codegen import RunCodegen  # noqa: F401
