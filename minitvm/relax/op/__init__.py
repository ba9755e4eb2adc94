"""tvm.relax.op: Relax operators, each defined once with its struct-info inference."""
