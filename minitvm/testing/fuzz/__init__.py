"""Random-program differential testing, parser and library-file fuzzing (issue 15).

``generator``: seeded random well-typed Relay programs; ``strategies``: the same as hypothesis
strategies; ``differential``: the checks every registered pass must pass on them;
``parser_fuzz`` and ``library_fuzz``: "clear error or correct result" fuzzers. The Relax side:
``relax_generator`` (+ ``relax_strategies``), ``relax_reference`` (the numpy oracle),
``relax_differential`` (every Relax pass, the build pipeline, relax.build + VM at two symbolic
sizes, or at a schedule of sizes: ``check_relax_sizes``), ``relax_parser_fuzz``,
``relax_library_fuzz`` and ``relax_executor_fuzz``. Dynamic shapes on the Relay VM:
``dynamic_generator`` (programs with ``Any`` dimensions, while loops, ``vm.update_row``,
shape-valued inputs) and ``dynamic_differential`` (one ``relay.vm.compile``, a schedule of batch
sizes, against the interpreter; ``saved=True``: the executable saved, exported and loaded back,
as ``check_relax_sizes(saved=True)``). ``relax_loop_generator``: Relax programs with recursive
loops (``vm.builtin.update_row``, recurrences), closures and passes before the build, checked
against their own numpy reference. ``boundaries``: differences a computed value near a jump of
the program explains (a sort key's near tie, a cast near an integer) are "boundary-dependent".
``build_matrix``: Relay programs through the graph executor and the VM under a random opt_level
and ``disabled_pass`` set; ``relax_pass_sequences``: Relax programs through random sequences of
high-level passes before relax.build; ``cast_generator``: chains of float16 / int8 / uint8 /
bool casts fed values at the casts' jumps, compared exactly, in both dialects;
``qnn_generator``: quantized Relay programs (quantize / requantize / conv2d / dense / add, int8
and uint8) against a numpy oracle of the quantization rules, compared exactly;
``relax_symbolic_generator``: Relax programs over two symbolic dimensions, one relax.build run
at three (n, m) pairs. ``onnx_generator`` (random ONNX graphs: elementwise, broadcasting,
reductions, data movement, MatMul / Gemm / Conv / pools, float16 / int8 / uint8 / bool) and
``onnx_differential`` (both importers at opt_level 0 and 3 against ONNX Runtime; needs the
optional onnx and onnxruntime). ``damage``: valid artefacts damaged on purpose, run in worker
processes (a segfault or hang is a finding), each refusal checked for a clear error naming the
place: ``damage_inputs`` (run-time inputs of the executors and ``minitvm run``),
``damage_onnx`` (broken ONNX models), ``damage_text`` (token edits of Relay text and
TVMScript), ``damage_ir`` (ill-typed op calls in both dialects).
"""

from .generator import GeneratedProgram, ProgramGenerator, generate_program, random_array

__all__ = ["GeneratedProgram", "ProgramGenerator", "generate_program", "random_array"]
