"""tvm.relax.op.image: image operators (resize2d)."""

from .resize import Resize2DAttrs, resize2d  # noqa: F401
