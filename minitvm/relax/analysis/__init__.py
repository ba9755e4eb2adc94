"""tvm.relax.analysis: struct-info relations and checks over Relax programs."""
