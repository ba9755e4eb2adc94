"""tvm.relax.backend.cuda: the CUDA libraries' dispatch patterns. minitvm compiles for the
host CPU only; the patterns register (so partitioning can be inspected), and running them
needs the library's codegen (``relax.ext.<name>``), which minitvm does not ship."""
