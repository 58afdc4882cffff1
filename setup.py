"""The compiled block stage (pipeline/steps/blocks/_native.pyx), built by `pip install` with the system C compiler.

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be compiled
the install goes on without it, and pipeline.steps.blocks.native falls back to the pure-Python
reference, counted as stage.blocks.pure_python.
"""

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

# lxml ships the headers of the libxml2 it links; the module calls that libxml2 through lxml's etree module.
setup(ext_modules=cythonize([Extension("pipeline.steps.blocks._native", ["pipeline/steps/blocks/_native.pyx"],
                                       include_dirs=lxml.get_include(), extra_compile_args=["-O2"],
                                       optional=True)],
                            compiler_directives={"language_level": "3"}))
