"""The compiled block stage (warcplex/steps/blocks/_native.pyx), built by `pip install` with the system C compiler.

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be compiled
the install goes on without it, and warcplex.steps.blocks.native falls back to the pure-Python
reference, counted as stage.blocks.pure_python.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(ext_modules=cythonize([Extension("warcplex.steps.blocks._native", ["warcplex/steps/blocks/_native.pyx"],
                                       extra_compile_args=["-O2"], optional=True)],
                            compiler_directives={"language_level": "3"}))
