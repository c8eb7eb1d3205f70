"""Fixtures for the llvm target's tests.

``llvm_target`` (from ``tensorforge.testing``, available in every test): registers the llvm
plugin in the test's hermetic registry and returns ``Target.parse("llvm")`` for this machine,
so ``tensorforge.build(..., target=llvm_target)`` and ``target="llvm"`` both work inside the
test. ``plugins`` registers other plugins the same way.
"""
