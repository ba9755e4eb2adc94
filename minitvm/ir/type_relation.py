"""``tvm.ir.type_relation``: type-level calls and relations (``TypeCall``, ``TypeRelation``)."""

from .type import TypeCall, TypeConstraint, TypeRelation

__all__ = ["TypeCall", "TypeConstraint", "TypeRelation"]
