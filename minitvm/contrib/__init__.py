"""tvm.contrib: graph_executor (``tvm.contrib.graph_executor.GraphModule``) and utils
(``tempdir``)."""

from . import graph_executor, utils
from . import cc, download  # noqa: E402,F401
