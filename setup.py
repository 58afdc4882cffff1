"""The compiled block stage (warcplex/steps/blocks/_native.pyx), built by `pip install` with the system C compiler.

Everything else is declared in pyproject.toml. Without a C compiler the package still works:
warcplex.steps.blocks.native falls back to the pure-Python reference and counts it.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(ext_modules=cythonize([Extension("warcplex.steps.blocks._native", ["warcplex/steps/blocks/_native.pyx"],
                                       extra_compile_args=["-O2"])],
                            compiler_directives={"language_level": "3"}))
