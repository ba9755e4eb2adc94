"""Dialect-neutral pieces of the model importers (ONNX file handling, recurrent-op unrolling).

Both ``relay.frontend`` and ``relax.frontend`` build on this package; it imports neither
dialect (DESIGN §2), only numpy and, lazily, the optional framework packages."""
