"""The compiled package ``pipeline/_native/`` (one extension module per ``*.pyx``), built by ``pip install``, and the
presets and models a wheel carries.

Everything else is declared in pyproject.toml. This file stays for what a declaration cannot say:

- the modules compile against the libxml2 headers that lxml ships (``lxml.get_include()``, known only once lxml is
  installed in the build environment), and they carry the package's one ``VERSION``, read here from
  ``pipeline/_native/__init__.py`` into ``version.pxi`` (rewritten only when it changes, so that a new version
  rebuilds them). No module is optional: where one cannot be compiled the install fails (``pipeline._native`` has
  no other implementation);
- conf/ and lm_models/ stay at the top of the source tree; a wheel (and an sdist) also carries conf/*.yaml and the
  KenLM binaries lm_models/*/*.bin, built into the package as pipeline/shipped/, where an installed warcplex finds
  them (pipeline.config.PROJECT_ROOT). An editable install reads them from the checkout instead.
"""

import re
from pathlib import Path

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist


def shipped_files() -> list[str]:
    """The presets, the model registry and the models it names, as paths relative to the source tree."""
    root = Path(__file__).resolve().parent
    return [p.relative_to(root).as_posix()
            for p in sorted(root.glob("conf/*.yaml")) + sorted(root.glob("lm_models/*/*.bin"))]


class BuildPyWithShippedFiles(build_py):
    """build_py, plus :func:`shipped_files` copied into the built package as pipeline/shipped/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads conf/ and lm_models/ from the checkout
        for name in shipped_files():
            target = Path(self.build_lib) / "pipeline" / "shipped" / name
            self.mkpath(str(target.parent))
            self.copy_file(name, str(target), preserve_mode=False)


class SdistWithShippedFiles(sdist):
    """sdist, plus :func:`shipped_files` (a wheel built from the sdist carries them too) and the Cython sources
    (a build from the sdist compiles them)."""

    def make_release_tree(self, base_dir, files) -> None:
        root = Path(__file__).resolve().parent
        cython = [p.relative_to(root).as_posix()
                  for pattern in ("*.pyx", "*.pxd") for p in root.glob(f"pipeline/**/{pattern}")]
        super().make_release_tree(base_dir, sorted({*files, *shipped_files(), *cython}))


NATIVE = Path("pipeline") / "_native"


def version_include() -> None:
    """``version.pxi`` from the facade's VERSION (the one place it is written)."""
    version = re.search(r"^VERSION = (\d+)$", (NATIVE / "__init__.py").read_text(encoding="utf-8"), re.M).group(1)
    include = NATIVE / "version.pxi"
    text = f"# Written by setup.py from VERSION in __init__.py: do not edit.\nVERSION = {version}\n"
    if not include.exists() or include.read_text(encoding="utf-8") != text:
        include.write_text(text, encoding="utf-8")


version_include()
setup(ext_modules=cythonize([Extension(f"pipeline._native.{source.stem}", [str(source)],
                                       include_dirs=lxml.get_include(), extra_compile_args=["-O2"])
                             for source in sorted(NATIVE.glob("*.pyx"))],
                            compiler_directives={"language_level": "3"}),
      cmdclass={"build_py": BuildPyWithShippedFiles, "sdist": SdistWithShippedFiles})
