"""Random-program differential testing, parser and library-file fuzzing (issue 15).

``generator``: seeded random well-typed Relay programs; ``strategies``: the same as hypothesis
strategies; ``differential``: the checks every registered pass must pass on them;
``parser_fuzz`` and ``library_fuzz``: "clear error or correct result" fuzzers.
"""

from .generator import GeneratedProgram, ProgramGenerator, generate_program, random_array

__all__ = ["GeneratedProgram", "ProgramGenerator", "generate_program", "random_array"]
