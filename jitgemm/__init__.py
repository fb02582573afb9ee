"""jitgemm: a JIT compiler for AMD GPUs driven by AMD's machine-readable ISA specification."""

from __future__ import annotations

__version__ = "0.1.0"


_CHECKOUT_FOLDERS = ("isa", "codegen", "util", "specs")


def _source_checkout_layout() -> None:
    """In a source checkout the folders isa/, codegen/, util/ and specs/ sit beside jitgemm/ (the wheel installs
    them inside it, see pyproject.toml). Find them as jitgemm.isa, jitgemm.codegen, jitgemm.util and jitgemm.specs from
    *this* checkout, so that a second work tree, or a tree that is not installed, never mixes its jitgemm/
    with another tree's isa/. Only those four names are mapped (a finder ahead of the others), not the whole
    checkout: `help(jitgemm)` and `pkgutil` never see the checkout's tests/, setup.py or bench/ as parts of
    the package. An installed wheel has no pyproject.toml beside the package and is untouched. (A plain class
    with `find_spec` is a meta path finder; importlib.abc is not imported for it: every `import jitgemm` runs this.)"""
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if not ((root / "pyproject.toml").is_file() and (root / "isa" / "asm" / "grammar.lark").is_file()):
        return

    class CheckoutFolders:
        def find_spec(self, fullname, path=None, target=None):
            head, _, name = fullname.partition(".")
            if head != "jitgemm" or name not in _CHECKOUT_FOLDERS:
                return None
            folder = root / name
            return importlib.util.spec_from_file_location(fullname, folder / "__init__.py",
                                                          submodule_search_locations=[str(folder)])

    sys.meta_path.insert(0, CheckoutFolders())


_source_checkout_layout()

# Everything loads on first use: `jitgemm.isa` (the spec layer) must stay importable without the compiler,
# and `matmul` and friends import numpy.
_LAZY = {"GemmConfig": "codegen.gemm_ir", "GemmProblem": "codegen.gemm_ir", "Kernel": "kernel",
         "compile": "problem_compile", "matmul": "api", "last_launch": "api", "LaunchRecord": "api",
         "MatmulError": "api", "emulate": "emu", "explain": "selector", "use_prebuilt": "selector",
         "use_triton": "selector", "quantize_mx": "mx", "MXTensor": "mx", "scaled_matmul": "api",
         "use_aiter": "aiter", "grouped_matmul": "grouped"}


def __getattr__(name: str):
    """Load public names on first use (see `_LAZY`)."""
    if name in _LAZY:
        import sys

        module = sys.modules.get(f"jitgemm.{_LAZY[name]}")    # import_module costs ~10 us a call
        if module is None:
            import importlib

            module = importlib.import_module(f"jitgemm.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'jitgemm' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (the lazy names included), so tab completion and `dir(jitgemm)` find `matmul` and friends."""
    return sorted(set(__all__) | {"__version__", *_CHECKOUT_FOLDERS})


__all__ = ["GemmConfig", "GemmProblem", "Kernel", "LaunchRecord", "MXTensor", "MatmulError", "compile", "emulate",
           "explain", "grouped_matmul", "last_launch", "matmul", "quantize_mx", "scaled_matmul", "use_aiter",
           "use_prebuilt", "use_triton"]
